// SPDX-License-Identifier: MIT
// libneuron on the emulated device: devices, buffers, memory in use, the
// sub-allocator, program loading, copies, jobs (numerics, dependencies, many
// in flight, completion times, fault and timeout errors) and C API parity.
//
// Usage: neuron-libneuron-vm-test device|copy|submit|capi|profile|collectives
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <neuron/neuron.h>
#include <neuron/neuron.hpp>

#include "device_state.hpp"
#include "neuron_isa.h"
#include "relu_program.hpp"

// cmocka last: it defines macros that clash with the standard library.
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

using namespace neuron;
using namespace std::chrono_literals;

namespace {

Device open_dev() {
    return Device::open_first();
}

std::span<const std::byte> bytes_of(const std::vector<float> &v) {
    return std::as_bytes(std::span(v));
}

Region data_region(const Device &d) {
    return d.info().device_memory_size ? Region::device : Region::host;
}

/// y[128, n] = relu(x * 2 + 1): load, activate, store, with semaphores.
Program relu_program(uint32_t n) {
    ProgramBuilder b("relu2x1");
    test::add_relu2x1(b, n);
    return b.finish();
}

std::vector<float> pattern(size_t n, float k) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = (static_cast<float>(i % 17) - 8.0f) * k;
    return v;
}

void check_relu(const Buffer &y, const std::vector<float> &x, uint64_t offset = 0) {
    std::vector<float> out(x.size());
    y.read(offset, std::as_writable_bytes(std::span(out)));
    for (size_t i = 0; i < x.size(); i++) {
        float want = std::max(0.0f, x[i] * 2.0f + 1.0f);
        if (std::fabs(out[i] - want) > 1e-6f)
            fail_msg("y[%zu] = %g, want %g", i, static_cast<double>(out[i]),
                     static_cast<double>(want));
    }
}

template <typename F> Error expect_error(F &&f, errc want) {
    try {
        f();
    } catch (const Error &e) {
        if (e.code() != want)
            fail_msg("got %s (%d), want code %d", e.what(), e.code().value(),
                     static_cast<int>(want));
        return e;
    }
    fail_msg("no error");
    return Error(errc::io_error, "");
}

} // namespace

// --- device ------------------------------------------------------------------------

static void device_info(void **) {
    auto devs = enumerate();
    assert_true(!devs.empty());
    Device d = open_dev();
    const DeviceInfo &i = d.info();
    assert_int_equal(i.vendor_id, 0x1d0f);
    assert_int_equal(i.device_id, devs[0].device_id);
    assert_true(i.num_cores >= 1);
    assert_int_equal(i.partitions, 128);
    assert_int_equal(i.api_version >> 16, 1);
    assert_true(i.max_bindings >= 2);
    assert_string_equal(i.pci_address.c_str(), devs[0].pci_address.c_str());
    // The same device by path, index and PCI address.
    assert_int_equal(Device::open(devs[0].node).info().device_id, i.device_id);
    assert_int_equal(Device::open(std::to_string(devs[0].index)).info().num_cores, i.num_cores);
    assert_string_equal(Device::open(devs[0].pci_address).path().c_str(), devs[0].node.c_str());
    expect_error([&] { d.queue(i.num_cores); }, errc::invalid_argument);
}

static void buffers(void **) {
    Device d = open_dev();
    for (Region r : {Region::host, data_region(d)}) {
        Buffer b = d.allocate(10000, r);
        assert_int_equal(b.size() % 4096, 0);
        assert_true(b.size() >= 10000);
        auto m = b.map();
        assert_int_equal(m.size(), b.size());
        for (auto x : m.first(64)) // zeroed
            assert_int_equal(static_cast<int>(x), 0);
        std::vector<float> v = pattern(1000, 0.5f);
        b.write(128, bytes_of(v));
        std::vector<float> back(1000);
        b.read(128, std::as_writable_bytes(std::span(back)));
        assert_memory_equal(back.data(), v.data(), 4000);
        assert_ptr_equal(b.map().data(), m.data()); // mapped once
        expect_error([&] { b.write(b.size() - 2, bytes_of(v)); }, errc::invalid_argument);
    }
    if (d.info().device_memory_size) {
        auto e = expect_error([&] { d.allocate(d.info().device_memory_size * 2); },
                              errc::out_of_device_memory);
        assert_non_null(std::strstr(e.what(), "out of device memory"));
    }
    expect_error([&] { d.allocate(0); }, errc::invalid_argument);
}

// Device memory in use as the driver (sysfs memory_used) or the simulator
// counts it: device buffers count while they live, host buffers never.
static void memory_used(void **) {
    Device d = open_dev();
    auto before = d.memory_used();
    assert_true(before.has_value());
    if (!d.info().device_memory_size)
        return;
    {
        Buffer b = d.allocate(1 << 20);
        assert_true(d.memory_used() == *before + b.size());
        Buffer h = d.allocate(1 << 20, Region::host);
        assert_true(d.memory_used() == *before + b.size());
    }
    assert_true(d.memory_used() == before);
}

