// SPDX-License-Identifier: MIT
//
// Soak of neuron.ko through libneuron: worker processes of several threads
// each copy through the DMA engines, submit jobs, write mapped buffers and
// allocate and free at random, checking every result, while
// the parent kills a random worker with SIGKILL at random moments and
// starts a new one. At the end every worker is killed, and the driver must
// be back where it started: device memory used, host memory pinned and
// mapped, and on kernels with kmemleak no new unreferenced object (the
// files' handles, syncobjs and jobs were all freed).
//
// usage: neuron-soak [--procs N] [--threads N] [--seconds N] [--seed N]
// Exit status 0 when every check held; the figures go to stdout.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <neuron/neuron.hpp>

#include "relu_program.hpp"

extern "C" {
#include "testdev.h"
}

using namespace neuron;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    unsigned procs = 4, threads = 4, seconds = 120;
    uint64_t seed = 0;
};

enum Op { op_copy, op_submit, op_map, op_churn, op_count };
const char *const op_names[op_count] = {"copies", "jobs", "mapped buffers", "churns"};

/// Completed operations of all workers, in memory shared across fork().
std::atomic<uint64_t> *done;

[[noreturn]] void fail(const char *what, const std::string &detail) {
    std::fprintf(stderr, "neuron-soak: pid %d: %s: %s\n", getpid(), what, detail.c_str());
    std::fflush(stderr);
    _exit(1);
}

std::vector<float> pattern(std::mt19937_64 &rng, size_t n) {
    std::uniform_real_distribution<float> d(-4.0f, 4.0f);
    std::vector<float> v(n);
    for (auto &x : v)
        x = d(rng);
    return v;
}

/// Host -> device -> host through the DMA engines (the COPY ioctl), checked.
void copy_round_trip(const Device &d, std::mt19937_64 &rng) {
    size_t size = 4096u << (rng() % 9); // 4 KiB .. 1 MiB
    Buffer src = d.allocate(size, Region::host), dst = d.allocate(size, Region::host);
    Buffer mid = d.allocate(size, rng() % 2 ? Region::host : Region::device);
    auto in = src.map();
    for (auto &b : in)
        b = std::byte(rng());
    for (auto [to, from] : {std::pair{&mid, &src}, std::pair{&dst, &mid}})
        if (!d.copy(to->range(0, size), from->range(0, size)).wait_for(60s))
            fail("copy", "a copy of " + std::to_string(size) + " bytes did not finish in 60 s");
    if (!std::equal(in.begin(), in.end(), dst.map().begin()))
        fail("copy", std::to_string(size) + " bytes copied there and back differ");
}

void relu_job(const Device &d, Region region, const LoadedProgram &lp, uint32_t n, unsigned core,
              std::mt19937_64 &rng) {
    auto x = pattern(rng, 128u * n);
    Buffer xb = d.allocate(x.size() * 4, region), yb = d.allocate(x.size() * 4, region);
    xb.write(0, std::as_bytes(std::span(x)));
    Fence f = d.queue(core).submit(lp, Arguments().bind("x", xb).bind("y", yb));
    if (!f.wait_for(60s))
        fail("submit", "a job did not finish in 60 s");
    std::vector<float> y(x.size());
    yb.read(0, std::as_writable_bytes(std::span(y)));
    for (size_t i = 0; i < x.size(); i++) {
        float want = std::max(0.0f, x[i] * 2.0f + 1.0f);
        if (y[i] != want)
            fail("submit", "y[" + std::to_string(i) + "] = " + std::to_string(y[i]) + ", want " +
                               std::to_string(want));
    }
}

void map_write_read(const Device &d, std::mt19937_64 &rng) {
    Buffer b = d.allocate(65536, Region::host);
    auto m = b.map();
    uint8_t v = static_cast<uint8_t>(rng());
    std::memset(m.data(), v, m.size());
    std::vector<std::byte> out(m.size());
    b.read(0, out);
    for (auto x : out)
        if (x != std::byte(v))
            fail("map", "a mapped host buffer reads back other bytes");
}

void churn(const Device &d, std::mt19937_64 &rng) {
    std::vector<Buffer> bufs;
    for (unsigned i = 0, n = 1 + rng() % 16; i < n; i++)
        bufs.push_back(d.allocate(4096u << (rng() % 6), rng() % 2 ? Region::host : Region::device));
}

