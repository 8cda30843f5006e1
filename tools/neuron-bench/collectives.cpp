// SPDX-License-Identifier: MIT
// Collectives in the style of nccl-tests: per size, the time of
// all_reduce, all_gather, reduce_scatter and all_to_all over 4 ranks (2
// simulated devices of 2 cores each, in this process; and over the cores
// of the neuron.ko devices when there are two or more), their algorithm
// and bus bandwidth, next to the device's own DMA copy bandwidth.
#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include <neuron/collectives.hpp>
#include <neuron/neuron.hpp>

#include "bench.hpp"

namespace nbench {

namespace {

std::vector<uint64_t> sizes(const Options &o) {
    if (o.quick)
        return {64u << 10, 1u << 20};
    return {64u << 10, 256u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20};
}

struct Collective {
    std::string_view name;
    /// busbw = algbw * this for n ranks (nccl-tests' PERFORMANCE.md).
    double bus_factor(unsigned n) const { return (name == "all_reduce" ? 2.0 : 1.0) * (n - 1) / n; }
    uint64_t send_bytes(uint64_t s, unsigned n) const { return name == "all_gather" ? s / n : s; }
    uint64_t recv_bytes(uint64_t s, unsigned n) const {
        return name == "reduce_scatter" ? s / n : s;
    }
    /// Elements per rank (all_reduce) or per rank's block (the others).
    uint64_t count(uint64_t s, unsigned n) const {
        return name == "all_reduce" ? s / 4 : s / n / 4;
    }
};

const Collective collectives[] = {
    {"all_reduce"}, {"all_gather"}, {"reduce_scatter"}, {"all_to_all"}};

// Every collective at every size over @p cores cores of each of @p devs,
// into @p t; sizes whose buffers do not fit in a quarter of a device's
// memory per rank are left out.
void measure(const Options &o, const std::vector<neuron::Device> &devs, unsigned cores, Table &t) {
    std::vector<neuron::Rank> ranks;
    for (const auto &d : devs)
        for (unsigned c = 0; c < std::min(cores, d.info().num_cores); c++)
            ranks.push_back({d, c});
    const auto n = static_cast<unsigned>(ranks.size());
    std::vector<uint64_t> all;
    for (uint64_t s : sizes(o))
        if (s % (4 * n) == 0 &&
            s * 4 * std::min(cores, devs[0].info().num_cores) <= devs[0].info().device_memory_size)
            all.push_back(s);
    if (all.empty())
        return;
    const uint64_t largest = all.back();
    neuron::CommunicatorOptions co;
    co.timeout = std::chrono::seconds(600);
    neuron::Communicator comm(ranks, co);
    std::vector<neuron::Buffer> send, recv;
    for (unsigned k = 0; k < n; k++) {
        send.push_back(ranks[k].device.allocate(largest));
        recv.push_back(ranks[k].device.allocate(largest));
        std::vector<float> ones(largest / 4, 1.0f / 1024);
        send[k].write(0, std::as_bytes(std::span(ones)));
    }
    neuron::Buffer ca = devs[0].allocate(largest), cb = devs[0].allocate(largest);

    for (const Collective &c : collectives)
        for (uint64_t s : all) {
            const std::string row = fmt::format("{} {}", c.name, size_label(s));
            const uint64_t count = c.count(s, n);
            auto once = [&] {
                const double t0 = now_s();
                std::vector<neuron::Work> w;
                for (unsigned k = 0; k < n; k++) {
                    auto sr = send[k].range(0, c.send_bytes(s, n));
                    auto rr = recv[k].range(0, c.recv_bytes(s, n));
                    if (c.name == "all_reduce")
                        w.push_back(comm.all_reduce(k, sr, rr, count, neuron::DType::fp32,
                                                    neuron::CollectiveOp::sum));
                    else if (c.name == "all_gather")
                        w.push_back(comm.all_gather(k, sr, rr, count, neuron::DType::fp32));
                    else if (c.name == "reduce_scatter")
                        w.push_back(comm.reduce_scatter(k, sr, rr, count, neuron::DType::fp32,
                                                        neuron::CollectiveOp::sum));
                    else
                        w.push_back(comm.all_to_all(k, sr, rr, count, neuron::DType::fp32));
                }
                for (auto &x : w)
                    x.wait();
                return now_s() - t0;
            };
            Stats time = repeat_runs(o.repeat, once);
            auto scaled = [&](double factor) {
                // Each bandwidth from the same runs' times: min time is max bandwidth.
                Stats b;
                b.median = factor / time.median;
                b.min = factor / time.max;
                b.max = factor / time.min;
                b.runs = time.runs;
                return b;
            };
            Stats us{time.median * 1e6, time.min * 1e6, time.max * 1e6, time.runs};
            t.set(row, "time", us);
            const double gb = static_cast<double>(s) / 1e9;
            t.set(row, "algbw", scaled(gb));
            t.set(row, "busbw", scaled(gb * c.bus_factor(n)));
            t.set(row, "d2d copy", repeat_runs(o.repeat, [&] {
                      const double t0 = now_s();
                      devs[0].copy(cb.range(0, s), ca.range(0, s)).wait();
                      return gb / (now_s() - t0);
                  }));
        }
}

Table &collectives_table(Report &r, const std::string &id, const std::string &title,
                         const std::string &where) {
    Table &t = r.table(id, title, "collective, size");
    t.column("time", "us")
        .column("algbw", "GB/s")
        .column("busbw", "GB/s")
        .column("d2d copy", "GB/s")
        .ratio("busbw/copy", "busbw", "d2d copy");
    t.note("size: the bytes of the largest buffer of a rank (nccl-tests' size); algbw = size / "
           "time; busbw = algbw x 2(n-1)/n for all_reduce, x (n-1)/n for the others; d2d copy: "
           "one DMA copy of that size between two buffers of one device. " +
           where + " Chunks of 1 MiB.");
    return t;
}

} // namespace

void run_collectives(const Options &o, Report &r) {
    constexpr unsigned devices = 2, cores = 2;
    const uint64_t largest = sizes(o).back();
    const std::string opts = fmt::format("sim:devices={},cores={},mem={}M", devices, cores,
                                         std::max<uint64_t>(64, (largest >> 20) * 4 * cores + 64));
    std::vector<neuron::Device> sim;
    for (unsigned d = 0; d < devices; d++)
        sim.push_back(neuron::Device::open(fmt::format("{},device={}", opts, d)));
    Table &t = collectives_table(
        r, "collectives",
        fmt::format("Collectives: {} ranks ({} simulated devices x {} cores), fp32, sum",
                    devices * cores, devices, cores),
        "The ranks are cores of simulated devices of this process (libneuron-sim), whatever -d "
        "names.");
    measure(o, sim, cores, t);
    sim.clear();
    // With two or more neuron.ko devices, the same over their cores (copies
    // between devices host-staged until the driver exports dma-bufs).
    auto found = neuron::enumerate_sysfs();
    if (o.no_device || found.size() < 2)
        return;
    std::vector<neuron::Device> devs;
    for (const auto &e : found)
        devs.push_back(neuron::Device::open(e.node));
    unsigned n = 0;
    for (const auto &d : devs)
        n += std::min(cores, d.info().num_cores);
    Table &k = collectives_table(
        r, "collectives-devices",
        fmt::format("Collectives: {} ranks (up to {} cores of each of the {} neuron.ko devices), "
                    "fp32, sum",
                    n, cores, devs.size()),
        "Copies between devices are staged through host memory (no dma-buf export yet).");
    measure(o, devs, cores, k);
}

} // namespace nbench
