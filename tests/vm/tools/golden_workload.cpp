// SPDX-License-Identifier: MIT
// A known workload for the operator tools' golden tests (golden.sh): on each
// device given, buffers of exactly the sizes asked for, then, ROUNDS times a
// second (default 50) until SIGTERM or SIGINT, one DMA copy of 64 KiB from
// host to device memory and one short job on each of the cores given, all
// waited for.
//
// usage: neuron-tools-workload [--rounds N] DEVICE:DEVMEM:HOSTMEM:CORES...
//   e.g. neuron-tools-workload 0:8M:1M:0 1:24M:2M:0,1
// DEVMEM and HOSTMEM (bytes, or with a K or M suffix: KiB, MiB) are what the
// process holds on the device in each region, all buffers counted: the
// program, the job's input and outputs, the copy's host source, and one
// buffer that makes up the rest. CORES: comma-separated core indices.
//
// The process names itself "neuron-workload" (/proc/<pid>/comm), prints
// "ready" and what it holds once every device has done one round, and exits
// 0 when stopped; any error exits 1.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/prctl.h>
#include <thread>
#include <utility>
#include <vector>

#include <neuron/neuron.hpp>

#include "relu_program.hpp"

using namespace neuron;

namespace {

constexpr const char *process_name = "neuron-workload";

// The job of every round: y[128, 128] = relu(x * 2 + 1), 64 KiB in and 64
// KiB out through the sync and scalar engines, and on the tensor engine
// `mm_passes` products of a 1x1 by a 1x512 matrix, each 2112 cycles of the
// device's model for little work of the emulator: ~0.4 ms of modelled busy
// time (fdinfo's drm-engine-core<N>, a process's utilization) in a job that
// takes about a millisecond.
constexpr uint32_t job_n = 128;
constexpr uint32_t mm_passes = 256;
// Bytes copied from host to device memory (the start of x) each round.
constexpr uint64_t copy_bytes = 64 * 1024;

Program job_program() {
    ProgramBuilder b("golden-job");
    test::add_relu2x1(b, job_n);

    auto stationary = b.sbuf("stationary", DType::fp32, 1, 1);
    auto moving = b.sbuf("moving", DType::fp32, 512, 1);
    auto product = b.psum("product", DType::fp32, 512, 1);
    auto operands = b.semaphore("operands");
    b.vector().memset(stationary.tap(), 0.5f).memset(moving.tap(), 1.0f).signal(operands);
    b.tensor().wait(operands);
    Label pass = b.tensor().here();
    b.tensor().matmul(product.tap(), stationary.tap(), moving.tap()).loop(pass, mm_passes);
    return b.finish();
}

struct Spec {
    unsigned device = 0;
    uint64_t device_bytes = 0;
    uint64_t host_bytes = 0;
    std::vector<unsigned> cores;
};

std::optional<uint64_t> parse_size(std::string_view s) {
    uint64_t unit = 1;
    if (!s.empty() && (s.back() == 'K' || s.back() == 'M')) {
        unit = s.back() == 'K' ? 1024 : 1024 * 1024;
        s.remove_suffix(1);
    }
    if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    return std::stoull(std::string(s)) * unit;
}

std::optional<Spec> parse_spec(std::string_view s) {
    std::vector<std::string_view> f;
    for (size_t pos = 0;;) {
        size_t colon = s.find(':', pos);
        f.push_back(s.substr(pos, colon == std::string_view::npos ? colon : colon - pos));
        if (colon == std::string_view::npos)
            break;
        pos = colon + 1;
    }
    if (f.size() != 4)
        return std::nullopt;
    auto dev = parse_size(f[0]);
    auto dmem = parse_size(f[1]);
    auto hmem = parse_size(f[2]);
    if (!dev || !dmem || !hmem || f[0].back() == 'K' || f[0].back() == 'M')
        return std::nullopt;
    Spec spec{static_cast<unsigned>(*dev), *dmem, *hmem, {}};
    for (size_t pos = 0;;) {
        size_t comma = f[3].find(',', pos);
        auto c =
            parse_size(f[3].substr(pos, comma == std::string_view::npos ? comma : comma - pos));
        if (!c)
            return std::nullopt;
        spec.cores.push_back(static_cast<unsigned>(*c));
        if (comma == std::string_view::npos)
            break;
        pos = comma + 1;
    }
    return spec;
}

// Everything one device holds.
struct Load {
    Load(const Spec &s, Device d) : spec(s), dev(std::move(d)), program(dev.load(job_program())) {}
    Spec spec;
    Device dev;
    LoadedProgram program;
    Buffer x_host, x, rest_device, rest_host;
    std::vector<Buffer> y; ///< one per core
    std::vector<Queue> queues;
};

Load setup(const Spec &spec) {
    Load l(spec, Device::open(spec.device));
    const uint64_t io = 128ull * job_n * 4;
    l.x_host = l.dev.allocate(copy_bytes, Region::host);
    l.x = l.dev.allocate(io);
    for (unsigned c : spec.cores) {
        l.y.push_back(l.dev.allocate(io));
        l.queues.push_back(l.dev.queue(c));
    }
    uint64_t used_device = l.program.buffer().size() + l.x.size();
    for (const Buffer &b : l.y)
        used_device += b.size();
    uint64_t used_host = l.x_host.size();
    if (used_device > spec.device_bytes || used_host > spec.host_bytes)
        throw std::runtime_error("accel" + std::to_string(spec.device) + ": the job needs " +
                                 std::to_string(used_device) + " bytes of device and " +
                                 std::to_string(used_host) + " bytes of host memory");
    if (spec.device_bytes > used_device)
        l.rest_device = l.dev.allocate(spec.device_bytes - used_device);
    if (spec.host_bytes > used_host)
        l.rest_host = l.dev.allocate(spec.host_bytes - used_host, Region::host);
    std::vector<float> x(copy_bytes / 4);
    for (size_t i = 0; i < x.size(); i++)
        x[i] = static_cast<float>(i % 17) - 8.0f;
    l.x_host.write(0, std::as_bytes(std::span(x)));
    return l;
}

// On every device a copy, then a job on each of its cores after it; waits
// for all of them.
void run_round(const std::vector<Load> &loads) {
    std::vector<Fence> jobs;
    for (const Load &l : loads) {
        Fence copied = l.dev.copy(l.x.range(0, copy_bytes), l.x_host.range());
        for (size_t i = 0; i < l.queues.size(); i++)
            jobs.push_back(l.queues[i].submit(
                l.program, Arguments().bind("x", l.x).bind("y", l.y[i]), {copied}));
    }
    for (const Fence &f : jobs)
        f.wait();
}

std::atomic<bool> g_stop{false};

void on_signal(int) {
    g_stop = true;
}

int usage() {
    std::fprintf(stderr,
                 "usage: neuron-tools-workload [--rounds N] DEVICE:DEVMEM:HOSTMEM:CORES...\n"
                 "  e.g. neuron-tools-workload 0:8M:1M:0 1:24M:2M:0,1\n");
    return 2;
}

} // namespace

