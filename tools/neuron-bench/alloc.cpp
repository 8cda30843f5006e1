// SPDX-License-Identifier: MIT
// Allocation: libneuron's sub-allocator next to one buffer object per
// tensor (BO_CREATE + GEM_CLOSE) and to malloc/free, on the same sequence
// of tensor sizes, with one and two threads.
#include <cstdlib>
#include <random>
#include <thread>

#include <fmt/format.h>

#include <neuron/neuron.hpp>

#include "bench.hpp"

namespace nbench {

namespace {

/// Chunks without memory: the sub-allocator's own cost, with no device.
class AddressOnlyProvider final : public neuron::ChunkProvider {
  public:
    neuron::Chunk acquire(uint64_t size) override { return neuron::Chunk{size, nullptr, next_++}; }
    void release(const neuron::Chunk &) noexcept override {}

  private:
    uint64_t next_ = 1;
};

/// Activation sizes of a small model: 256 B .. 64 KiB.
std::vector<uint64_t> tensor_sizes() {
    std::mt19937 rng(42);
    std::vector<uint64_t> v(4096);
    for (auto &s : v)
        s = uint64_t{256} << (rng() % 9);
    return v;
}

constexpr size_t live_window = 64;

/// ns per alloc+free pair over @p iters, @p threads threads each keeping a
/// window of live allocations (wall time / pairs).
template <typename Alloc, typename Free>
double ns_per_pair(size_t iters, unsigned threads, Alloc &&alloc, Free &&free) {
    static const auto sizes = tensor_sizes();
    auto work = [&](size_t n) {
        using T = decltype(alloc(uint64_t{}));
        std::vector<T> live(live_window);
        for (size_t i = 0; i < n; i++) {
            T &slot = live[i % live_window];
            free(slot);
            slot = alloc(sizes[i % sizes.size()]);
        }
        for (auto &s : live)
            free(s);
    };
    const double t0 = now_s();
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; t++)
        pool.emplace_back(work, iters / threads);
    for (auto &t : pool)
        t.join();
    return (now_s() - t0) * 1e9 / static_cast<double>(iters);
}

} // namespace

void run_alloc(const Options &o, Report &r) {
    Table &t =
        r.table("alloc", "Allocation: alloc + free of 256 B..64 KiB tensors, 64 live", "threads");
    t.column("sub-allocator", "ns").column("BO per tensor", "ns").column("malloc", "ns");
    t.ratio("BO/sub-allocator", "BO per tensor", "sub-allocator")
        .ratio("sub-allocator/malloc", "sub-allocator", "malloc");
    const size_t host_iters = o.quick ? 20000 : 200000;
    const size_t bo_iters = o.quick ? 500 : 4000;
    auto dev = open_device(o);
    std::unique_ptr<neuron::SubAllocator> sub;
    auto region = neuron::Region::host;
    if (dev) {
        if (dev->info().device_memory_size)
            region = neuron::Region::device;
        neuron::SubAllocatorOptions so;
        so.chunk_size = 8u << 20;
        sub = std::make_unique<neuron::SubAllocator>(*dev, region, so);
        sub->allocate(1).reset(); // the first chunk is created before timing
        t.note(fmt::format("The sub-allocator takes 8 MiB chunks of {} memory from the device; "
                           "BO per tensor creates and closes a GEM object each time.",
                           region == neuron::Region::device ? "device" : "host"));
    } else {
        sub = std::make_unique<neuron::SubAllocator>(std::make_unique<AddressOnlyProvider>());
        t.note("No device: the sub-allocator runs over chunks without memory (its own cost).");
    }
    for (unsigned threads : {1u, 2u}) {
        const std::string row = fmt::format("{}", threads);
        t.set(row, "sub-allocator", repeat_runs(o.repeat, [&] {
                  return ns_per_pair(
                      host_iters, threads, [&](uint64_t s) { return sub->allocate(s); },
                      [](neuron::Allocation &a) { a.reset(); });
              }));
        t.set(row, "malloc", repeat_runs(o.repeat, [&] {
                  return ns_per_pair(
                      host_iters, threads, [](uint64_t s) { return std::malloc(s); },
                      [](void *&p) {
                          std::free(p);
                          p = nullptr;
                      });
              }));
        if (!dev) {
            t.skip(row, "BO per tensor", "no neuron device");
            continue;
        }
        t.set(row, "BO per tensor", repeat_runs(o.repeat, [&] {
                  return ns_per_pair(
                      bo_iters, threads, [&](uint64_t s) { return dev->allocate(s, region); },
                      [](neuron::Buffer &b) { b = neuron::Buffer(); });
              }));
    }
}

} // namespace nbench