static void pool(void **) {
    Device d = open_dev();
    SubAllocatorOptions o;
    o.chunk_size = 1 << 20;
    SubAllocator p(d, data_region(d), o);
    std::vector<Allocation> v;
    for (int i = 0; i < 100; i++) {
        v.push_back(p.allocate(4000 + i));
        std::memset(v.back().map().data(), i, v.back().size());
    }
    for (int i = 0; i < 100; i++)
        assert_int_equal(static_cast<int>(v[i].map()[100]), i);
    auto s = p.stats();
    assert_int_equal(s.chunks, 1);
    assert_int_equal(s.chunk_acquisitions, 1);
    assert_non_null(v[0].buffer());
    assert_true(v[0].range().buffer == v[1].range().buffer);
}

static void load(void **) {
    Device d = open_dev();
    ProgramBuilder b("consts");
    std::vector<float> w = pattern(256, 1.0f);
    b.constant("w", {256}, std::span<const float>(w));
    b.vector().nop();
    Program p = b.finish();
    LoadedProgram lp = d.load(p);
    auto img = p.device_image();
    std::vector<std::byte> got(img.size());
    lp.buffer().read(0, got);
    assert_memory_equal(got.data(), img.data(), img.size());
    std::vector<float> cw(256);
    lp.buffer().read(lp.const_offset(), std::as_writable_bytes(std::span(cw)));
    assert_memory_equal(cw.data(), w.data(), 1024);
}

// --- copy --------------------------------------------------------------------------

static void copies(void **) {
    Device d = open_dev();
    auto v = pattern(4096, 0.25f);
    Buffer host = d.allocate(v.size() * 4, Region::host);
    Buffer dev = d.allocate(v.size() * 4, data_region(d));
    Buffer back = d.allocate(v.size() * 4, Region::host);
    host.write(0, bytes_of(v));
    Fence up = d.copy(dev.range(0, v.size() * 4), host.range(0, v.size() * 4));
    Fence down = d.copy(back.range(0, v.size() * 4), dev.range(0, v.size() * 4), {up});
    assert_true(down.wait_for(30s));
    assert_true(up.wait_for(0s));
    std::vector<float> out(v.size());
    back.read(0, std::as_writable_bytes(std::span(out)));
    assert_memory_equal(out.data(), v.data(), v.size() * 4);
    assert_non_null(std::strstr(down.label().c_str(), "copy"));
    expect_error([&] { d.copy(dev.range(0, 8), host.range(0, 16)); }, errc::invalid_argument);
}

// A copy's fence knows when the copy completed, as a job's does.
static void copy_completion_time(void **) {
    Device d = open_dev();
    Buffer host = d.allocate(1 << 20, Region::host);
    Buffer dev = d.allocate(1 << 20, data_region(d));
    auto submitted = std::chrono::steady_clock::now();
    Fence up = d.copy(dev.range(), host.range());
    Fence down = d.copy(host.range(), dev.range(), {up});
    down.wait();
    auto waited = std::chrono::steady_clock::now();
    auto t_up = up.completed_at(), t_down = down.completed_at();
    assert_true(t_up.has_value() && t_down.has_value());
    assert_true(submitted <= *t_up);
    assert_true(*t_up <= *t_down);
    assert_true(*t_down <= waited);
}

// --- submit ------------------------------------------------------------------------

static void run_job(void **) {
    Device d = open_dev();
    const uint32_t n = 64;
    LoadedProgram lp = d.load(relu_program(n));
    auto x = pattern(128 * n, 0.5f);
    Buffer xb = d.allocate(x.size() * 4, data_region(d));
    Buffer yb = d.allocate(x.size() * 4, data_region(d));
    xb.write(0, bytes_of(x));
    Fence f = d.queue(0).submit(lp, Arguments().bind("x", xb).bind("y", yb));
    f.wait();
    check_relu(yb, x);
    assert_non_null(std::strstr(f.label().c_str(), "(program 'relu2x1') on core 0"));
}