int main(int argc, char **argv) {
    unsigned rounds = 50;
    std::vector<Spec> specs;
    for (int i = 1; i < argc; i++) {
        std::string_view a = argv[i];
        if (a == "--rounds" && i + 1 < argc) {
            auto n = parse_size(argv[++i]);
            if (!n || *n == 0 || *n > 10000)
                return usage();
            rounds = static_cast<unsigned>(*n);
        } else if (auto s = parse_spec(a)) {
            specs.push_back(*s);
        } else {
            return usage();
        }
    }
    if (specs.empty())
        return usage();
    prctl(PR_SET_NAME, process_name, 0, 0, 0);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);

    try {
        std::vector<Load> loads;
        for (const Spec &s : specs)
            loads.push_back(setup(s));
        run_round(loads);
        std::string ready = "ready:";
        for (const Load &l : loads) {
            ready += " accel" + std::to_string(l.spec.device) + " device " +
                     std::to_string(l.spec.device_bytes) + " host " +
                     std::to_string(l.spec.host_bytes) + " cores";
            for (size_t i = 0; i < l.spec.cores.size(); i++)
                ready += (i ? "," : " ") + std::to_string(l.spec.cores[i]);
            ready += ";";
        }
        std::printf("%s\n", ready.c_str());
        std::fflush(stdout);

        // Paced: rounds start `period` apart; a late round does not make the
        // next ones come faster.
        const auto period = std::chrono::nanoseconds(1000000000 / rounds);
        auto next = std::chrono::steady_clock::now();
        while (!g_stop) {
            run_round(loads);
            next += period;
            auto now = std::chrono::steady_clock::now();
            if (next < now)
                next = now;
            std::this_thread::sleep_until(next);
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "neuron-tools-workload: %s\n", e.what());
        return 1;
    }
    return 0;
}
