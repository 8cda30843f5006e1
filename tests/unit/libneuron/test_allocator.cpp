// SPDX-License-Identifier: MIT
// The sub-allocator over a host chunk provider: placement, alignment,
// coalescing, statistics, chunk policy, failures and concurrency.
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "testutil.hpp"

using namespace neuron;

namespace {

/// Chunks are host memory, so tests can write through allocations.
class HostProvider final : public ChunkProvider {
  public:
    Chunk acquire(uint64_t size) override {
        std::lock_guard<std::mutex> g(lock);
        if (fail_next) {
            fail_next = false;
            throw Error(errc::out_of_device_memory, "test provider: no memory");
        }
        uint64_t id = next++;
        mem[id].resize(size);
        acquired++;
        return Chunk{size, nullptr, id};
    }
    void release(const Chunk &c) noexcept override {
        std::lock_guard<std::mutex> g(lock);
        mem.erase(c.id);
        released++;
    }
    std::byte *ptr(uint64_t id) {
        std::lock_guard<std::mutex> g(lock);
        return mem.at(id).data();
    }
    std::mutex lock;
    std::map<uint64_t, std::vector<std::byte>> mem;
    uint64_t next = 1;
    std::atomic<int> acquired{0}, released{0};
    bool fail_next = false;
};

struct Fixture {
    HostProvider *p;
    SubAllocator a;
    explicit Fixture(SubAllocatorOptions o = {})
        : p(new HostProvider), a(std::unique_ptr<ChunkProvider>(p), o) {}
};

SubAllocatorOptions small_chunks() {
    SubAllocatorOptions o;
    o.chunk_size = 64 * 1024;
    o.min_alignment = 64;
    o.keep_empty_chunks = 1;
    return o;
}

} // namespace

static void basic(void **) {
    Fixture f(small_chunks());
    auto x = f.a.allocate(100);
    auto y = f.a.allocate(1);
    assert_true(static_cast<bool>(x));
    assert_int_equal(x.size(), 100);
    assert_int_equal(x.offset() % 64, 0);
    assert_int_equal(y.offset() % 64, 0);
    assert_true(x.chunk_id() == y.chunk_id());
    assert_true(x.offset() + 128 <= y.offset() || y.offset() + 64 <= x.offset());
    auto s = f.a.stats();
    assert_int_equal(s.bytes_in_use, 128 + 64);
    assert_int_equal(s.allocations, 2);
    assert_int_equal(s.total_allocations, 2);
    assert_int_equal(s.chunks, 1);
    assert_int_equal(s.chunk_bytes, 64 * 1024);
    assert_int_equal(f.p->acquired.load(), 1);
    x.reset();
    assert_false(static_cast<bool>(x));
    s = f.a.stats();
    assert_int_equal(s.bytes_in_use, 64);
    assert_int_equal(s.peak_bytes_in_use, 192);
    // Moves transfer ownership.
    Allocation z = std::move(y);
    assert_false(static_cast<bool>(y));
    z = f.a.allocate(10);
    assert_int_equal(f.a.stats().allocations, 1);
}

static void alignment(void **) {
    Fixture f(small_chunks());
    auto a = f.a.allocate(64);
    for (uint64_t al : {128ull, 256ull, 4096ull, 16384ull}) {
        auto b = f.a.allocate(10, al);
        assert_int_equal(b.offset() % al, 0);
    }
    // Bigger than a chunk: a dedicated chunk, aligned.
    auto big = f.a.allocate(200 * 1024, 65536);
    assert_int_equal(big.offset() % 65536, 0);
    assert_true(big.chunk_id() != a.chunk_id());
    int before = f.p->released.load();
    big.reset();
    assert_int_equal(f.p->released.load(), before + 1); // dedicated chunks go at once
    try {
        f.a.allocate(10, 48);
        fail_msg("alignment 48 accepted");
    } catch (const Error &e) {
        assert_true(e.code() == errc::invalid_argument);
        assert_non_null(std::strstr(e.what(), "alignment 48 is not a power of two"));
    }
    try {
        f.a.allocate(0);
        fail_msg("size 0 accepted");
    } catch (const Error &e) {
        assert_true(e.code() == errc::invalid_argument);
    }
}