static void many_in_flight(void **) {
    Device d = open_dev();
    const uint32_t n = 16;
    LoadedProgram lp = d.load(relu_program(n));
    SubAllocator pool(d, data_region(d));
    Queue q = d.queue(d.info().num_cores - 1);
    struct Job {
        Allocation x, y;
        std::vector<float> data;
        Fence f;
    };
    std::vector<Job> jobs(32);
    for (size_t j = 0; j < jobs.size(); j++) {
        Job &jb = jobs[j];
        jb.data = pattern(128 * n, 0.1f * static_cast<float>(j + 1));
        jb.x = pool.allocate(jb.data.size() * 4);
        jb.y = pool.allocate(jb.data.size() * 4);
        std::memcpy(jb.x.map().data(), jb.data.data(), jb.data.size() * 4);
        // Each job also waits for the previous one: a dependency chain.
        std::vector<Fence> deps;
        if (j)
            deps.push_back(jobs[j - 1].f);
        jb.f = q.submit(lp, Arguments().bind("x", jb.x).bind("y", jb.y), deps);
    }
    assert_true(jobs.back().f.wait_for(120s));
    for (auto &jb : jobs) {
        assert_true(jb.f.wait_for(0s));
        check_relu(*jb.y.buffer(), jb.data, jb.y.offset());
    }
}

// Queue::submit of many jobs at once: more than one SUBMIT_BATCH holds, so
// the jobs go in two calls; each computes its own result, in order.
static void batch(void **) {
    Device d = open_dev();
    const uint32_t n = 16;
    LoadedProgram lp = d.load(relu_program(n));
    SubAllocator pool(d, data_region(d));
    Queue q = d.queue(0);
    const size_t count = DRM_NEURON_MAX_BATCH + 6;
    std::vector<Allocation> xs(count), ys(count);
    std::vector<std::vector<float>> data(count);
    std::vector<Arguments> args(count);
    std::vector<Queue::Job> jobs;
    Fence before = q.submit(
        lp,
        Arguments().bind("x", pool.allocate(128 * n * 4)).bind("y", pool.allocate(128 * n * 4)));
    for (size_t j = 0; j < count; j++) {
        data[j] = pattern(128 * n, 0.05f * static_cast<float>(j + 1));
        xs[j] = pool.allocate(data[j].size() * 4);
        ys[j] = pool.allocate(data[j].size() * 4);
        std::memcpy(xs[j].map().data(), data[j].data(), data[j].size() * 4);
        args[j].bind("x", xs[j]).bind("y", ys[j]);
        jobs.push_back({lp, args[j], j == 0 ? std::vector<Fence>{before} : std::vector<Fence>{}});
    }
    std::vector<Fence> fences = q.submit(jobs);
    assert_int_equal(fences.size(), count);
    for (size_t j = 0; j < count; j++) {
        assert_true(fences[j].wait_for(120s));
        check_relu(*ys[j].buffer(), data[j], ys[j].offset());
        assert_non_null(std::strstr(fences[j].label().c_str(), "(program 'relu2x1') on core 0"));
        if (j)
            assert_true(fences[j].seqno() > fences[j - 1].seqno());
    }

    // A job libneuron rejects: none of the batch is queued.
    std::vector<float> zero(128 * n, 0.0f), y0(128 * n);
    std::memcpy(ys[0].map().data(), zero.data(), zero.size() * 4);
    Arguments unbound;
    unbound.bind("x", xs[1]);
    std::vector<Queue::Job> bad = {{lp, args[0]}, {lp, unbound}};
    auto e = expect_error([&] { q.submit(bad); }, errc::invalid_argument);
    assert_non_null(std::strstr(e.what(), "argument 'y' (out fp32, 8192 bytes) is not bound"));
    // Jobs of one queue run in order: had the first been queued, it ran by now.
    q.submit(lp, args[1]).wait();
    std::memcpy(y0.data(), ys[0].map().data(), y0.size() * 4);
    assert_memory_equal(y0.data(), zero.data(), zero.size() * 4);
}

// Fence::completed_at(): the time a job's fence signalled, on steady_clock's
// clock: after its submission and before its wait returned, a queue's jobs in
// their order, the same time when asked again; empty while the job runs;
// the job's error once it failed.
static void completion_time(void **) {
    Device d = open_dev();
    const uint32_t n = 64;
    LoadedProgram lp = d.load(relu_program(n));
    auto x = pattern(128 * n, 0.5f);
    Buffer xb = d.allocate(x.size() * 4, data_region(d));
    Buffer yb = d.allocate(x.size() * 4, data_region(d));
    Buffer zb = d.allocate(x.size() * 4, data_region(d));
    xb.write(0, bytes_of(x));
    Queue q = d.queue(0);
    auto submitted = std::chrono::steady_clock::now();
    Fence first = q.submit(lp, Arguments().bind("x", xb).bind("y", yb));
    Fence second = q.submit(lp, Arguments().bind("x", xb).bind("y", zb));
    second.wait();
    auto waited = std::chrono::steady_clock::now();
    assert_true(first.wait_for(0s));
    auto t1 = first.completed_at(), t2 = second.completed_at();
    assert_true(t1.has_value() && t2.has_value());
    assert_true(submitted <= *t1);
    assert_true(*t1 <= *t2);
    assert_true(*t2 <= waited);
    assert_true(second.completed_at() == t2);
    check_relu(zb, x);

    ProgramBuilder b("spin");
    auto top = b.vector().here();
    b.vector().nop().loop(top, 0); // until the job timeout
    Fence spin = q.submit(d.load(b.finish()), Arguments());
    assert_false(spin.completed_at().has_value());
    expect_error([&] { spin.wait(); }, errc::job_timeout);
    auto e = expect_error([&] { (void)spin.completed_at(); }, errc::job_timeout);
    assert_non_null(std::strstr(e.what(), "program 'spin'"));
    expect_error([] { (void)Fence().completed_at(); }, errc::invalid_argument);
}

