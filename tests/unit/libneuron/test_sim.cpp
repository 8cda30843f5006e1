// SPDX-License-Identifier: MIT
// The simulator device (libneuron-sim.so): its options, neuron.ko's checks
// and errno for bad UAPI arguments, host-memory bindings, cores running
// concurrently, timeouts, counters, a zero-stride (broadcast) DMA read, and
// a large MATMUL split over a core's host threads.
// The library's own device tests run on it too (unit.sim.libneuron.*).
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

#include <linux/sync_file.h>

#include "device_state.hpp"
#include "neuron_accel_check_cases.h"
#include "relu_program.hpp"
#include "testutil.hpp"

using namespace neuron;
using namespace std::chrono_literals;
using ::test::expect_error;

namespace {

int raw(const Device &d, unsigned long req, void *arg) {
    return d.state()->os->ioctl(d.fd(), req, arg);
}

uint64_t counter(const Device &d, const std::string &name) {
    return std::strtoull(d.state()->os->read_line(name).c_str(), nullptr, 10);
}

Program relu(uint32_t n) {
    ProgramBuilder b("relu2x1");
    neuron::test::add_relu2x1(b, n);
    return b.finish();
}

void run_relu(const Device &d, unsigned core, Region region) {
    const uint32_t n = 16;
    LoadedProgram lp = d.load(relu(n));
    Buffer x = d.allocate(128 * n * 4, region), y = d.allocate(128 * n * 4, region);
    std::vector<float> xv(128 * n);
    for (size_t i = 0; i < xv.size(); i++)
        xv[i] = static_cast<float>(i % 9) - 4.0f;
    x.write(0, std::as_bytes(std::span(xv)));
    d.queue(core).submit(lp, Arguments().bind("x", x).bind("y", y)).wait();
    std::vector<float> yv(xv.size());
    y.read(0, std::as_writable_bytes(std::span(yv)));
    for (size_t i = 0; i < xv.size(); i++)
        assert_true(std::fabs(yv[i] - std::max(0.0f, 2 * xv[i] + 1)) < 1e-6f);
}

} // namespace

namespace {

// y[128, 512] = w[128, 128]^T x[128, 512]: one MATMUL of 8 M multiply-adds,
// large enough for the model to split over a core's threads.
Program matmul_512() {
    ProgramBuilder b("matmul512");
    auto x = b.argument("x", DType::fp32, {128, 512}, Direction::in);
    auto w = b.argument("w", DType::fp32, {128, 128}, Direction::in);
    auto y = b.argument("y", DType::fp32, {128, 512}, Direction::out);
    auto xs = b.sbuf("x_tile", DType::fp32, 512);
    auto ws = b.sbuf("w_tile", DType::fp32, 128);
    auto ys = b.sbuf("y_tile", DType::fp32, 512);
    auto acc = b.psum("acc", DType::fp32, 512);
    auto loaded = b.semaphore("loaded"), multiplied = b.semaphore("multiplied"),
         copied = b.semaphore("copied");
    b.sync()
        .dma_load(xs.tap(), x.at(0, 512 * 4))
        .dma_load(ws.tap(), w.at(0, 128 * 4))
        .signal(loaded, 1)
        .wait(copied, 1)
        .dma_store(y.at(0, 512 * 4), ys.tap());
    b.tensor().wait(loaded, 1).matmul(acc.tap(), ws.tap(), xs.tap()).signal(multiplied, 1);
    b.vector().wait(multiplied, 1).copy(ys.tap(), acc.tap()).signal(copied, 1);
    return b.finish();
}

} // namespace