static void coalescing(void **) {
    Fixture f(small_chunks());
    std::vector<Allocation> v;
    for (int i = 0; i < 1024; i++) // exactly one chunk of 64-byte blocks
        v.push_back(f.a.allocate(64));
    assert_int_equal(f.a.stats().chunks, 1);
    // Free every other block, then the rest: the chunk must coalesce back
    // into one block that fits a chunk-sized allocation.
    for (size_t i = 0; i < v.size(); i += 2)
        v[i].reset();
    auto mid = f.a.allocate(64);
    assert_int_equal(f.a.stats().chunks, 1);
    mid.reset();
    for (size_t i = 1; i < v.size(); i += 2)
        v[i].reset();
    assert_int_equal(f.a.stats().bytes_in_use, 0);
    auto whole = f.a.allocate(64 * 1024);
    assert_int_equal(whole.offset(), 0);
    assert_int_equal(f.a.stats().chunks, 1);
    assert_int_equal(f.p->acquired.load(), 1);
}

static void chunk_policy(void **) {
    Fixture f(small_chunks());
    std::vector<Allocation> v;
    for (int i = 0; i < 3; i++)
        v.push_back(f.a.allocate(60 * 1024)); // one per chunk
    assert_int_equal(f.a.stats().chunks, 3);
    v.clear();
    // One empty chunk is kept for reuse.
    assert_int_equal(f.a.stats().chunks, 1);
    assert_int_equal(f.p->released.load(), 2);
    auto again = f.a.allocate(1000);
    assert_int_equal(f.p->acquired.load(), 3); // reused, no new chunk
    again.reset();
    f.a.trim();
    assert_int_equal(f.a.stats().chunks, 0);
    assert_int_equal(f.a.stats().chunk_bytes, 0);
}

static void provider_failure(void **) {
    Fixture f(small_chunks());
    auto a = f.a.allocate(60 * 1024);
    f.p->fail_next = true;
    try {
        f.a.allocate(60 * 1024);
        fail_msg("allocation succeeded");
    } catch (const Error &e) {
        assert_true(e.code() == errc::out_of_device_memory);
    }
    auto s = f.a.stats();
    assert_int_equal(s.allocations, 1);
    assert_int_equal(s.chunks, 1);
    auto b = f.a.allocate(60 * 1024); // works again
    assert_int_equal(f.a.stats().chunks, 2);
}

static void outlives_allocator(void **) {
    auto *p = new HostProvider;
    Allocation keep;
    {
        SubAllocator a(std::unique_ptr<ChunkProvider>(p), small_chunks());
        keep = a.allocate(128);
    }
    // The allocator's state (and provider) live on until the last allocation.
    std::memset(p->ptr(keep.chunk_id()) + keep.offset(), 0xab, keep.size());
    keep.reset();
}

// Threads allocate, fill with their own pattern, check, and free; any
// overlap between live allocations shows up as a wrong pattern.
static void concurrency(void **) {
    SubAllocatorOptions o = small_chunks();
    o.keep_empty_chunks = 2;
    Fixture f(o);
    constexpr int threads = 8, iters = 4000;
    std::atomic<int> errors{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) {
        ts.emplace_back([&, t] {
            std::mt19937 rng(static_cast<unsigned>(t) * 7919u);
            std::vector<Allocation> live;
            for (int i = 0; i < iters; i++) {
                if (live.size() < 32 && (rng() % 3 != 0 || live.empty())) {
                    uint64_t size = 1 + rng() % 3000;
                    uint64_t align = uint64_t{1} << (rng() % 10);
                    Allocation a = f.a.allocate(size, align);
                    if (a.offset() % std::max<uint64_t>(align, 64))
                        errors++;
                    std::memset(f.p->ptr(a.chunk_id()) + a.offset(), t + 1, a.size());
                    live.push_back(std::move(a));
                } else {
                    size_t k = rng() % live.size();
                    const Allocation &a = live[k];
                    const std::byte *m = f.p->ptr(a.chunk_id()) + a.offset();
                    for (uint64_t j = 0; j < a.size(); j++)
                        if (m[j] != std::byte(t + 1)) {
                            errors++;
                            break;
                        }
                    live.erase(live.begin() + static_cast<long>(k));
                }
            }
        });
    }
    for (auto &th : ts)
        th.join();
    assert_int_equal(errors.load(), 0);
    auto s = f.a.stats();
    assert_int_equal(s.allocations, 0);
    assert_int_equal(s.bytes_in_use, 0);
    assert_true(s.total_allocations > threads * iters / 2);
    assert_true(s.chunks <= 2);
    assert_int_equal(f.p->acquired.load() - f.p->released.load(), static_cast<int>(s.chunks));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(basic),
        cmocka_unit_test(alignment),
        cmocka_unit_test(coalescing),
        cmocka_unit_test(chunk_policy),
        cmocka_unit_test(provider_failure),
        cmocka_unit_test(outlives_allocator),
        cmocka_unit_test(concurrency),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