static void argument_errors(void **) {
    Device d = open_dev();
    LoadedProgram lp = d.load(relu_program(16));
    Buffer small = d.allocate(4096, data_region(d));
    Buffer big = d.allocate(128 * 16 * 4, data_region(d));
    Queue q = d.queue(0);
    auto e =
        expect_error([&] { q.submit(lp, Arguments().bind("x", big)); }, errc::invalid_argument);
    assert_non_null(std::strstr(e.what(), "argument 'y' (out fp32, 8192 bytes) is not bound"));
    e = expect_error([&] { q.submit(lp, Arguments().bind("x", big).bind("y", small)); },
                     errc::invalid_argument);
    assert_non_null(std::strstr(e.what(), "argument 'y' (fp32) needs 8192 bytes"));
    e = expect_error([&] { q.submit(lp, Arguments().bind("z", big)); }, errc::invalid_argument);
    assert_non_null(std::strstr(e.what(), "has no argument 'z' (its arguments: x, y)"));
}

static void fault(void **) {
    Device d = open_dev();
    // Loads 1 MiB past the start of a binding that is only 4 KiB long.
    ProgramBuilder b("oob");
    auto x = b.argument("x", DType::fp32, {1024}, Direction::in);
    auto t = b.sbuf("t", DType::fp32, 16, 1);
    DramRef far = x.at(0, 0);
    far.offset = 1 << 20;
    b.sync().dma_load(t.tap(), far);
    LoadedProgram lp = d.load(b.finish());
    Buffer xb = d.allocate(4096, data_region(d));
    Fence f = d.queue(0).submit(lp, Arguments().bind("x", xb));
    auto e = expect_error([&] { f.wait(); }, errc::job_fault);
    assert_non_null(std::strstr(e.what(), "program 'oob'"));
    assert_non_null(std::strstr(e.what(), "fault"));
    assert_true(f.try_wait(0s) == errc::job_fault);
    // The core keeps working.
    run_job(nullptr);
}

static void timeout(void **) {
    Device d = open_dev();
    ProgramBuilder b("spin");
    auto top = b.vector().here();
    b.vector().nop().loop(top, 0); // forever
    LoadedProgram lp = d.load(b.finish());
    Fence f = d.queue(0).submit(lp, Arguments());
    assert_false(f.wait_for(10ms)); // still running: a wait timeout, not an error
    auto e = expect_error([&] { f.wait(); }, errc::job_timeout);
    assert_non_null(std::strstr(e.what(), "timeout"));
    run_job(nullptr);
}

// --- C API parity ------------------------------------------------------------------

