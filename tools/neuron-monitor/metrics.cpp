// SPDX-License-Identifier: MIT
// The state as Prometheus metric families and as JSON. Names and units
// follow Prometheus' conventions: base units (seconds, bytes), `_total` on
// counters, one family per quantity with labels for the device, core,
// DMA engine and process.
#include "monitor.hpp"

#include <string>

namespace neuron::tools::monitor {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

namespace {

class Families {
  public:
    /// Starts a family; add() then adds samples to it.
    void begin(const char *name, const char *help, MetricType type) {
        out_.push_back({name, help, type, {}});
    }

    void add(Labels labels, double value) {
        MetricFamily &f = out_.back();
        ClientMetric m;
        m.label = std::move(labels);
        if (f.type == MetricType::Counter)
            m.counter.value = value;
        else
            m.gauge.value = value;
        f.metric.push_back(std::move(m));
    }

    std::vector<MetricFamily> take() { return std::move(out_); }

  private:
    std::vector<MetricFamily> out_;
};

Labels device_labels(unsigned index, const std::string &bdf) {
    return {{"device", std::to_string(index)}, {"pci_address", bdf}};
}

Labels with(Labels l, const char *name, std::string value) {
    l.push_back({name, std::move(value)});
    return l;
}

double seconds(uint64_t ns) {
    return static_cast<double>(ns) / 1e9;
}

struct CoreMetric {
    const char *name;
    const char *help;
    double (*value)(const CoreCounters &);
};

const CoreMetric core_metrics[] = {
    {"neuron_core_busy_seconds_total", "Time the NeuronCore spent running jobs.",
     [](const CoreCounters &c) { return seconds(c.busy_ns); }},
    {"neuron_core_instructions_total", "Instructions the NeuronCore executed.",
     [](const CoreCounters &c) { return static_cast<double>(c.instructions); }},
    {"neuron_core_flops_total", "Floating-point operations the NeuronCore performed.",
     [](const CoreCounters &c) { return static_cast<double>(c.flops); }},
    {"neuron_core_dma_bytes_total", "Bytes the NeuronCore's jobs moved between memories.",
     [](const CoreCounters &c) { return static_cast<double>(c.dma_bytes); }},
    {"neuron_core_jobs_total", "Jobs the NeuronCore completed.",
     [](const CoreCounters &c) { return static_cast<double>(c.jobs); }},
    {"neuron_core_job_faults_total", "Jobs that failed with a fault (a bad access, a bad program).",
     [](const CoreCounters &c) { return static_cast<double>(c.faults); }},
    {"neuron_core_job_timeouts_total", "Jobs the driver stopped after its job timeout.",
     [](const CoreCounters &c) { return static_cast<double>(c.timeouts); }},
    {"neuron_core_resets_total", "Resets of the NeuronCore (its own and the device's).",
     [](const CoreCounters &c) { return static_cast<double>(c.resets); }},
};

struct DmaMetric {
    const char *name;
    const char *help;
    uint64_t DmaCounters::*value;
};

const DmaMetric dma_metrics[] = {
    {"neuron_dma_bytes_total", "Bytes the DMA engine copied.", &DmaCounters::bytes},
    {"neuron_dma_descriptors_total", "Descriptors the DMA engine processed.",
     &DmaCounters::descriptors},
    {"neuron_dma_errors_total", "Copies the DMA engine failed.", &DmaCounters::errors},
};

const char *const device_states[] = {"ready", "resetting", "failed"};

void device_metrics(Families &f, const State &s) {
    const auto &devices = s.snapshot.devices;
    f.begin("neuron_device_info",
            "A device bound to the neuron driver (value 1), with its versions.", MetricType::Gauge);
    for (const Device &d : devices) {
        Labels l = device_labels(d.index, d.bdf);
        l.push_back({"hw_version", d.hw_version.value_or("")});
        l.push_back({"fw_version", d.fw_version.value_or("")});
        l.push_back({"numa_node", d.numa_node ? std::to_string(*d.numa_node) : ""});
        f.add(std::move(l), 1);
    }
    f.begin("neuron_device_up",
            "1 while the device is bound to the driver, 0 after it went away (unbind, removal).",
            MetricType::Gauge);
    for (const auto &[bdf, k] : s.known)
        f.add(device_labels(k.index, bdf), k.present ? 1 : 0);
    f.begin("neuron_device_removals_total", "Times the device went away while the monitor ran.",
            MetricType::Counter);
    for (const auto &[bdf, k] : s.known)
        f.add(device_labels(k.index, bdf), static_cast<double>(k.disappearances));
    f.begin("neuron_device_state",
            "The device's state: 1 for the current one of ready, resetting, failed.",
            MetricType::Gauge);
    for (const Device &d : devices)
        for (const char *state : device_states)
            f.add(with(device_labels(d.index, d.bdf), "state", state), d.state == state ? 1 : 0);

    struct Optional {
        const char *name;
        const char *help;
        std::optional<uint64_t> Device::*value;
        MetricType type;
    };
    const Optional optional[] = {
        {"neuron_device_memory_total_bytes", "Device memory.", &Device::memory_total,
         MetricType::Gauge},
        {"neuron_device_memory_used_bytes", "Device memory allocated to buffers.",
         &Device::memory_used, MetricType::Gauge},
        {"neuron_device_resets_total", "Device and core resets since the driver bound the device.",
         &Device::reset_count, MetricType::Counter},
    };
    for (const Optional &m : optional) {
        f.begin(m.name, m.help, m.type);
        for (const Device &d : devices)
            if (d.*m.value)
                f.add(device_labels(d.index, d.bdf), static_cast<double>(*(d.*m.value)));
    }
    f.begin("neuron_device_host_memory_mapped_bytes",
            "Host buffers pinned and mapped for the device's DMA now.", MetricType::Gauge);
    for (const auto &[bdf, k] : s.known)
        if (k.present && k.host_memory_mapped)
            f.add(device_labels(k.index, bdf), static_cast<double>(*k.host_memory_mapped));
    f.begin("neuron_device_cores", "NeuronCores of the device.", MetricType::Gauge);
    for (const Device &d : devices)
        if (d.cores)
            f.add(device_labels(d.index, d.bdf), *d.cores);

    for (const CoreMetric &m : core_metrics) {
        f.begin(m.name, m.help, MetricType::Counter);
        for (const Device &d : devices)
            for (const CoreCounters &c : d.core)
                f.add(with(device_labels(d.index, d.bdf), "core", std::to_string(c.index)),
                      m.value(c));
    }
    for (const DmaMetric &m : dma_metrics) {
        f.begin(m.name, m.help, MetricType::Counter);
        for (const Device &d : devices)
            for (const DmaCounters &e : d.dma)
                f.add(with(device_labels(d.index, d.bdf), "engine", std::to_string(e.index)),
                      static_cast<double>(e.*m.value));
    }
    if (!s.netlink)
        return; // events are not seen: no count rather than a false zero
    f.begin("neuron_device_events_total",
            "Events the driver sent on its netlink group: reset, hang, error, fatal.",
            MetricType::Counter);
    for (const auto &[bdf, k] : s.known)
        for (const auto &[kind, n] : k.events)
            f.add(with(device_labels(k.index, bdf), "kind", kind), static_cast<double>(n));
}

void process_metrics(Families &f, const State &s) {
    struct Row {
        Labels labels;
        DeviceUsage usage;
    };
    std::vector<Row> rows;
    for (const Process &p : s.snapshot.processes.processes)
        for (const Device &d : s.snapshot.devices) {
            DeviceUsage u = usage_on(p, d.bdf);
            if (!u.clients)
                continue;
            Labels l = device_labels(d.index, d.bdf);
            l.push_back({"pid", std::to_string(p.pid)});
            l.push_back({"command", p.command});
            rows.push_back({std::move(l), std::move(u)});
        }
    f.begin("neuron_process_device_memory_bytes", "Device memory the process holds on the device.",
            MetricType::Gauge);
    for (const Row &r : rows)
        f.add(r.labels, static_cast<double>(r.usage.memory));
    f.begin("neuron_process_host_memory_bytes",
            "Host memory buffers the process holds for the device.", MetricType::Gauge);
    for (const Row &r : rows)
        f.add(r.labels, static_cast<double>(r.usage.host_memory));
    f.begin("neuron_process_core_busy_seconds_total",
            "Time the process's jobs ran on the NeuronCore.", MetricType::Counter);
    for (const Row &r : rows)
        for (const auto &[core, ns] : r.usage.engine_ns)
            f.add(with(r.labels, "core", std::to_string(core)), seconds(ns));
    f.begin("neuron_processes_hidden",
            "Processes whose open files the monitor may not inspect (other users' without "
            "CAP_SYS_PTRACE).",
            MetricType::Gauge);
    f.add({}, s.snapshot.processes.hidden);
}

} // namespace

std::vector<MetricFamily> metric_families(const State &s) {
    Families f;
    f.begin("neuron_driver_loaded", "1 when the neuron kernel module is loaded.",
            MetricType::Gauge);
    f.add({}, s.snapshot.driver.loaded ? 1 : 0);
    f.begin("neuron_driver_info", "The loaded neuron kernel module (value 1) and its version.",
            MetricType::Gauge);
    if (s.snapshot.driver.loaded)
        f.add({{"version", s.snapshot.driver.version.value_or("")}}, 1);
    device_metrics(f, s);
    process_metrics(f, s);
    f.begin("neuron_monitor_samples_total", "Samples the monitor took.", MetricType::Counter);
    f.add({}, static_cast<double>(s.samples));
    f.begin("neuron_monitor_last_sample_timestamp_seconds",
            "When the monitor took the sample being served, seconds since the epoch.",
            MetricType::Gauge);
    f.add({}, static_cast<double>(s.snapshot.wall_s));
    f.begin("neuron_monitor_netlink_connected",
            "1 while the monitor receives the driver's netlink events.", MetricType::Gauge);
    f.add({}, s.netlink ? 1 : 0);
    return f.take();
}

nlohmann::ordered_json sample_json(const State &s) {
    using nlohmann::ordered_json;
    auto nullable = [](const auto &v) { return v ? ordered_json(*v) : ordered_json(nullptr); };
    ordered_json devices = ordered_json::array();
    for (const auto &[bdf, k] : s.known) {
        ordered_json j = {{"neuron_device", k.index},
                          {"bdf", bdf},
                          {"present", k.present},
                          {"removals", k.disappearances}};
        if (s.netlink)
            j["events"] = k.events;
        devices.push_back(std::move(j));
    }
    for (ordered_json &j : devices) {
        auto it = std::find_if(s.snapshot.devices.begin(), s.snapshot.devices.end(),
                               [&](const Device &d) { return d.bdf == j["bdf"]; });
        if (it == s.snapshot.devices.end())
            continue;
        const Device &d = *it;
        ordered_json cores = ordered_json::array();
        for (const CoreCounters &c : d.core)
            cores.push_back({{"core", c.index},
                             {"busy_ns", c.busy_ns},
                             {"instructions", c.instructions},
                             {"flops", c.flops},
                             {"dma_bytes", c.dma_bytes},
                             {"jobs", c.jobs},
                             {"faults", c.faults},
                             {"timeouts", c.timeouts},
                             {"resets", c.resets}});
        ordered_json dma = ordered_json::array();
        for (const DmaCounters &e : d.dma)
            dma.push_back({{"engine", e.index},
                           {"bytes", e.bytes},
                           {"descriptors", e.descriptors},
                           {"errors", e.errors}});
        j["state"] = d.state;
        j["memory_used"] = nullable(d.memory_used);
        j["memory_size"] = nullable(d.memory_total);
        j["host_memory_mapped"] = nullable(s.known.at(d.bdf).host_memory_mapped);
        j["reset_count"] = nullable(d.reset_count);
        j["neuron_cores"] = std::move(cores);
        j["dma_engines"] = std::move(dma);
    }
    ordered_json procs = ordered_json::array();
    for (const Process &p : s.snapshot.processes.processes)
        for (const Device &d : s.snapshot.devices) {
            DeviceUsage u = usage_on(p, d.bdf);
            if (!u.clients)
                continue;
            ordered_json engine = ordered_json::object();
            for (const auto &[core, ns] : u.engine_ns)
                engine[std::to_string(core)] = ns;
            procs.push_back({{"pid", p.pid},
                             {"command", p.command},
                             {"neuron_device", d.index},
                             {"memory_used", u.memory},
                             {"host_memory_used", u.host_memory},
                             {"engine_ns", std::move(engine)}});
        }
    ordered_json events = ordered_json::array();
    for (const top::Event &e : s.events)
        events.push_back({{"time", e.wall_s},
                          {"neuron_device", e.device},
                          {"core", e.core >= 0 ? ordered_json(e.core) : ordered_json(nullptr)},
                          {"kind", e.kind},
                          {"detail", e.detail},
                          {"source", e.source}});
    return {{"sample", s.samples},
            {"time", s.snapshot.wall_s},
            {"driver_loaded", s.snapshot.driver.loaded},
            {"driver_version", nullable(s.snapshot.driver.version)},
            {"event_source", s.event_source},
            {"devices", std::move(devices)},
            {"processes", std::move(procs)},
            {"processes_hidden", s.snapshot.processes.hidden},
            {"events", std::move(events)}};
}

} // namespace neuron::tools::monitor