// The same bits whatever the number of threads per core, and within the
// ISA's MATMUL tolerance of a double-precision product.
static void split_matmul(void **) {
    std::vector<float> x(128 * 512), w(128 * 128);
    for (size_t i = 0; i < x.size(); i++)
        x[i] = static_cast<float>(static_cast<int>(i * 7919 % 201) - 100) / 37.0f;
    for (size_t i = 0; i < w.size(); i++)
        w[i] = static_cast<float>(static_cast<int>(i * 104729 % 151) - 75) / 53.0f;
    std::vector<std::vector<float>> results;
    for (const char *spec : {"sim:threads=1", "sim:threads=2", "sim:threads=4"}) {
        Device d = Device::open(spec);
        LoadedProgram lp = d.load(matmul_512());
        Buffer xb = d.allocate(x.size() * 4), wb = d.allocate(w.size() * 4),
               yb = d.allocate(x.size() * 4);
        xb.write(0, std::as_bytes(std::span(x)));
        wb.write(0, std::as_bytes(std::span(w)));
        d.queue(0).submit(lp, Arguments().bind("x", xb).bind("w", wb).bind("y", yb)).wait();
        std::vector<float> y(x.size());
        yb.read(0, std::as_writable_bytes(std::span(y)));
        results.push_back(std::move(y));
    }
    for (size_t r = 1; r < results.size(); r++)
        assert_memory_equal(results[r].data(), results[0].data(), results[0].size() * 4);
    for (size_t m = 0; m < 128; m++)
        for (size_t n = 0; n < 512; n++) {
            double want = 0, magnitude = 0;
            for (size_t k = 0; k < 128; k++) {
                want += double(w[k * 128 + m]) * x[k * 512 + n];
                magnitude += std::fabs(double(w[k * 128 + m]) * x[k * 512 + n]);
            }
            assert_true(std::fabs(results[0][m * 512 + n] - want) <= 1e-5 * magnitude + 1e-6);
        }
    std::string m = expect_error([] { Device::open("sim:threads=5"); }, errc::invalid_argument);
    assert_non_null(std::strstr(m.c_str(), "option threads=5: must be 1..4"));
}

static void options(void **) {
    Device d = Device::open("sim:cores=3,dma=1,mem=64M,sbuf=1M,psum=512K");
    assert_int_equal(d.info().num_cores, 3);
    assert_int_equal(d.info().num_dma_engines, 1);
    assert_int_equal(d.info().device_memory_size, 64 << 20);
    assert_int_equal(d.info().sbuf_size, 1 << 20);
    assert_int_equal(d.info().psum_size, 512 << 10);
    assert_int_equal(d.info().vendor_id, 0x1d0f);
    assert_string_equal(d.path().c_str(), "sim:cores=3,dma=1,mem=64M,sbuf=1M,psum=512K");
    assert_true(is_sim_spec("sim") && is_sim_spec("sim:cores=1") && !is_sim_spec("simple"));
    std::string m = expect_error([] { Device::open("sim:color=blue"); }, errc::invalid_argument);
    assert_non_null(std::strstr(m.c_str(), "unknown option 'color'"));
    m = expect_error([] { Device::open("sim:cores=99"); }, errc::invalid_argument);
    assert_non_null(std::strstr(m.c_str(), "option cores=99: must be 1..16"));
    setenv("NEURON_SIM_OPTIONS", "cores=4", 1);
    assert_int_equal(Device::open("sim").info().num_cores, 4);
    setenv("NEURON_DEVICE", "sim", 1);
    assert_int_equal(Device::open_first().info().num_cores, 4);
    auto devs = enumerate();
    assert_int_equal(devs.size(), 1);
    assert_string_equal(devs[0].node.c_str(), "sim");
    unsetenv("NEURON_DEVICE");
    unsetenv("NEURON_SIM_OPTIONS");
    // One simulated device per option string, shared by its opens.
    Device a = Device::open("sim:mem=8M"), b = Device::open("sim:mem=8M");
    Buffer buf = a.allocate(4 << 20);
    expect_error([&] { b.allocate(6 << 20); }, errc::out_of_device_memory);
}

