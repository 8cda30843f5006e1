// SPDX-License-Identifier: MIT
// Several simulated devices in one process, copies and fences between
// them, and the collectives of neuron::Communicator on 2, 3 and 4 ranks,
// each against a reference computed on the host.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <thread>

#include <fmt/format.h>

#include "testutil.hpp"

using namespace neuron;
using test::expect_error;

namespace {

void expect_contains(const std::string &s, const std::string &part) {
    if (s.find(part) == std::string::npos)
        fail_msg("'%s' does not contain '%s'", s.c_str(), part.c_str());
}

// One option string per test: its devices are made for it (and freed with it).
std::string sim(const std::string &opts, unsigned device) {
    return fmt::format("sim:{},device={}", opts, device);
}

std::vector<float> read_floats(const Buffer &b, size_t n, size_t first = 0) {
    std::vector<float> v(n);
    b.read(first * 4, std::as_writable_bytes(std::span(v)));
    return v;
}
void write_floats(const Buffer &b, std::span<const float> v, size_t first = 0) {
    b.write(first * 4, std::as_bytes(v));
}

uint16_t to_bf16(float f) { // round to nearest even, as the device
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1);
    return static_cast<uint16_t>(u >> 16);
}
float from_bf16(uint16_t h) {
    uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// --- several devices ---------------------------------------------------------------

void sim_devices(void **) {
    const std::string opts = "devices=3,cores=1,mem=8M";
    setenv("NEURON_DEVICE", ("sim:" + opts).c_str(), 1);
    auto devs = enumerate();
    unsetenv("NEURON_DEVICE");
    assert_int_equal(devs.size(), 3);
    for (unsigned k = 0; k < 3; k++) {
        assert_int_equal(devs[k].index, k);
        assert_string_equal(devs[k].pci_address.c_str(),
                            fmt::format("0000:00:{:02x}.0", k).c_str());
    }
    Device a = Device::open(sim(opts, 0)), b = Device::open(sim(opts, 2));
    assert_string_equal(b.info().pci_address.c_str(), "0000:00:02.0");
    // Each its own memory.
    Buffer x = a.allocate(1 << 20);
    assert_int_equal(*a.memory_used(), 1 << 20);
    assert_int_equal(*b.memory_used(), 0);
    // The same device whichever way it is named.
    Device a2 = Device::open("sim:" + opts);
    assert_int_equal(*a2.memory_used(), 1 << 20);
    expect_contains(expect_error([] { Device::open("sim:devices=0"); }, errc::invalid_argument),
                    "option devices=0: must be 1..16");
    expect_contains(
        expect_error([] { Device::open("sim:devices=2,device=2"); }, errc::invalid_argument),
        "option device=2: there are devices=2 simulated devices, numbered 0..1");
}

// --- copies and fences between devices -------------------------------------------

void cross_device_copy(const std::string &opts) {
    Device a = Device::open(sim(opts, 0)), b = Device::open(sim(opts, 1));
    const size_t n = 3000;
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = static_cast<float>(i) * 0.5f;
    Buffer src = a.allocate(n * 4), mid = a.allocate(n * 4), dst = b.allocate(n * 4);
    write_floats(src, v);
    // A copy on a, then one on b that waits for it (a fence of a), reading a's buffer.
    Fence f1 = a.copy(mid.range(0, n * 4), src.range(0, n * 4));
    Fence f2 = b.copy(dst.range(0, n * 4), mid.range(0, n * 4), {f1});
    f2.wait();
    auto got = read_floats(dst, n);
    assert_memory_equal(got.data(), v.data(), n * 4);
    // And back, on the source's device, into an offset.
    Buffer back = a.allocate(n * 4 + 64);
    a.copy(back.range(64, n * 4), dst.range(0, n * 4)).wait();
    auto got2 = read_floats(back, n, 16);
    assert_memory_equal(got2.data(), v.data(), n * 4);
    Device c = Device::open(sim(opts, 2));
    expect_contains(
        expect_error([&] { c.copy(back.range(0, 64), dst.range(0, 64)); }, errc::invalid_argument),
        "neither buffer is of this device");
}

void cross_device_copy_prime(void **) {
    cross_device_copy("devices=3,cores=1,mem=8M");
}
// Without dma-buf export (neuron.ko today): staged through host buffers.
void cross_device_copy_staged(void **) {
    cross_device_copy("devices=3,cores=1,mem=8M,prime=0");
}

// --- collectives ---------------------------------------------------------------------

// n ranks over devices of 2 cores: ranks 2k and 2k+1 are the cores of device k.
struct Ranks {
    std::vector<Device> devices;
    std::unique_ptr<Communicator> comm;
    Ranks(unsigned n, CommunicatorOptions o, const std::string &extra = "") {
        std::string opts = fmt::format("devices={},cores=2,mem=32M,dma=2{}", (n + 1) / 2, extra);
        std::vector<Rank> ranks;
        for (unsigned r = 0; r < n; r++) {
            if (r % 2 == 0)
                devices.push_back(Device::open(sim(opts, r / 2)));
            ranks.push_back({devices.back(), r % 2});
        }
        comm = std::make_unique<Communicator>(std::move(ranks), o);
    }
    const Device &dev(unsigned r) const { return comm->rank(r).device; }
};

CommunicatorOptions small_chunks() {
    CommunicatorOptions o;
    o.chunk_bytes = 512; // 128 fp32 elements: most sizes below take several pieces
    o.timeout = std::chrono::milliseconds(20000);
    return o;
}

float value(unsigned rank, size_t i) { // small integers: fp32 and bf16 sums are exact
    return static_cast<float>(static_cast<int>((i * 7 + rank * 13) % 17) - 8);
}

void wait_all(const std::vector<Work> &w) {
    for (const auto &x : w)
        x.wait();
}

void check_all_reduce(Ranks &R, size_t count, CollectiveOp op, bool in_place) {
    const unsigned n = R.comm->size();
    std::vector<Buffer> send, recv;
    for (unsigned r = 0; r < n; r++) {
        send.push_back(R.dev(r).allocate(count * 4));
        recv.push_back(R.dev(r).allocate(count * 4));
        std::vector<float> v(count);
        for (size_t i = 0; i < count; i++)
            v[i] = value(r, i);
        write_floats(send[r], v);
    }
    std::vector<Work> w;
    for (unsigned r = 0; r < n; r++) {
        const Buffer &out = in_place ? send[r] : recv[r];
        w.push_back(R.comm->all_reduce(r, send[r].range(0, count * 4), out.range(0, count * 4),
                                       count, DType::fp32, op));
    }
    wait_all(w);
    for (unsigned r = 0; r < n; r++) {
        auto got = read_floats(in_place ? send[r] : recv[r], count);
        for (size_t i = 0; i < count; i++) {
            float want = value(0, i);
            for (unsigned q = 1; q < n; q++) {
                float x = value(q, i);
                want = op == CollectiveOp::max   ? std::max(want, x)
                       : op == CollectiveOp::min ? std::min(want, x)
                                                 : want + x;
            }
            if (op == CollectiveOp::avg)
                want /= static_cast<float>(n);
            if (got[i] != want)
                fail_msg("all_reduce %s n=%u count=%zu: rank %u element %zu is %g, want %g",
                         to_string(op), n, count, r, i, got[i], want);
        }
    }
}

void all_reduce_fp32(void **) {
    for (unsigned n : {2u, 3u, 4u}) {
        Ranks R(n, small_chunks()); // one communicator for many collectives
        for (size_t count : {size_t(1), size_t(7), size_t(1001)})
            for (CollectiveOp op :
                 {CollectiveOp::sum, CollectiveOp::avg, CollectiveOp::max, CollectiveOp::min})
                check_all_reduce(R, count, op, count == 7);
    }
}

// bf16: integers are exact; random values stay within the documented
// bound of the ring's n - 1 roundings: |err| <= (n - 1) * 2^-8 * sum |x|.
void all_reduce_bf16(void **) {
    for (unsigned n : {2u, 3u, 4u}) {
        const size_t count = 777;
        Ranks R(n, small_chunks());
        std::vector<Buffer> buf;
        std::vector<std::vector<float>> x(n, std::vector<float>(count));
        uint32_t seed = 12345;
        for (unsigned r = 0; r < n; r++) {
            buf.push_back(R.dev(r).allocate(count * 2));
            std::vector<uint16_t> h(count);
            for (size_t i = 0; i < count; i++) {
                seed = seed * 1103515245u + 12345u;
                float f = (static_cast<float>(seed >> 8) / 16777216.0f - 0.5f) * 10.0f;
                h[i] = to_bf16(f);
                x[r][i] = from_bf16(h[i]);
            }
            buf[r].write(0, std::as_bytes(std::span(h)));
        }
        std::vector<Work> w;
        for (unsigned r = 0; r < n; r++)
            w.push_back(R.comm->all_reduce(r, buf[r].range(0, count * 2),
                                           buf[r].range(0, count * 2), count, DType::bf16,
                                           CollectiveOp::sum));
        wait_all(w);
        std::vector<uint16_t> first;
        for (unsigned r = 0; r < n; r++) {
            std::vector<uint16_t> h(count);
            buf[r].read(0, std::as_writable_bytes(std::span(h)));
            if (r == 0)
                first = h;
            assert_memory_equal(h.data(), first.data(), count * 2); // every rank the same
            for (size_t i = 0; i < count; i++) {
                double exact = 0, mag = 0;
                for (unsigned q = 0; q < n; q++) {
                    exact += x[q][i];
                    mag += std::fabs(x[q][i]);
                }
                double bound = (n - 1) * std::ldexp(1.0, -8) * mag + 1e-30;
                double err = std::fabs(from_bf16(h[i]) - exact);
                if (err > bound)
                    fail_msg("bf16 sum n=%u element %zu: %g, exact %g, error %g > bound %g", n, i,
                             from_bf16(h[i]), exact, err, bound);
            }
        }
        // max is exact
        for (unsigned r = 0; r < n; r++)
            w[r] = R.comm->all_reduce(r, buf[r].range(0, count * 2), buf[r].range(0, count * 2),
                                      count, DType::bf16, CollectiveOp::max);
        wait_all(w);
    }
}

void data_movement(void **) {
    for (unsigned n : {2u, 3u, 4u}) {
        Ranks R(n, small_chunks());
        for (size_t count : {size_t(1), size_t(5), size_t(300)}) {
            std::vector<Buffer> send, recv, bc;
            for (unsigned r = 0; r < n; r++) {
                send.push_back(R.dev(r).allocate(n * count * 4));
                recv.push_back(R.dev(r).allocate(n * count * 4));
                bc.push_back(R.dev(r).allocate(count * 4));
                std::vector<float> v(n * count);
                for (size_t i = 0; i < v.size(); i++)
                    v[i] = value(r, i) + static_cast<float>(r * 100);
                write_floats(send[r], v);
                if (r == n - 1)
                    write_floats(bc[r], std::span(v).first(count));
            }
            const uint64_t b = count * 4;
            // broadcast from the last rank
            std::vector<Work> w;
            for (unsigned r = 0; r < n; r++)
                w.push_back(R.comm->broadcast(r, bc[r].range(0, b), count, DType::fp32, n - 1));
            wait_all(w);
            for (unsigned r = 0; r < n; r++) {
                auto got = read_floats(bc[r], count);
                for (size_t i = 0; i < count; i++)
                    assert_true(got[i] == value(n - 1, i) + static_cast<float>((n - 1) * 100));
            }
            // all_gather of each rank's first block
            w.clear();
            for (unsigned r = 0; r < n; r++)
                w.push_back(R.comm->all_gather(r, send[r].range(0, b), recv[r].range(0, n * b),
                                               count, DType::fp32));
            wait_all(w);
            for (unsigned r = 0; r < n; r++) {
                auto got = read_floats(recv[r], n * count);
                for (unsigned q = 0; q < n; q++)
                    for (size_t i = 0; i < count; i++)
                        if (got[q * count + i] != value(q, i) + static_cast<float>(q * 100))
                            fail_msg("all_gather n=%u count=%zu: rank %u block %u element %zu", n,
                                     count, r, q, i);
            }
            // all_to_all
            w.clear();
            for (unsigned r = 0; r < n; r++)
                w.push_back(R.comm->all_to_all(r, send[r].range(0, n * b), recv[r].range(0, n * b),
                                               count, DType::fp32));
            wait_all(w);
            for (unsigned r = 0; r < n; r++) {
                auto got = read_floats(recv[r], n * count);
                for (unsigned q = 0; q < n; q++)
                    for (size_t i = 0; i < count; i++)
                        if (got[q * count + i] !=
                            value(q, r * count + i) + static_cast<float>(q * 100))
                            fail_msg("all_to_all n=%u count=%zu: rank %u block %u element %zu", n,
                                     count, r, q, i);
            }
            // reduce_scatter (sum): rank r gets block r summed
            w.clear();
            for (unsigned r = 0; r < n; r++)
                w.push_back(R.comm->reduce_scatter(r, send[r].range(0, n * b), recv[r].range(0, b),
                                                   count, DType::fp32, CollectiveOp::sum));
            wait_all(w);
            for (unsigned r = 0; r < n; r++) {
                auto got = read_floats(recv[r], count);
                for (size_t i = 0; i < count; i++) {
                    float want = 0;
                    for (unsigned q = 0; q < n; q++)
                        want += value(q, r * count + i) + static_cast<float>(q * 100);
                    if (got[i] != want)
                        fail_msg("reduce_scatter n=%u count=%zu: rank %u element %zu: %g, want %g",
                                 n, count, r, i, got[i], want);
                }
            }
            // reduce (max) to rank 1; the other ranks pass no recv
            w.clear();
            for (unsigned r = 0; r < n; r++)
                w.push_back(R.comm->reduce(r, send[r].range(0, b),
                                           r == 1 ? bc[r].range(0, b) : BufferRange{}, count,
                                           DType::fp32, CollectiveOp::max, 1));
            wait_all(w);
            auto got = read_floats(bc[1], count);
            for (size_t i = 0; i < count; i++) {
                float want = -1e30f;
                for (unsigned q = 0; q < n; q++)
                    want = std::max(want, value(q, i) + static_cast<float>(q * 100));
                assert_true(got[i] == want);
            }
            // send/recv around the ring, then a barrier
            w.clear();
            for (unsigned r = 0; r < n; r++) {
                w.push_back(R.comm->send(r, send[r].range(0, b), count, DType::fp32, (r + 1) % n));
                w.push_back(
                    R.comm->recv(r, recv[r].range(0, b), count, DType::fp32, (r + n - 1) % n));
            }
            wait_all(w);
            for (unsigned r = 0; r < n; r++) {
                unsigned from = (r + n - 1) % n;
                auto g = read_floats(recv[r], count);
                for (size_t i = 0; i < count; i++)
                    assert_true(g[i] == value(from, i) + static_cast<float>(from * 100));
            }
            w.clear();
            for (unsigned r = 0; r < n; r++)
                w.push_back(R.comm->barrier(r));
            wait_all(w);
        }
    }
}

// Each rank calls from its own thread, several collectives in a row,
// with segments above one piece (the default 1 MiB chunk).
void threads_and_large(void **) {
    const unsigned n = 4;
    const size_t count = (3u << 20) / 4 + 3; // 3 MiB + 12 bytes of fp32
    Ranks R(n, CommunicatorOptions{});
    std::vector<Buffer> buf;
    for (unsigned r = 0; r < n; r++) {
        buf.push_back(R.dev(r).allocate(count * 4));
        std::vector<float> v(count, static_cast<float>(r + 1));
        write_floats(buf[r], v);
    }
    std::vector<std::thread> th;
    std::vector<std::string> errors(n);
    for (unsigned r = 0; r < n; r++)
        th.emplace_back([&, r] {
            try {
                for (int k = 0; k < 2; k++)
                    R.comm
                        ->all_reduce(r, buf[r].range(0, count * 4), buf[r].range(0, count * 4),
                                     count, DType::fp32, CollectiveOp::sum)
                        .wait();
            } catch (const std::exception &e) {
                errors[r] = e.what();
            }
        });
    for (auto &t : th)
        t.join();
    for (unsigned r = 0; r < n; r++) {
        if (!errors[r].empty())
            fail_msg("rank %u: %s", r, errors[r].c_str());
        auto got = read_floats(buf[r], count);
        // (1+2+3+4) = 10, then 4 * 10 = 40
        for (size_t i = 0; i < count; i += 4099)
            assert_true(got[i] == 40.0f);
        assert_true(got[count - 1] == 40.0f);
    }
}

// --- failures ------------------------------------------------------------------------

void missing_rank_times_out(void **) {
    CommunicatorOptions o;
    o.timeout = std::chrono::milliseconds(300);
    Ranks R(3, o);
    std::vector<Buffer> buf;
    for (unsigned r = 0; r < 3; r++)
        buf.push_back(R.dev(r).allocate(4096));
    // Rank 1 never joins.
    Work w0 = R.comm->all_reduce(0, buf[0].range(0, 400), buf[0].range(0, 400), 100, DType::fp32,
                                 CollectiveOp::sum);
    Work w2 = R.comm->all_reduce(2, buf[2].range(0, 400), buf[2].range(0, 400), 100, DType::fp32,
                                 CollectiveOp::sum);
    assert_false(w0.wait_for(std::chrono::milliseconds(10))); // the caller's limit first
    auto t0 = std::chrono::steady_clock::now();
    std::string m0 = expect_error([&] { w0.wait(); }, errc::timeout);
    std::string m2 = expect_error([&] { w2.wait(); }, errc::timeout);
    auto took = std::chrono::steady_clock::now() - t0;
    assert_true(took < std::chrono::seconds(2));
    for (const auto &m : {m0, m2}) {
        expect_contains(m, "all_reduce #0 of 100 fp32 elements (sum)");
        expect_contains(m, "rank 1 did not take part within the timeout (300 ms)");
    }
    // Two missing ranks are both named.
    Work b0 = R.comm->barrier(0);
    expect_contains(expect_error([&] { b0.wait(); }, errc::timeout),
                    "barrier #1: ranks 1 and 2 did not take part");
}

void bad_input(void **) {
    Ranks R(2, small_chunks());
    Buffer a = R.dev(0).allocate(4096), b = R.dev(1).allocate(4096);
    Buffer h = R.dev(0).allocate(4096, Region::host);
    Device other = Device::open("sim:cores=1,mem=1M");
    Buffer x = other.allocate(4096);
    // Different counts: both ranks fail, naming both calls; nothing moved.
    std::vector<float> ones(100, 1.0f);
    write_floats(a, ones);
    Work w0 = R.comm->all_reduce(0, a.range(0, 400), a.range(0, 400), 100, DType::fp32,
                                 CollectiveOp::sum);
    Work w1 =
        R.comm->all_reduce(1, b.range(0, 400), b.range(0, 400), 99, DType::fp32, CollectiveOp::sum);
    for (const Work *w : {&w0, &w1})
        expect_contains(expect_error([&] { w->wait(); }, errc::invalid_argument),
                        "the ranks disagree: rank 0 called all_reduce of 100 fp32 elements (sum), "
                        "rank 1 all_reduce of 99 fp32 elements (sum)");
    assert_true(read_floats(a, 1)[0] == 1.0f);
    // Different dtypes.
    w0 = R.comm->all_gather(0, a.range(0, 400), a.range(0, 800), 100, DType::fp32);
    w1 = R.comm->all_gather(1, b.range(0, 200), b.range(0, 400), 100, DType::bf16);
    expect_contains(expect_error([&] { w0.wait(); }, errc::invalid_argument),
                    "rank 1 all_gather of 100 bf16 elements");
    // A buffer of another device: the caller fails at once, the other rank's wait too.
    expect_contains(
        expect_error([&] { R.comm->broadcast(0, x.range(0, 400), 100, DType::fp32, 0); },
                     errc::invalid_argument),
        "buf is a buffer of sim:cores=1,mem=1M, not of this rank's device sim:");
    w1 = R.comm->broadcast(1, b.range(0, 400), 100, DType::fp32, 0);
    expect_contains(expect_error([&] { w1.wait(); }, errc::invalid_argument),
                    "broadcast #2: rank 0: buf is a buffer of");
    // Unsupported op/dtype, host memory, short buffers, bad ranks.
    expect_contains(expect_error(
                        [&] {
                            R.comm->all_reduce(0, a.range(0, 400), a.range(0, 400), 100,
                                               DType::int32, CollectiveOp::sum);
                        },
                        errc::invalid_argument),
                    "all_reduce (sum) of int32 elements is not supported: reductions take fp32 "
                    "or bf16");
    expect_error(
        [&] {
            R.comm->all_reduce(1, b.range(0, 400), b.range(0, 400), 100, DType::int32,
                               CollectiveOp::sum);
        },
        errc::invalid_argument);
    expect_contains(
        expect_error(
            [&] { R.comm->all_gather(0, h.range(0, 400), a.range(0, 800), 100, DType::fp32); },
            errc::invalid_argument),
        "send is in host memory");
    R.comm->all_gather(1, b.range(0, 400), b.range(0, 800), 100, DType::fp32);
    expect_contains(
        expect_error(
            [&] { R.comm->all_gather(0, a.range(0, 400), a.range(0, 400), 100, DType::fp32); },
            errc::invalid_argument),
        "recv holds 400 bytes at offset 0 of a 4096-byte buffer, 800 are needed");
    R.comm->all_gather(1, b.range(0, 400), b.range(0, 800), 100, DType::fp32);
    expect_contains(expect_error(
                        [&] {
                            R.comm->all_gather(0, a.range(0, 400), a.range(0, 800), 100,
                                               static_cast<DType>(9));
                        },
                        errc::invalid_argument),
                    "all_gather #6: rank 0: unknown element type 9");
    R.comm->all_gather(1, b.range(0, 400), b.range(0, 800), 100, DType::fp32);
    expect_contains(expect_error(
                        [&] {
                            CommunicatorOptions o;
                            o.chunk_bytes = 1000;
                            Communicator({{R.dev(0), 0}}, o);
                        },
                        errc::invalid_argument),
                    "chunk_bytes 1000: must be a multiple of 512 from 512 to 256 MiB");
    expect_contains(expect_error([&] { R.comm->barrier(2); }, errc::invalid_argument),
                    "rank 2: the communicator has 2 ranks");
    expect_contains(expect_error(
                        [&] {
                            Communicator({{R.dev(0), 0}, {R.dev(0), 0}});
                        },
                        errc::invalid_argument),
                    "ranks 0 and 1 are both core 0 of");
    expect_contains(expect_error(
                        [&] {
                            Communicator({{R.dev(0), 5}});
                        },
                        errc::invalid_argument),
                    "rank 0: core 5 of");
    // After all that, the ranks still work together.
    w0 = R.comm->all_reduce(0, a.range(0, 400), a.range(0, 400), 100, DType::fp32,
                            CollectiveOp::sum);
    w1 = R.comm->all_reduce(1, b.range(0, 400), b.range(0, 400), 100, DType::fp32,
                            CollectiveOp::sum);
    w0.wait();
    w1.wait();
}

// The C API: all_reduce on two ranks, then a rank that does not come.
void c_api(void **) {
    neuron_device *d[2] = {nullptr, nullptr};
    assert_int_equal(neuron_device_open("sim:devices=2,cores=1,mem=4M,device=0", &d[0]), NEURON_OK);
    assert_int_equal(neuron_device_open("sim:devices=2,cores=1,mem=4M,device=1", &d[1]), NEURON_OK);
    const uint32_t cores[2] = {0, 0};
    neuron_comm *comm = nullptr;
    assert_int_equal(neuron_comm_create(d, cores, 2, 300, 0, &comm), NEURON_OK);
    neuron_buffer *b[2];
    neuron_work *w[2];
    for (int r = 0; r < 2; r++) {
        assert_int_equal(neuron_buffer_create(d[r], 4096, NEURON_REGION_DEVICE, 0, &b[r]),
                         NEURON_OK);
        void *p;
        uint64_t size;
        assert_int_equal(neuron_buffer_map(b[r], &p, &size), NEURON_OK);
        std::vector<float> v(10, static_cast<float>(r + 1));
        std::memcpy(p, v.data(), 40);
    }
    for (uint32_t r = 0; r < 2; r++) {
        neuron_collective_args a{};
        a.kind = NEURON_ALL_REDUCE;
        a.rank = r;
        a.send = a.recv = b[r];
        a.count = 10;
        a.dtype = NEURON_DTYPE_FP32;
        a.op = NEURON_REDUCE_MAX;
        assert_int_equal(neuron_collective(comm, &a, &w[r]), NEURON_OK);
    }
    for (int r = 0; r < 2; r++) {
        assert_int_equal(neuron_work_wait(w[r], -1), NEURON_OK);
        neuron_work_destroy(w[r]);
        void *p;
        uint64_t size;
        assert_int_equal(neuron_buffer_map(b[r], &p, &size), NEURON_OK);
        float f;
        std::memcpy(&f, static_cast<char *>(p) + 36, 4);
        assert_true(f == 2.0f);
    }
    neuron_collective_args a{};
    a.kind = NEURON_BARRIER;
    a.rank = 1;
    assert_int_equal(neuron_collective(comm, &a, &w[1]), NEURON_OK);
    assert_int_equal(neuron_work_wait(w[1], 0), NEURON_ERR_TIMEOUT); // not yet
    expect_contains(neuron_last_error(), "not done within the wait's timeout");
    assert_int_equal(neuron_work_wait(w[1], 2000000000), NEURON_ERR_TIMEOUT); // 300 ms
    expect_contains(neuron_last_error(), "barrier #1: rank 0 did not take part");
    neuron_work_destroy(w[1]);
    a.kind = static_cast<neuron_collective_kind>(0);
    assert_int_equal(neuron_collective(comm, &a, &w[1]), NEURON_ERR_INVALID_ARGUMENT);
    expect_contains(neuron_last_error(), "unknown kind 0");
    for (int r = 0; r < 2; r++)
        neuron_buffer_destroy(b[r]);
    neuron_comm_destroy(comm);
    for (int r = 0; r < 2; r++)
        neuron_device_close(d[r]);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sim_devices),
        cmocka_unit_test(cross_device_copy_prime),
        cmocka_unit_test(cross_device_copy_staged),
        cmocka_unit_test(all_reduce_fp32),
        cmocka_unit_test(all_reduce_bf16),
        cmocka_unit_test(data_movement),
        cmocka_unit_test(threads_and_large),
        cmocka_unit_test(missing_rank_times_out),
        cmocka_unit_test(bad_input),
        cmocka_unit_test(c_api),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