static void capi(void **) {
    const uint32_t n = 32;
    Program prog = relu_program(n);
    auto bytes = prog.bytes();
    neuron_device *dev = nullptr;
    assert_int_equal(neuron_device_open(nullptr, &dev), NEURON_OK);
    neuron_device_info info;
    assert_int_equal(neuron_device_get_info(dev, &info), NEURON_OK);
    Device cxx = open_dev();
    assert_int_equal(info.num_cores, cxx.info().num_cores);
    assert_int_equal(info.device_memory_size, cxx.info().device_memory_size);
    assert_string_equal(info.pci_address, cxx.info().pci_address.c_str());
    uint64_t used = 0;
    assert_int_equal(neuron_device_memory_used(dev, &used), NEURON_OK);
    assert_true(cxx.memory_used() == used);
    neuron_program *p = nullptr;
    assert_int_equal(neuron_program_parse(bytes.data(), bytes.size(), &p), NEURON_OK);
    neuron_loaded_program *lp = nullptr;
    assert_int_equal(neuron_program_upload(dev, p, &lp), NEURON_OK);
    neuron_region r = info.device_memory_size ? NEURON_REGION_DEVICE : NEURON_REGION_HOST;
    neuron_pool *pool = nullptr;
    assert_int_equal(neuron_pool_create(dev, r, 0, 0, &pool), NEURON_OK);
    neuron_allocation *x = nullptr, *y = nullptr;
    assert_int_equal(neuron_pool_alloc(pool, 128 * n * 4, 0, &x), NEURON_OK);
    assert_int_equal(neuron_pool_alloc(pool, 128 * n * 4, 0, &y), NEURON_OK);
    uint64_t xoff, yoff;
    const neuron_buffer *xb = neuron_allocation_buffer(x, &xoff, nullptr);
    const neuron_buffer *yb = neuron_allocation_buffer(y, &yoff, nullptr);
    void *xm, *ym;
    assert_int_equal(neuron_buffer_map(xb, &xm, nullptr), NEURON_OK);
    assert_int_equal(neuron_buffer_map(yb, &ym, nullptr), NEURON_OK);
    auto data = pattern(128 * n, 0.3f);
    std::memcpy(static_cast<char *>(xm) + xoff, data.data(), data.size() * 4);
    neuron_queue *q = nullptr;
    assert_int_equal(neuron_queue_create(dev, 0, &q), NEURON_OK);
    neuron_job_arg args[2] = {{"x", nullptr, x, 0, 0}, {"y", nullptr, y, 0, 0}};
    auto monotonic_ns = [] {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    };
    neuron_fence *f = nullptr;
    int64_t submitted = monotonic_ns();
    assert_int_equal(neuron_submit(q, lp, args, 2, nullptr, 0, &f), NEURON_OK);
    assert_int_equal(neuron_fence_wait(f, -1), NEURON_OK);
    int64_t waited = monotonic_ns(), completed = 0;
    assert_int_equal(neuron_fence_completed_at(f, &completed), NEURON_OK);
    assert_true(submitted <= completed && completed <= waited);
    assert_int_equal(neuron_fence_completed_at(f, nullptr), NEURON_ERR_INVALID_ARGUMENT);
    const float *out = reinterpret_cast<const float *>(static_cast<char *>(ym) + yoff);
    for (size_t i = 0; i < data.size(); i++)
        assert_true(std::fabs(out[i] - std::max(0.0f, data[i] * 2 + 1)) < 1e-6f);
    // Same error, same message as C++.
    neuron_job_arg missing[1] = {{"x", nullptr, x, 0, 0}};
    neuron_fence *f2 = nullptr;
    assert_int_equal(neuron_submit(q, lp, missing, 1, nullptr, 0, &f2),
                     NEURON_ERR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(neuron_last_error(), "argument 'y' (out fp32"));
    // A batch: the second job waits for the first; a bad job fails it all.
    std::memset(static_cast<char *>(ym) + yoff, 0, 128 * n * 4);
    const neuron_fence *first_dep[1] = {f};
    neuron_batch_job batch[2] = {{lp, args, 2, first_dep, 1}, {lp, args, 2, nullptr, 0}};
    neuron_fence *fb[2] = {nullptr, nullptr};
    assert_int_equal(neuron_submit_batch(q, batch, 2, fb), NEURON_OK);
    assert_int_equal(neuron_fence_wait(fb[1], -1), NEURON_OK);
    assert_int_equal(neuron_fence_wait(fb[0], 0), NEURON_OK);
    for (size_t i = 0; i < data.size(); i++)
        assert_true(std::fabs(out[i] - std::max(0.0f, data[i] * 2 + 1)) < 1e-6f);
    batch[1].args = missing;
    batch[1].num_args = 1;
    neuron_fence *fbad[2] = {nullptr, nullptr};
    assert_int_equal(neuron_submit_batch(q, batch, 2, fbad), NEURON_ERR_INVALID_ARGUMENT);
    assert_null(fbad[0]);
    assert_non_null(std::strstr(neuron_last_error(), "argument 'y' (out fp32"));
    assert_int_equal(neuron_submit_batch(q, nullptr, 1, fbad), NEURON_ERR_INVALID_ARGUMENT);
    neuron_fence_destroy(fb[0]);
    neuron_fence_destroy(fb[1]);
    neuron_fence_destroy(f);
    neuron_allocation_free(x);
    neuron_allocation_free(y);
    neuron_pool_destroy(pool);
    neuron_queue_destroy(q);
    neuron_loaded_program_destroy(lp);
    neuron_program_destroy(p);
    neuron_device_close(dev);
}

// --- profile -----------------------------------------------------------------------

namespace {

/// A core's counter as the driver (sysfs) or the simulator shows it.
uint64_t core_counter(const Device &d, unsigned core, const char *name) {
    const auto &s = *d.state();
    std::string v = s.os->read_line(s.telemetry_dir + "core" + std::to_string(core) + "/" + name);
    if (v.empty())
        fail_msg("%s: no counter core%u/%s", d.path().c_str(), core, name);
    return std::stoull(v);
}

} // namespace