// neuron.ko's checks, errno for errno (uapi/drm/neuron_accel.h).
static void uapi_errnos(void **) {
    Device d = Device::open("sim:cores=2,host_bindings=0");
    drm_neuron_bo_create c{};
    assert_int_equal(raw(d, DRM_IOCTL_NEURON_BO_CREATE, &c), EINVAL); // zero size
    c.size = 4096;
    c.region = 2;
    assert_int_equal(raw(d, DRM_IOCTL_NEURON_BO_CREATE, &c), EINVAL);
    c.region = DRM_NEURON_BO_DEVICE;
    c.flags = 2;
    assert_int_equal(raw(d, DRM_IOCTL_NEURON_BO_CREATE, &c), EINVAL);
    c.flags = 0;
    c.pad = 1;
    assert_int_equal(raw(d, DRM_IOCTL_NEURON_BO_CREATE, &c), EINVAL);
    c.pad = 0;
    c.size = 1ull << 40;
    assert_int_equal(raw(d, DRM_IOCTL_NEURON_BO_CREATE, &c), ENOSPC);
    drm_neuron_bo_info info{};
    info.handle = 999;
    assert_int_equal(raw(d, DRM_IOCTL_NEURON_BO_INFO, &info), ENOENT);
    drm_neuron_get_param gp{};
    gp.param = DRM_NEURON_PARAM_COUNT;
    assert_int_equal(raw(d, DRM_IOCTL_NEURON_GET_PARAM, &gp), EINVAL);

    // Host memory without DRM_NEURON_CAP_HOST_BINDINGS, as a binding and
    // as the program (the other SUBMIT and COPY errors: check_table).
    Buffer buf = d.allocate(8192), host = d.allocate(4096, Region::host);
    drm_syncobj_create sc{};
    assert_int_equal(raw(d, DRM_IOCTL_SYNCOBJ_CREATE, &sc), 0);
    drm_neuron_binding bind{host.handle(), DRM_NEURON_BIND_READ, 0, 4096, 0};
    drm_neuron_submit s{};
    s.program_handle = buf.handle();
    s.program_size = 64;
    s.num_bindings = 1;
    s.bindings = reinterpret_cast<uintptr_t>(&bind);
    s.out_sync.handle = sc.handle;
    assert_int_equal(raw(d, DRM_IOCTL_NEURON_SUBMIT, &s), EOPNOTSUPP);
    bind.handle = buf.handle();
    s.program_handle = host.handle();
    assert_int_equal(raw(d, DRM_IOCTL_NEURON_SUBMIT, &s), EOPNOTSUPP);
    s.program_handle = buf.handle();
    assert_int_equal(raw(d, DRM_IOCTL_NEURON_SUBMIT, &s), 0);
    // The library reports the same through neuron::Error.
    std::string m = expect_error([&] { run_relu(d, 0, Region::host); }, errc::not_supported);
    assert_non_null(std::strstr(m.c_str(), "cannot bind host memory"));
}

// The table of bad COPY, SUBMIT and SUBMIT_BATCH arguments that KUnit runs
// against neuron.ko's checks and neuron-exec-test ("args") against
// neuron.ko (uapi/neuron_accel_check_cases.h): the simulator returns each
// case's errno, several faults in one call included.
static void check_table(void **) {
    Device d = Device::open("sim");
    Buffer src = d.allocate(8192), dst = d.allocate(8192, Region::host), prog = d.allocate(4096),
           in = d.allocate(4096), out = d.allocate(4096, Region::host);
    uint32_t syncobjs[2];
    for (uint32_t &h : syncobjs) {
        drm_syncobj_create sc{};
        assert_int_equal(raw(d, DRM_IOCTL_SYNCOBJ_CREATE, &sc), 0);
        h = sc.handle;
    }
    neuron_check_args base{};
    base.copy.src_handle = src.handle();
    base.copy.dst_handle = dst.handle();
    base.copy.size = 4096;
    base.copy.engine = DRM_NEURON_ENGINE_ANY;
    base.copy.out_sync.handle = syncobjs[0];
    base.submit.program_handle = prog.handle();
    base.submit.program_size = 64;
    base.submit.num_bindings = 2;
    base.submit.out_sync.handle = syncobjs[0];
    base.batch.count = 1;
    base.bindings[0] = {in.handle(), DRM_NEURON_BIND_READ, 0, 4096, 0};
    base.bindings[1] = {out.handle(), DRM_NEURON_BIND_WRITE, 0, 4096, 0};
    base.fenceless = syncobjs[1];
    base.copy_bo_size = 8192;
    base.program_bo_size = 4096;
    base.limits.num_cores = d.info().num_cores;
    base.limits.num_dma = d.info().num_dma_engines;
    drm_neuron_get_param gp{};
    gp.param = DRM_NEURON_PARAM_MAX_BINDINGS;
    assert_int_equal(raw(d, DRM_IOCTL_NEURON_GET_PARAM, &gp), 0);
    base.limits.max_bindings = static_cast<uint32_t>(gp.value);
    base.limits.trace_size = 64; // uapi/drm/neuron_accel.h, DRM_NEURON_SUBMIT_F_PROFILE
    gp.param = DRM_NEURON_PARAM_CAPABILITIES;
    assert_int_equal(raw(d, DRM_IOCTL_NEURON_GET_PARAM, &gp), 0);
    base.limits.caps = gp.value;
    const struct {
        unsigned long request;
        const char *name;
    } ioctls[] = {{DRM_IOCTL_NEURON_COPY, "COPY"},
                  {DRM_IOCTL_NEURON_SUBMIT, "SUBMIT"},
                  {DRM_IOCTL_NEURON_SUBMIT_BATCH, "SUBMIT_BATCH"}};
    for (const neuron_check_case &c : neuron_check_cases) {
        auto a = std::make_unique<neuron_check_args>(base);
        a->submit.bindings = reinterpret_cast<uintptr_t>(a->bindings);
        a->batch.submits = reinterpret_cast<uintptr_t>(&a->submit);
        a->in_syncs_ptr = reinterpret_cast<uintptr_t>(a->in_syncs);
        c.edit(a.get());
        void *arg = c.ioctl == NEURON_CHECK_COPY     ? static_cast<void *>(&a->copy)
                    : c.ioctl == NEURON_CHECK_SUBMIT ? static_cast<void *>(&a->submit)
                                                     : static_cast<void *>(&a->batch);
        int err = -raw(d, ioctls[c.ioctl].request, arg);
        if (err != c.err)
            fail_msg("%s, %s: errno %d, not %d", ioctls[c.ioctl].name, c.name, -err, -c.err);
        int early = neuron_check_early(a.get(), c.ioctl);
        if (early != (c.early ? c.err : 0))
            fail_msg("%s, %s: the early checks return %d", ioctls[c.ioctl].name, c.name, early);
    }
}