[[noreturn]] void worker(const Options &o, uint64_t seed) {
    Device d = Device::open_first();
    Region data = d.info().device_memory_size ? Region::device : Region::host;
    const uint32_t n = 64;
    ProgramBuilder b("relu2x1");
    test::add_relu2x1(b, n);
    LoadedProgram lp = d.load(b.finish());
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < o.threads; t++)
        threads.emplace_back([&, t] {
            std::mt19937_64 rng(seed * 131 + t);
            try {
                for (;;) {
                    Op op = static_cast<Op>(rng() % op_count);
                    switch (op) {
                    case op_copy:
                        copy_round_trip(d, rng);
                        break;
                    case op_submit:
                        relu_job(d, data, lp, n, static_cast<unsigned>(rng() % d.info().num_cores),
                                 rng);
                        break;
                    case op_map:
                        map_write_read(d, rng);
                        break;
                    case op_churn:
                    case op_count:
                        churn(d, rng);
                    }
                    done[op].fetch_add(1, std::memory_order_relaxed);
                }
            } catch (const std::exception &e) {
                fail("libneuron", e.what());
            }
        });
    for (auto &t : threads)
        t.join();
    _exit(1); // the threads never return
}

bool parse(int argc, char **argv, Options &o) {
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string k = argv[i];
        unsigned long long v = std::strtoull(argv[i + 1], nullptr, 0);
        if (k == "--procs" && v > 0)
            o.procs = static_cast<unsigned>(v);
        else if (k == "--threads" && v > 0)
            o.threads = static_cast<unsigned>(v);
        else if (k == "--seconds" && v > 0)
            o.seconds = static_cast<unsigned>(v);
        else if (k == "--seed")
            o.seed = v;
        else
            return false;
    }
    return argc % 2 == 1;
}

} // namespace

int main(int argc, char **argv) {
    Options o;
    if (!parse(argc, argv, o)) {
        std::fprintf(stderr, "usage: %s [--procs N] [--threads N] [--seconds N] [--seed N]\n",
                     argv[0]);
        return 2;
    }
    if (!o.seed)
        o.seed = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
    neuron_test_dev dev;
    if (neuron_test_find_device(&dev)) {
        std::fprintf(stderr, "neuron-soak: no neuron device\n");
        return 1;
    }
    const long used0 = neuron_test_sysfs_long(&dev, "memory_used");
    if (used0 < 0) {
        std::fprintf(stderr, "neuron-soak: cannot read memory_used of %s\n", dev.node);
        return 1;
    }
    const bool kmemleak = neuron_test_kmemleak_clear() == 0;
    std::printf("seed 0x%" PRIx64 ", %u processes x %u threads, %u s\n", o.seed, o.procs, o.threads,
                o.seconds);
    std::fflush(stdout);

    void *shared = mmap(nullptr, sizeof(std::atomic<uint64_t>) * op_count, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        std::perror("mmap");
        return 1;
    }
    done = new (shared) std::atomic<uint64_t>[op_count]();

    std::mt19937_64 rng(o.seed);
    std::vector<pid_t> pids(o.procs);
    uint64_t started = 0, kills = 0, failures = 0;
    auto spawn = [&](unsigned slot) {
        uint64_t seed = o.seed + ++started;
        pid_t pid = fork();
        if (pid == 0)
            worker(o, seed);
        if (pid < 0) {
            std::perror("fork");
            std::exit(1);
        }
        pids[slot] = pid;
    };
    // A worker that exits by itself failed a check (it printed which).
    auto reap = [&](pid_t pid, bool killed) {
        int status = 0;
        waitpid(pid, &status, 0);
        if (!(killed && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
            failures++;
    };
    for (unsigned i = 0; i < o.procs; i++)
        spawn(i);
    const auto end = Clock::now() + std::chrono::seconds(o.seconds);
    while (Clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 1900));
        for (unsigned i = 0; i < o.procs; i++) {
            int status;
            if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
                failures++;
                spawn(i);
            }
        }
        unsigned victim = static_cast<unsigned>(rng() % o.procs);
        kill(pids[victim], SIGKILL);
        reap(pids[victim], true);
        kills++;
        spawn(victim);
    }
    for (unsigned i = 0; i < o.procs; i++) {
        kill(pids[i], SIGKILL);
        reap(pids[i], true);
    }

    const long used = neuron_test_sysfs_wait(&dev, "memory_used", used0, 60);
    const long pinned = neuron_test_sysfs_wait(&dev, "host_memory_pinned", 0, 60);
    const long mapped = neuron_test_sysfs_wait(&dev, "host_memory_mapped", 0, 60);
    // -1: no kmemleak in this kernel.
    const long leaks = kmemleak ? neuron_test_kmemleak_scan() : -1;
    std::printf("%" PRIu64 " workers started, %" PRIu64 " killed with SIGKILL, %" PRIu64
                " failed; memory_used %ld (start %ld), host_memory_pinned %ld, "
                "host_memory_mapped %ld, kmemleak %ld\n",
                started, kills, failures, used, used0, pinned, mapped, leaks);
    for (int op = 0; op < op_count; op++)
        std::printf("%s%" PRIu64 " %s", op ? ", " : "checked: ", done[op].load(), op_names[op]);
    std::printf("\n");
    bool ok = failures == 0 && used == used0 && pinned == 0 && mapped == 0 && leaks <= 0;
    std::printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
