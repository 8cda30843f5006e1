// SPDX-License-Identifier: MIT
// Submission: a no-op job's submit -> fence-signalled latency and the job
// rate at queue depths 1..max, next to a null ioctl (the floor of any
// driver round trip) and the NVMe peer's 4 KiB O_DIRECT reads.
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

unsigned jobs_per_run(const Options &o, unsigned depth) {
    return std::max(o.quick ? 32u : 256u, 4 * depth);
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

/// Jobs per second with @p depth of them in flight.
double job_rate(const neuron::Queue &q, const neuron::LoadedProgram &p, unsigned depth,
                unsigned jobs) {
    const neuron::Arguments none;
    return rate_in_flight(depth, jobs, [&](unsigned) { return q.submit(p, none); });
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

} // namespace

void run_submit(const Options &o, Report &r) {
    Table &lat = r.table("latency", "Round trip at queue depth 1", "operation");
    lat.column("no-op job", "us").column("null ioctl", "us").column("nvme 4 KiB read", "us");
    lat.ratio("job/ioctl", "no-op job", "null ioctl")
        .ratio("job/nvme", "no-op job", "nvme 4 KiB read");
    lat.note("A no-op job: SUBMIT of a one-instruction program, then a wait on its out-syncobj. "
             "The null ioctl is GET_PARAM; the peer's read is pread(O_DIRECT).");
    Table &rate = r.table("rate", "Operations per second with a queue of the given depth", "depth");
    rate.column("no-op jobs", "1/s").column("nvme 4 KiB reads", "1/s");
    rate.ratio("jobs/reads", "no-op jobs", "nvme 4 KiB reads");
    rate.note("Jobs go to one core's queue, the oldest waited for when the queue is full; the "
              "peer keeps the same number of reads in flight through io_uring.");

    const std::string row = "depth 1";
    if (auto dev = open_device(o); !dev) {
        for (const char *c : {"no-op job", "null ioctl"})
            lat.skip(row, c, "no neuron device");
        for (unsigned d : depths(o))
            rate.skip(fmt::format("{}", d), "no-op jobs", "no neuron device");
    } else {
        const auto q = dev->queue(0);
        const auto p = dev->load(noop_program());
        const unsigned jobs = jobs_per_run(o, 1);
        lat.set(row, "no-op job",
                repeat_runs(o.repeat, [&] { return job_latency_us(q, p, jobs); }));
        lat.set(row, "null ioctl",
                repeat_runs(o.repeat, [&] { return null_ioctl_us(dev->fd(), 100 * jobs); }));
        for (unsigned d : depths(o))
            rate.set(fmt::format("{}", d), "no-op jobs",
                     repeat_runs(o.repeat, [&] { return job_rate(q, p, d, jobs_per_run(o, d)); }));
    }

    std::string why;
    auto peer = open_peer(o, why);
    if (!peer) {
        lat.skip(row, "nvme 4 KiB read", why);
        for (unsigned d : depths(o))
            rate.skip(fmt::format("{}", d), "nvme 4 KiB reads", why);
        return;
    }
    const unsigned reads = jobs_per_run(o, 1);
    lat.set(row, "nvme 4 KiB read", repeat_runs(o.repeat, [&] {
                double total = 0;
                for (unsigned i = 0; i < reads; i++)
                    total += peer->read_latency_us();
                return total / reads;
            }));
    const double seconds = o.quick ? 0.1 : 0.5;
    for (unsigned d : depths(o))
        rate.set(fmt::format("{}", d), "nvme 4 KiB reads",
                 repeat_runs(o.repeat, [&] { return peer->iops(d, seconds); }));
}

} // namespace nbench