static void host_bindings(void **) {
    Device d = Device::open("sim");
    assert_true(d.info().has(cap_host_bindings));
    run_relu(d, 0, Region::host);
    run_relu(d, 1, Region::device);
}

// A job that spins on core 0 does not hold up core 1; it times out, its
// core is reset and counted, and the core runs the next job.
static void cores_and_timeouts(void **) {
    Device d = Device::open("sim:timeout_ms=300");
    ProgramBuilder b("spin");
    auto top = b.vector().here();
    b.vector().nop().loop(top, 0);
    LoadedProgram spin = d.load(b.finish());
    uint64_t jobs1 = counter(d, "core1/jobs");
    auto t0 = std::chrono::steady_clock::now();
    Fence f = d.queue(0).submit(spin, Arguments());
    run_relu(d, 1, Region::device);
    assert_true(std::chrono::steady_clock::now() - t0 < 300ms);
    assert_false(f.wait_for(0s));
    std::string m = expect_error([&] { f.wait(); }, errc::job_timeout);
    assert_non_null(std::strstr(
        m.c_str(), "job 1 (program 'spin') on core 0 of sim:timeout_ms=300 failed: timeout"));
    assert_true(std::chrono::steady_clock::now() - t0 >= 300ms);
    assert_int_equal(counter(d, "core0/timeouts"), 1);
    assert_int_equal(counter(d, "core0/resets"), 1);
    assert_int_equal(counter(d, "core1/jobs"), jobs1 + 1);
    assert_true(counter(d, "core1/instructions") > 0);
    run_relu(d, 0, Region::device);
}