static void profile_job(void **) {
    Device d = open_dev();
    assert_true(d.info().has(cap_profile));
    const uint32_t n = 64;
    LoadedProgram lp = d.load(relu_program(n));
    auto x = pattern(128 * n, 0.5f);
    Buffer xb = d.allocate(x.size() * 4, data_region(d));
    Buffer yb = d.allocate(x.size() * 4, data_region(d));
    xb.write(0, bytes_of(x));
    Queue q = d.queue(0);

    uint64_t i0 = core_counter(d, 0, "instructions");
    q.submit(lp, Arguments().bind("x", xb).bind("y", yb)).wait();
    uint64_t plain_instr = core_counter(d, 0, "instructions") - i0;
    check_relu(yb, x);

    yb.write(0, bytes_of(std::vector<float>(x.size(), -1.0f)));
    Profile prof(d);
    i0 = core_counter(d, 0, "instructions");
    uint64_t b0 = core_counter(d, 0, "dma_bytes");
    q.submit(lp, Arguments().bind("x", xb).bind("y", yb), prof).wait();
    uint64_t instr = core_counter(d, 0, "instructions") - i0;
    uint64_t dma = core_counter(d, 0, "dma_bytes") - b0;
    check_relu(yb, x); // the same results

    Trace t = prof.read();
    assert_int_equal(t.status, 0);
    assert_false(t.truncated());
    assert_int_equal(instr, plain_instr);
    assert_int_equal(t.instructions, instr);
    assert_int_equal(t.records.size(), instr);
    assert_int_equal(t.dma_bytes, dma);
    assert_int_equal(dma, 2ull * 128 * n * 4);
    uint64_t bytes = 0, last = 0, waits = 0;
    for (const auto &r : t.records) {
        bytes += r.bytes;
        last = std::max(last, r.end);
        if (r.opcode == NEURON_OP_SEM_WAIT) {
            assert_true(r.has_signal);
            assert_int_equal(t.records[r.signal].opcode, NEURON_OP_SEM_SIGNAL);
            assert_int_equal(t.records[r.signal].sem, r.sem);
            waits++;
        }
    }
    assert_int_equal(bytes, dma);
    assert_int_equal(last, t.cycles);
    assert_int_equal(waits, 2);
    assert_int_equal(t.sbuf_high, 2 * n * 4);
}

static void profile_truncated(void **) {
    Device d = open_dev();
    const uint32_t n = 16;
    LoadedProgram lp = d.load(relu_program(n));
    auto x = pattern(128 * n, 0.25f);
    Buffer xb = d.allocate(x.size() * 4, data_region(d));
    Buffer yb = d.allocate(x.size() * 4, data_region(d));
    xb.write(0, bytes_of(x));
    Profile prof(d, 3);
    d.queue(0).submit(lp, Arguments().bind("x", xb).bind("y", yb), prof).wait();
    check_relu(yb, x); // a full trace never fails the job
    Trace t = prof.read();
    assert_true(t.truncated());
    assert_int_equal(t.records.size(), 3);
    assert_true(t.instructions > 3);
    expect_error([&] { Profile(d, 0); }, errc::invalid_argument);
}

static void profile_capi(void **) {
    neuron_device *dev = nullptr;
    assert_int_equal(neuron_device_open(nullptr, &dev), NEURON_OK);
    neuron_device_info info;
    assert_int_equal(neuron_device_get_info(dev, &info), NEURON_OK);
    assert_true(info.capabilities & NEURON_CAP_PROFILE_BIT);
    Program p = relu_program(16);
    neuron_program *np = nullptr;
    assert_int_equal(neuron_program_parse(p.bytes().data(), p.bytes().size(), &np), NEURON_OK);
    neuron_loaded_program *lp = nullptr;
    assert_int_equal(neuron_program_upload(dev, np, &lp), NEURON_OK);
    neuron_buffer *xb = nullptr, *yb = nullptr;
    neuron_region region = info.device_memory_size ? NEURON_REGION_DEVICE : NEURON_REGION_HOST;
    assert_int_equal(neuron_buffer_create(dev, 128 * 16 * 4, region, 0, &xb), NEURON_OK);
    assert_int_equal(neuron_buffer_create(dev, 128 * 16 * 4, region, 0, &yb), NEURON_OK);
    neuron_queue *q = nullptr;
    assert_int_equal(neuron_queue_create(dev, 0, &q), NEURON_OK);
    neuron_profile *prof = nullptr;
    assert_int_equal(neuron_profile_create(dev, 0, &prof), NEURON_OK);
    neuron_job_arg args[2] = {{"x", xb, nullptr, 0, 0}, {"y", yb, nullptr, 0, 0}};
    neuron_fence *f = nullptr;
    assert_int_equal(neuron_submit_profiled(q, lp, args, 2, nullptr, 0, prof, &f), NEURON_OK);
    assert_int_equal(neuron_fence_wait(f, -1), NEURON_OK);
    neuron_trace_info ti;
    assert_int_equal(neuron_profile_info(prof, &ti), NEURON_OK);
    assert_int_equal(ti.status, 0);
    assert_int_equal(ti.records, ti.instructions);
    assert_int_equal(ti.dma_bytes, 2 * 128 * 16 * 4);
    size_t size = 0;
    assert_int_equal(neuron_profile_trace(prof, nullptr, 0, &size), NEURON_ERR_INVALID_ARGUMENT);
    assert_int_equal(size, 64 + 48 * ti.records);
    std::vector<std::byte> raw(size);
    assert_int_equal(neuron_profile_trace(prof, raw.data(), raw.size(), &size), NEURON_OK);
    assert_int_equal(parse_trace(raw).cycles, ti.cycles);
    neuron_fence *none = nullptr;
    assert_int_equal(neuron_submit_profiled(q, lp, args, 2, nullptr, 0, nullptr, &none),
                     NEURON_ERR_INVALID_ARGUMENT);
    neuron_fence_destroy(f);
    neuron_profile_destroy(prof);
    neuron_queue_destroy(q);
    neuron_buffer_destroy(xb);
    neuron_buffer_destroy(yb);
    neuron_loaded_program_destroy(lp);
    neuron_program_destroy(np);
    neuron_device_close(dev);
}

