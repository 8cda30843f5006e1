// SPDX-License-Identifier: MIT
// Submission: a no-op job's submit -> fence-signalled latency and the job
// rate at queue depths 1..max, next to a null ioctl (the floor of any
// driver round trip) and the NVMe peer's 4 KiB O_DIRECT reads.
#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <stdexcept>
#include <sys/ioctl.h>

#include <drm/neuron_accel.h>
#include <fmt/format.h>

#include <neuron/neuron.hpp>

#include "bench.hpp"
#include "peer.hpp"

namespace nbench {

namespace {

/// Jobs in one run of the round trip.
unsigned latency_jobs(const Options &o) {
    return o.quick ? 32u : 256u;
}

std::vector<unsigned> depths(const Options &o) {
    std::vector<unsigned> d;
    for (unsigned q = 1; q <= o.max_depth; q *= o.quick ? 8 : 2)
        d.push_back(q);
    return d;
}

neuron::Program noop_program() {
    neuron::ProgramBuilder b("noop");
    b.sync().nop();
    return b.finish();
}

/// Mean microseconds of a job submitted and waited for, one at a time.
double job_latency_us(const neuron::Queue &q, const neuron::LoadedProgram &p, unsigned jobs) {
    const neuron::Arguments none;
    const double t0 = now_s();
    for (unsigned i = 0; i < jobs; i++)
        q.submit(p, none).wait();
    return (now_s() - t0) / jobs * 1e6;
}

/// Jobs per second with up to @p depth of them in flight for @p seconds,
/// kept there as the peer keeps its reads (BlockPeer::iops): wait for the
/// oldest, reap every job done since, refill the queue with one batch.
double job_rate(const neuron::Queue &q, const neuron::LoadedProgram &p, unsigned depth,
                double seconds) {
    const neuron::Arguments none;
    std::vector<neuron::Queue::Job> batch;
    std::deque<neuron::Fence> in_flight;
    uint64_t completed = 0;
    const double start = now_s(), deadline = start + seconds;
    double end = start;
    do {
        if (end < deadline) {
            batch.clear();
            while (in_flight.size() + batch.size() < depth)
                batch.push_back({p, none});
            for (auto &f : q.submit(batch))
                in_flight.push_back(std::move(f));
        }
        in_flight.front().wait();
        do {
            in_flight.pop_front();
            completed++;
        } while (!in_flight.empty() && in_flight.front().wait_for(std::chrono::nanoseconds(0)));
        end = now_s();
    } while (!in_flight.empty() || end < deadline);
    return static_cast<double>(completed) / (end - start);
}

/// Mean microseconds of GET_PARAM: the cheapest ioctl of the driver.
double null_ioctl_us(int fd, unsigned calls) {
    drm_neuron_get_param gp{};
    gp.param = DRM_NEURON_PARAM_NUM_CORES;
    const double t0 = now_s();
    for (unsigned i = 0; i < calls; i++)
        if (ioctl(fd, DRM_IOCTL_NEURON_GET_PARAM, &gp) != 0)
            throw std::system_error(errno, std::generic_category(), "GET_PARAM");
    return (now_s() - t0) / calls * 1e6;
}

/// "1.49 1.50 1.53": a figure round by round.
std::string rounds_list(const std::vector<double> &values) {
    std::string out;
    for (double v : values)
        out += fmt::format("{}{:.2f}", out.empty() ? "" : " ", v);
    return out;
}

} // namespace

void run_submit(const Options &o, Report &r) {
    Table &lat = r.table("latency", "Round trip at queue depth 1", "operation");
    lat.column("no-op job", "us").column("null ioctl", "us").column("nvme 4 KiB read", "us");
    lat.ratio("job/ioctl", "no-op job", "null ioctl")
        .ratio("job/nvme", "no-op job", "nvme 4 KiB read")
        .column("job/nvme by round", "x");
    lat.note("A no-op job: SUBMIT of a one-instruction program, then a wait on its out-syncobj. "
             "The null ioctl is GET_PARAM; the peer's read is pread(O_DIRECT). The three are "
             "measured in turn, round by round; 'by round' is the spread of each round's ratio.");
    Table &rate = r.table("rate", "Operations per second with a queue of the given depth", "depth");
    rate.column("no-op jobs", "1/s").column("nvme 4 KiB reads", "1/s");
    rate.ratio("jobs/reads", "no-op jobs", "nvme 4 KiB reads").column("jobs/reads by round", "x");
    rate.note("Jobs go to one core's queue and reads to the peer the same way, for the same "
              "time (0.5 s, --quick 0.1 s): wait for the oldest, reap every one done since, "
              "refill the queue in one call (a SUBMIT_BATCH; io_uring_submit). Jobs and reads "
              "alternate round by round at each depth.");

    auto dev = open_device(o);
    std::string no_peer;
    auto peer = open_peer(o, no_peer);
    const std::string no_device = "no neuron device";
    const bool driver = dev && !neuron::is_sim_spec(dev->path());
    const std::string no_driver = dev ? "the device has no driver (simulator)" : no_device;
    std::optional<neuron::Queue> q;
    std::optional<neuron::LoadedProgram> p;
    if (dev) {
        q.emplace(dev->queue(0));
        p.emplace(dev->load(noop_program()));
    }

    // Each figure next to its peer in the same rounds: the guest CPU's speed
    // drifts between processes and over a run, and a ratio of figures taken
    // minutes apart measures that drift, not the driver.
    const std::string row = "depth 1";
    const unsigned jobs = latency_jobs(o);
    std::vector<Figure> figures;
    if (dev)
        figures.push_back({"no-op job", [&] { return job_latency_us(*q, *p, jobs); }});
    if (driver)
        figures.push_back({"null ioctl", [&] { return null_ioctl_us(dev->fd(), 100 * jobs); }});
    if (peer)
        figures.push_back({"nvme 4 KiB read", [&] {
                               double total = 0;
                               for (unsigned i = 0; i < jobs; i++)
                                   total += peer->read_latency_us();
                               return total / jobs;
                           }});
    const Rounds lat_rounds = interleaved_rounds(o.repeat, figures);
    lat.set(row, "no-op job", lat_rounds, no_device);
    lat.set(row, "null ioctl", lat_rounds, no_driver);
    lat.set(row, "nvme 4 KiB read", lat_rounds, no_peer);
    lat.set_ratio_by_round(row, "job/nvme by round", lat_rounds, "no-op job", "nvme 4 KiB read",
                           dev ? no_peer : no_device);
    if (auto it = lat_rounds.find("null ioctl"); it != lat_rounds.end())
        lat.note(fmt::format("Drift gauge, the null ioctl of each round (us): {}",
                             rounds_list(it->second)));

    const double seconds = o.quick ? 0.1 : 0.5;
    for (unsigned d : depths(o)) {
        const std::string depth = fmt::format("{}", d);
        figures.clear();
        if (dev)
            figures.push_back({"no-op jobs", [&] { return job_rate(*q, *p, d, seconds); }});
        if (peer)
            figures.push_back({"nvme 4 KiB reads", [&] { return peer->iops(d, seconds); }});
        const Rounds rounds = interleaved_rounds(o.repeat, figures);
        rate.set(depth, "no-op jobs", rounds, no_device);
        rate.set(depth, "nvme 4 KiB reads", rounds, no_peer);
        rate.set_ratio_by_round(depth, "jobs/reads by round", rounds, "no-op jobs",
                                "nvme 4 KiB reads", dev ? no_peer : no_device);
    }
}

} // namespace nbench