// Timeline points behave as neuron.ko's drm_syncobj and dma_fence_chain:
// a point is reached when its job and every earlier point's have ended,
// WAIT reports the point's own job, a passed point is collected, and a
// binary signal replaces the timeline. exec_test's `timeline` makes the
// same calls against the driver; the spinning job's checks are this test's.
static void timeline_points(void **) {
    Device d = Device::open("sim:timeout_ms=1000");
    ProgramBuilder sb("spin");
    auto top = sb.vector().here();
    sb.vector().nop().loop(top, 0);
    LoadedProgram spin = d.load(sb.finish()), faulting = d.load(relu(16));
    Buffer src = d.allocate(4096), dst = d.allocate(4096);
    drm_syncobj_create sc{};
    assert_int_equal(raw(d, DRM_IOCTL_SYNCOBJ_CREATE, &sc), 0);
    const uint32_t tl = sc.handle;
    int status = 0;
    auto wait = [&](uint64_t point, int64_t timeout_ms) {
        drm_neuron_wait w{};
        w.sync = {tl, 0, point};
        auto deadline = std::chrono::steady_clock::now() + timeout_ms * 1ms;
        w.timeout_nsec =
            std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch())
                .count();
        w.status = 12345;
        int e = raw(d, DRM_IOCTL_NEURON_WAIT, &w);
        status = w.status;
        return e;
    };
    auto copy = [&](uint64_t point, const drm_neuron_sync *in = nullptr) {
        drm_neuron_copy c{};
        c.src_handle = src.handle();
        c.dst_handle = dst.handle();
        c.size = 4096;
        c.engine = DRM_NEURON_ENGINE_ANY;
        c.in_syncs = reinterpret_cast<uintptr_t>(in);
        c.num_in_syncs = in ? 1 : 0;
        c.out_sync = {tl, 0, point};
        return raw(d, DRM_IOCTL_NEURON_COPY, &c);
    };
    // x and y bound to 4 KiB where relu(16) reads and writes 8 KiB: a fault.
    drm_neuron_binding bind[2] = {{src.handle(), DRM_NEURON_BIND_READ, 0, 4096, 0},
                                  {dst.handle(), DRM_NEURON_BIND_WRITE, 0, 4096, 0}};
    auto submit = [&](const LoadedProgram &lp, uint64_t point) {
        drm_neuron_submit s{};
        s.program_handle = lp.buffer().handle();
        s.program_size = lp.image_size();
        s.num_bindings = 2;
        s.bindings = reinterpret_cast<uintptr_t>(bind);
        s.out_sync = {tl, 0, point};
        return raw(d, DRM_IOCTL_NEURON_SUBMIT, &s);
    };
    auto sync_file_status = [&] {
        drm_syncobj_handle h{};
        h.handle = tl;
        h.flags = DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE;
        assert_int_equal(raw(d, DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD, &h), 0);
        sync_file_info info{};
        assert_int_equal(d.state()->os->ioctl(h.fd, SYNC_IOC_FILE_INFO, &info), 0);
        d.state()->os->close(h.fd);
        return info.status;
    };

    assert_int_equal(wait(1, 0), EINVAL); // no fence at all
    assert_int_equal(submit(faulting, 1), 0);
    assert_int_equal(wait(1, 5000), 0);
    assert_int_equal(status, -EFAULT);
    // Point 2 spins until its timeout; the copy of point 3 waits behind it.
    assert_int_equal(submit(spin, 2), 0);
    assert_int_equal(copy(3), 0);
    assert_int_equal(wait(4, 0), EINVAL); // not submitted yet
    assert_int_equal(wait(3, 100), ETIME);
    assert_int_equal(wait(2, 5000), 0);
    assert_int_equal(status, -ETIMEDOUT);
    assert_int_equal(wait(3, 5000), 0);
    assert_int_equal(status, 0);
    // Points 1 and 2 have passed and were collected: status 0.
    assert_int_equal(wait(1, 0), 0);
    assert_int_equal(status, 0);
    assert_int_equal(wait(2, 0), 0);
    assert_int_equal(status, 0);
    drm_neuron_sync after{tl, 0, 3};
    assert_int_equal(copy(4, &after), 0);
    assert_int_equal(wait(4, 5000), 0);
    assert_int_equal(status, 0);
    // A faulting newest point: WAIT says so, the chain's sync file does not.
    assert_int_equal(submit(faulting, 5), 0);
    assert_int_equal(wait(5, 5000), 0);
    assert_int_equal(status, -EFAULT);
    assert_int_equal(sync_file_status(), 1);
    // An unordered point lands on the newest one.
    assert_int_equal(copy(2), 0);
    assert_int_equal(wait(5, 5000), 0);
    assert_int_equal(status, 0);
    assert_int_equal(wait(6, 0), EINVAL);
    // A binary signal replaces the timeline: no points any more.
    assert_int_equal(copy(0), 0);
    assert_int_equal(wait(0, 5000), 0);
    assert_int_equal(wait(1, 0), EINVAL);
}

// x.at(offset, part_stride, 0): one element of each row, repeated.
static void zero_stride_broadcast(void **) {
    Device d = Device::open("sim");
    const uint32_t n = 8;
    ProgramBuilder b("broadcast");
    auto x = b.argument("x", DType::fp32, {128, n}, Direction::in);
    auto y = b.argument("y", DType::fp32, {128, n}, Direction::out);
    auto t = b.sbuf("t", DType::fp32, n);
    DramRef bcast = x.at(4, n * 4, 0); // element 1 of row p, n times
    assert_int_equal(bcast.stride[0], 0);
    assert_int_equal(x.at(0, n * 4).stride[0], 4); // the default: contiguous
    b.sync().dma_load(t.tap(), bcast).dma_store(y.at(0, n * 4), t.tap());
    LoadedProgram lp = d.load(b.finish());
    Buffer xb = d.allocate(128 * n * 4), yb = d.allocate(128 * n * 4);
    std::vector<float> xv(128 * n);
    for (size_t i = 0; i < xv.size(); i++)
        xv[i] = static_cast<float>(i);
    xb.write(0, std::as_bytes(std::span(xv)));
    d.queue(0).submit(lp, Arguments().bind("x", xb).bind("y", yb)).wait();
    std::vector<float> yv(xv.size());
    yb.read(0, std::as_writable_bytes(std::span(yv)));
    for (uint32_t p = 0; p < 128; p++)
        for (uint32_t j = 0; j < n; j++)
            assert_true(yv[p * n + j] == xv[p * n + 1]);
}