// $NEURON_PROFILE: every job submitted is profiled into the file.
static void profile_env(void **) {
    auto path = std::filesystem::temp_directory_path() /
                ("neuron-profile-env-" + std::to_string(::getpid()) + ".ntrace");
    std::filesystem::remove(path);
    // libneuron reads $NEURON_PROFILE when it opens a device.
    Device before = open_dev();
    setenv(ntrace::env_file, path.c_str(), 1);
    Device d = open_dev();
    unsetenv(ntrace::env_file);
    const uint32_t n = 16;
    LoadedProgram lp = d.load(relu_program(n));
    auto x = pattern(128 * n, 0.25f);
    Buffer xb = d.allocate(x.size() * 4, data_region(d));
    Buffer yb = d.allocate(x.size() * 4, data_region(d));
    xb.write(0, bytes_of(x));
    uint64_t seqno[2];
    for (int i = 0; i < 2; i++) {
        Fence f = d.queue(0).submit(lp, Arguments().bind("x", xb).bind("y", yb));
        f.wait();
        seqno[i] = f.seqno();
    } // each trace is written when the last handle of its fence goes
    {
        // Opened before $NEURON_PROFILE was set: not profiled.
        LoadedProgram lp0 = before.load(relu_program(n));
        Buffer x0 = before.allocate(x.size() * 4, data_region(before));
        Buffer y0 = before.allocate(x.size() * 4, data_region(before));
        before.queue(0).submit(lp0, Arguments().bind("x", x0).bind("y", y0)).wait();
    }
    check_relu(yb, x);
    auto jobs = ntrace::read(path);
    std::filesystem::remove(path);
    assert_int_equal(jobs.size(), 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(jobs[i].seqno, seqno[i]);
        assert_int_equal(jobs[i].core, 0);
        assert_int_equal(jobs[i].pid, ::getpid());
        assert_int_equal(jobs[i].clock_mhz, d.info().core_clock_mhz);
        assert_string_equal(jobs[i].program.name().c_str(), "relu2x1");
        Trace t = parse_trace(jobs[i].trace);
        assert_int_equal(t.records.size(), t.instructions);
        assert_int_equal(t.dma_bytes, 2 * 128 * n * 4);
    }
}

// A test that throws fails with the exception's message instead of aborting.
template <void (*F)(void **)> void guarded(void **state) {
    try {
        F(state);
    } catch (const std::exception &e) {
        fail_msg("%s", e.what());
    }
}
// --- collectives (two devices: NEURON_SIM_OPTIONS=devices=2, or --devices 2) ----------

// Devices 0 and 1 of enumerate(): the simulator's two, or neuron.ko's.
std::pair<Device, Device> two_devices() {
    auto devs = enumerate();
    if (devs.size() < 2)
        fail_msg("the collectives group needs two devices, there are %zu", devs.size());
    return {Device::open(devs[0].index), Device::open(devs[1].index)};
}

// A buffer of device 0 copied to device 1 and back (dma-bufs where the
// driver exports them, else staged through host memory), the second copy
// ordered after a fence of the other device.
static void cross_device(void **) {
    auto [a, b] = two_devices();
    assert_string_not_equal(a.info().pci_address.c_str(), b.info().pci_address.c_str());
    auto v = pattern(3000, 0.5f);
    const uint64_t n = v.size() * 4;
    Buffer src = a.allocate(n, data_region(a)), dst = b.allocate(n, data_region(b));
    Buffer back = a.allocate(n, Region::host), host = a.allocate(n, Region::host);
    host.write(0, bytes_of(v));
    Fence up = a.copy(src.range(0, n), host.range(0, n));
    Fence over = b.copy(dst.range(0, n), src.range(0, n), {up});
    Fence home = a.copy(back.range(0, n), dst.range(0, n), {over});
    assert_true(home.wait_for(60s));
    std::vector<float> out(v.size());
    back.read(0, std::as_writable_bytes(std::span(out)));
    assert_memory_equal(out.data(), v.data(), n);
}

