// SPDX-License-Identifier: MIT
// Collectives in the style of nccl-tests: per size, the time of
// all_reduce, all_gather, reduce_scatter and all_to_all over 4 ranks (2
// simulated devices of 2 cores each, in this process), their algorithm and
// bus bandwidth, next to the simulated device's own DMA copy bandwidth.
#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include <neuron/collectives.hpp>
#include <neuron/neuron.hpp>

#include "bench.hpp"

namespace nbench {

namespace {

constexpr unsigned devices = 2, cores = 2, nranks = devices * cores;

std::vector<uint64_t> sizes(const Options &o) {
    if (o.quick)
        return {64u << 10, 1u << 20};
    return {64u << 10, 256u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20};
}

struct Collective {
    const char *name;
    double bus_factor; ///< busbw = algbw * this (nccl-tests' PERFORMANCE.md)
    uint64_t send_bytes(uint64_t s) const {
        return std::string_view(name) == "all_gather" ? s / nranks : s;
    }
    uint64_t recv_bytes(uint64_t s) const {
        return std::string_view(name) == "reduce_scatter" ? s / nranks : s;
    }
};

const Collective collectives[] = {
    {"all_reduce", 2.0 * (nranks - 1) / nranks},
    {"all_gather", 1.0 * (nranks - 1) / nranks},
    {"reduce_scatter", 1.0 * (nranks - 1) / nranks},
    {"all_to_all", 1.0 * (nranks - 1) / nranks},
};

} // namespace

void run_collectives(const Options &o, Report &r) {
    Table &t = r.table("collectives",
                       fmt::format("Collectives: {} ranks ({} simulated devices x {} cores), "
                                   "fp32, sum",
                                   nranks, devices, cores),
                       "collective, size");
    t.column("time", "us")
        .column("algbw", "GB/s")
        .column("busbw", "GB/s")
        .column("d2d copy", "GB/s")
        .ratio("busbw/copy", "busbw", "d2d copy");
    t.note("size: the bytes of the largest buffer of a rank (nccl-tests' size); algbw = size / "
           "time; busbw = algbw x 2(n-1)/n for all_reduce, x (n-1)/n for the others; d2d copy: "
           "one DMA copy of that size between two buffers of one simulated device. The ranks "
           "are cores of simulated devices of this process (libneuron-sim), whatever -d "
           "names; chunks of 1 MiB.");
    const auto all = sizes(o);
    const uint64_t largest = all.back();
    const std::string opts = fmt::format("sim:devices={},cores={},mem={}M", devices, cores,
                                         std::max<uint64_t>(64, (largest >> 20) * 4 * cores + 64));
    std::vector<neuron::Device> devs;
    std::vector<neuron::Rank> ranks;
    for (unsigned d = 0; d < devices; d++) {
        devs.push_back(neuron::Device::open(fmt::format("{},device={}", opts, d)));
        for (unsigned c = 0; c < cores; c++)
            ranks.push_back({devs.back(), c});
    }
    neuron::CommunicatorOptions co;
    co.timeout = std::chrono::seconds(600);
    neuron::Communicator comm(ranks, co);
    std::vector<neuron::Buffer> send, recv;
    for (unsigned k = 0; k < nranks; k++) {
        send.push_back(ranks[k].device.allocate(largest));
        recv.push_back(ranks[k].device.allocate(largest));
        std::vector<float> ones(largest / 4, 1.0f / 1024);
        send[k].write(0, std::as_bytes(std::span(ones)));
    }
    neuron::Buffer ca = devs[0].allocate(largest), cb = devs[0].allocate(largest);

    for (const Collective &c : collectives)
        for (uint64_t s : all) {
            const std::string row = fmt::format("{} {}", c.name, size_label(s));
            // Elements per rank (all_reduce) or per rank's block (the others).
            const uint64_t count =
                std::string_view(c.name) == "all_reduce" ? s / 4 : s / nranks / 4;
            auto once = [&] {
                const double t0 = now_s();
                std::vector<neuron::Work> w;
                for (unsigned k = 0; k < nranks; k++) {
                    auto sr = send[k].range(0, c.send_bytes(s));
                    auto rr = recv[k].range(0, c.recv_bytes(s));
                    const std::string_view n = c.name;
                    if (n == "all_reduce")
                        w.push_back(comm.all_reduce(k, sr, rr, count, neuron::DType::fp32,
                                                    neuron::CollectiveOp::sum));
                    else if (n == "all_gather")
                        w.push_back(comm.all_gather(k, sr, rr, count, neuron::DType::fp32));
                    else if (n == "reduce_scatter")
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
            t.set(row, "busbw", scaled(gb * c.bus_factor));
            t.set(row, "d2d copy", repeat_runs(o.repeat, [&] {
                      const double t0 = now_s();
                      devs[0].copy(cb.range(0, s), ca.range(0, s)).wait();
                      return gb / (now_s() - t0);
                  }));
        }
}

} // namespace nbench