// The counters published as files shaped like neuron.ko's sysfs and fdinfo
// (libneuron/src/sim_publish.hpp): found by published_simulators(), read by
// enumerate_sysfs() as a sysfs root, updated while they change, and gone
// with the device.
static void published_counters(void **) {
    namespace fs = std::filesystem;
    char tmpl[] = "/tmp/neuron-sim-test-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    const fs::path dir = tmpl;
    setenv("NEURON_SIM_DIR", dir.c_str(), 1);
    auto read = [](const fs::path &p) {
        std::ifstream f(p);
        std::string s;
        std::getline(f, s);
        return s;
    };
    {
        Device d = Device::open("sim:cores=3,dma=1,mem=64M");
        auto sims = published_simulators();
        assert_int_equal(sims.size(), 1);
        assert_int_equal(sims[0].pid, getpid());
        const fs::path root = sims[0].root;
        const fs::path attr = root / "sys/bus/pci/devices/0000:00:00.0/neuron";
        assert_string_equal(read(attr / "cores").c_str(), "3");
        assert_string_equal(read(attr / "memory_total").c_str(), std::to_string(64 << 20).c_str());
        assert_string_equal(read(attr / "state").c_str(), "ready");
        SysPaths paths{(root / "sys").string(), "/nonexistent"};
        auto entries = enumerate_sysfs(paths);
        assert_int_equal(entries.size(), 1);
        assert_string_equal(entries[0].pci_address.c_str(), "0000:00:00.0");
        assert_int_equal(entries[0].vendor_id, 0x1d0f);

        run_relu(d, 2, Region::device);
        Buffer b = d.allocate(1 << 20);
        // Published within a few periods of 100 ms.
        std::string jobs, used;
        for (int i = 0; i < 100 && (jobs != "1" || used != std::to_string(1 << 20)); i++) {
            std::this_thread::sleep_for(20ms);
            jobs = read(attr / "core2/jobs");
            used = read(attr / "memory_used");
        }
        assert_string_equal(jobs.c_str(), "1");
        assert_string_equal(used.c_str(), std::to_string(1 << 20).c_str());
        assert_true(std::stoull(read(attr / "core2/busy_ns")) > 0);
        assert_string_equal(read(attr / "core0/jobs").c_str(), "0");
        // The open file's fdinfo: its buffer, and its busy time on core 2.
        std::string fdinfo;
        for (const auto &e : fs::directory_iterator(root / "fdinfo")) {
            std::ifstream f(e.path());
            fdinfo.assign(std::istreambuf_iterator<char>(f), {});
        }
        assert_true(fdinfo.rfind("drm-driver:\tneuron\n", 0) == 0);
        assert_true(fdinfo.find("drm-pdev:\t0000:00:00.0\n") != std::string::npos);
        assert_true(fdinfo.find("drm-total-device:\t1 MiB\n") != std::string::npos);
        assert_true(fdinfo.find("drm-engine-core0:\t0 ns\n") != std::string::npos);
        assert_true(fdinfo.find("drm-engine-core2:\t0 ns\n") == std::string::npos);
    }
    assert_int_equal(published_simulators().size(), 0);
    assert_true(fs::is_empty(dir)); // removed with the device
    unsetenv("NEURON_SIM_DIR");
    fs::remove_all(dir);
}

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(options),
        cmocka_unit_test(split_matmul),
        cmocka_unit_test(uapi_errnos),
        cmocka_unit_test(check_table),
        cmocka_unit_test(host_bindings),
        cmocka_unit_test(cores_and_timeouts),
        cmocka_unit_test(zero_stride_broadcast),
        cmocka_unit_test(timeline_points),
        cmocka_unit_test(published_counters),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