// all_reduce and all_gather over every core of both devices.
static void collectives(void **) {
    auto [a, b] = two_devices();
    std::vector<Rank> ranks;
    for (const Device *d : {&a, &b})
        for (unsigned c = 0; c < std::min(d->info().num_cores, 2u); c++)
            ranks.push_back({*d, c});
    const auto nr = static_cast<unsigned>(ranks.size());
    CommunicatorOptions o;
    o.chunk_bytes = 1024; // several pieces per segment
    o.timeout = 120s;
    Communicator comm(ranks, o);
    const size_t count = 1001;
    std::vector<Buffer> buf, all;
    for (unsigned r = 0; r < nr; r++) {
        buf.push_back(ranks[r].device.allocate(count * 4));
        all.push_back(ranks[r].device.allocate(nr * count * 4));
        buf[r].write(0, bytes_of(pattern(count, static_cast<float>(r + 1))));
    }
    std::vector<Work> w;
    for (unsigned r = 0; r < nr; r++)
        w.push_back(comm.all_reduce(r, buf[r].range(0, count * 4), buf[r].range(0, count * 4),
                                    count, DType::fp32, CollectiveOp::sum));
    for (auto &x : w)
        x.wait();
    w.clear();
    for (unsigned r = 0; r < nr; r++)
        w.push_back(comm.all_gather(r, buf[r].range(0, count * 4), all[r].range(0, nr * count * 4),
                                    count, DType::fp32));
    for (auto &x : w)
        x.wait();
    // Every rank: (1 + ... + nr) * pattern(1), nr times over.
    auto want = pattern(count, static_cast<float>(nr * (nr + 1) / 2));
    for (unsigned r = 0; r < nr; r++) {
        std::vector<float> out(nr * count);
        all[r].read(0, std::as_writable_bytes(std::span(out)));
        for (unsigned q = 0; q < nr; q++)
            assert_memory_equal(out.data() + q * count, want.data(), count * 4);
    }
}

#undef cmocka_unit_test
#define cmocka_unit_test(f)                                                                        \
    { #f, guarded < f>, nullptr, nullptr, nullptr }

int main(int argc, char **argv) {
    std::string group = argc > 1 ? argv[1] : "device";
    const struct CMUnitTest device_tests[] = {
        cmocka_unit_test(device_info), cmocka_unit_test(buffers), cmocka_unit_test(memory_used),
        cmocka_unit_test(pool), cmocka_unit_test(load)};
    const struct CMUnitTest copy_tests[] = {cmocka_unit_test(copies),
                                            cmocka_unit_test(copy_completion_time)};
    const struct CMUnitTest submit_tests[] = {
        cmocka_unit_test(run_job),         cmocka_unit_test(many_in_flight),
        cmocka_unit_test(batch),           cmocka_unit_test(completion_time),
        cmocka_unit_test(argument_errors), cmocka_unit_test(fault),
        cmocka_unit_test(timeout)};
    const struct CMUnitTest capi_tests[] = {cmocka_unit_test(capi)};
    const struct CMUnitTest profile_tests[] = {
        cmocka_unit_test(profile_job), cmocka_unit_test(profile_truncated),
        cmocka_unit_test(profile_capi), cmocka_unit_test(profile_env)};
    if (group == "device")
        return cmocka_run_group_tests_name("libneuron.device", device_tests, nullptr, nullptr);
    if (group == "copy")
        return cmocka_run_group_tests_name("libneuron.copy", copy_tests, nullptr, nullptr);
    if (group == "submit")
        return cmocka_run_group_tests_name("libneuron.submit", submit_tests, nullptr, nullptr);
    if (group == "capi")
        return cmocka_run_group_tests_name("libneuron.capi", capi_tests, nullptr, nullptr);
    const struct CMUnitTest collective_tests[] = {cmocka_unit_test(cross_device),
                                                  cmocka_unit_test(collectives)};
    if (group == "profile")
        return cmocka_run_group_tests_name("libneuron.profile", profile_tests, nullptr, nullptr);
    if (group == "collectives")
        return cmocka_run_group_tests_name("libneuron.collectives", collective_tests, nullptr,
                                           nullptr);
    std::fprintf(stderr, "usage: %s device|copy|submit|capi|profile|collectives\n", argv[0]);
    return 2;
}
