// SPDX-License-Identifier: MIT
// Sub-allocator alloc/free next to malloc/free and, with a device, next to
// one buffer object (BO_CREATE + GEM_CLOSE) per tensor, in the same run.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <neuron/neuron.hpp>

using namespace neuron;
using clk = std::chrono::steady_clock;

namespace {

class NullProvider final : public ChunkProvider {
  public:
    Chunk acquire(uint64_t size) override { return Chunk{size, nullptr, next_++}; }
    void release(const Chunk &) noexcept override {}

  private:
    uint64_t next_ = 1;
};

/// Tensor sizes of a small model's activations: 256 B .. 64 KiB.
std::vector<uint64_t> sizes(size_t n) {
    std::mt19937 rng(42);
    std::vector<uint64_t> v(n);
    for (auto &s : v)
        s = uint64_t{256} << (rng() % 9);
    return v;
}

/// Runs @p iters allocations with a window of @p window live ones; returns ns per alloc+free.
template <typename Alloc, typename Free>
double run(size_t iters, size_t window, const std::vector<uint64_t> &sz, Alloc &&alloc,
           Free &&free) {
    using T = decltype(alloc(uint64_t{}));
    std::vector<T> live(window);
    auto t0 = clk::now();
    for (size_t i = 0; i < iters; i++) {
        T &slot = live[i % window];
        free(slot);
        slot = alloc(sz[i % sz.size()]);
    }
    for (auto &s : live)
        free(s);
    return std::chrono::duration<double, std::nano>(clk::now() - t0).count() /
           static_cast<double>(iters);
}

void report(const char *what, double ns) {
    std::printf("%-44s %10.1f ns/op\n", what, ns);
}

} // namespace

int main(int argc, char **argv) {
    size_t iters = 200000, dev_iters = 2000, window = 64;
    for (int i = 1; i < argc; i++) {
        if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc)
            iters = std::strtoul(argv[++i], nullptr, 0);
        else if (!std::strcmp(argv[i], "--device-iterations") && i + 1 < argc)
            dev_iters = std::strtoul(argv[++i], nullptr, 0);
        else {
            std::fprintf(stderr, "usage: %s [--iterations N] [--device-iterations N]\n", argv[0]);
            return 2;
        }
    }
    auto sz = sizes(4096);
    std::printf("alloc+free pairs, window of %zu live tensors, sizes 256 B..64 KiB\n", window);

    SubAllocator sub(std::make_unique<NullProvider>());
    double t_sub = run(
        iters, window, sz, [&](uint64_t s) { return sub.allocate(s); },
        [](Allocation &a) { a.reset(); });
    report("sub-allocator (host chunks)", t_sub);

    double t_malloc = run(
        iters, window, sz, [](uint64_t s) { return std::malloc(s); },
        [](void *&p) {
            std::free(p);
            p = nullptr;
        });
    report("malloc/free", t_malloc);

    // Two threads sharing one allocator.
    auto t0 = clk::now();
    std::vector<std::thread> ts;
    for (int t = 0; t < 2; t++)
        ts.emplace_back([&] {
            run(
                iters / 2, window, sz, [&](uint64_t s) { return sub.allocate(s); },
                [](Allocation &a) { a.reset(); });
        });
    for (auto &t : ts)
        t.join();
    report("sub-allocator, 2 threads (wall/op)",
           std::chrono::duration<double, std::nano>(clk::now() - t0).count() /
               static_cast<double>(iters));
    auto st = sub.stats();
    std::printf("  stats: %llu allocations, peak %llu bytes in use, %llu chunk(s) acquired\n",
                static_cast<unsigned long long>(st.total_allocations),
                static_cast<unsigned long long>(st.peak_bytes_in_use),
                static_cast<unsigned long long>(st.chunk_acquisitions));

    if (enumerate().empty()) {
        std::printf("%-44s skipped: no device\n", "BO_CREATE per tensor");
        return 0;
    }
    Device dev = Device::open_first();
    Region r = dev.info().device_memory_size ? Region::device : Region::host;
    SubAllocatorOptions o;
    o.chunk_size = 8u << 20;
    SubAllocator dsub(dev, r, o);
    dsub.allocate(1).reset(); // the chunk is created (and kept) before timing
    double t_dsub = run(
        dev_iters, window, sz, [&](uint64_t s) { return dsub.allocate(s); },
        [](Allocation &a) { a.reset(); });
    report("sub-allocator (device buffer chunks)", t_dsub);
    double t_bo = run(
        dev_iters, window, sz, [&](uint64_t s) { return dev.allocate(s, r); },
        [](Buffer &b) { b = Buffer(); });
    report("BO_CREATE + GEM_CLOSE per tensor", t_bo);
    std::printf("  one buffer object per tensor is %.0fx slower than the sub-allocator\n",
                t_bo / t_dsub);
    return 0;
}
