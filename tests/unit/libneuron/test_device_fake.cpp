// SPDX-License-Identifier: MIT
// Device, Buffer, Queue::submit, Fence and copies on a fake of the OS seam:
// what the library hands the driver (bindings, rights, in/out syncobjs,
// timeouts) and how each errno of the UAPI reaches the caller.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fake_os.hpp"
#include "testutil.hpp"

using namespace neuron;
using namespace std::chrono_literals;
using ::test::expect_error;

namespace {

struct Env {
    std::shared_ptr<test::FakeOs> os = std::make_shared<test::FakeOs>();
    Device open() { return detail::open_device(os, "fake0"); }
};

void expect_contains(const std::string &s, const char *part) {
    if (s.find(part) == std::string::npos)
        fail_msg("'%s' does not contain '%s'", s.c_str(), part);
}

// The errno of every ioctl that the UAPI documents, as a caller sees it.
struct IoctlErrno {
    int e;
    errc code;
    const char *text;
};
const IoctlErrno ioctl_errnos[] = {
    {EINVAL, errc::invalid_argument, "Invalid argument (EINVAL)"},
    {EFAULT, errc::io_error, "Bad address (EFAULT)"},
    {ENOMEM, errc::out_of_host_memory, "Cannot allocate memory (ENOMEM)"},
    {ENODEV, errc::device_lost, "No such device (ENODEV)"},
    {ENOENT, errc::no_device, "No such file or directory (ENOENT)"},
    {EOPNOTSUPP, errc::not_supported, "(EOPNOTSUPP)"},
    {EIO, errc::io_error, "Input/output error (EIO)"},
};

LoadedProgram load_nop(const Device &d) {
    ProgramBuilder pb("nop");
    pb.vector().nop();
    return d.load(pb.finish());
}

Program two_args() {
    ProgramBuilder b("relu");
    auto x = b.argument("x", DType::fp32, {128, 16}, Direction::in);
    auto y = b.argument("y", DType::fp32, {128, 16}, Direction::out);
    auto z = b.argument("z", DType::fp32, {16}, Direction::inout);
    std::vector<float> w(16, 1.0f);
    b.constant("w", {16}, std::span<const float>(w));
    auto t = b.sbuf("t", DType::fp32, 16);
    b.sync().dma_load(t.tap(), x.at(0, 64)).dma_store(y.at(0, 64), t.tap());
    (void)z;
    return b.finish();
}

} // namespace

// --- open --------------------------------------------------------------------------

static void open_checks(void **) {
    Env env;
    Device d = env.open();
    assert_int_equal(d.info().num_cores, 2);
    assert_int_equal(d.info().vendor_id, 0x1d0f);
    assert_string_equal(d.info().pci_address.c_str(), "0000:00:03.0");
    assert_int_equal(d.info().isa_version, 1u << 16 | 1u); // the fake's ISA 1.1
    {
        // A driver before UAPI 1.2 has no ISA_VERSION parameter: the device's
        // interface version bounds it, ISA 1.0 for interface 1.0, else 1.1.
        env.os->params[DRM_NEURON_PARAM_API_VERSION] = 1u << 16 | 1u;
        env.os->params[DRM_NEURON_PARAM_HW_VERSION] = 1u << 16 | 1u;
        assert_int_equal(env.open().info().isa_version, 1u << 16 | 1u);
        env.os->params[DRM_NEURON_PARAM_HW_VERSION] = 1u << 16;
        Device v10 = env.open();
        assert_int_equal(v10.info().isa_version, 1u << 16);
        env.os->params[DRM_NEURON_PARAM_API_VERSION] = 1u << 16 | 2u;
        env.os->params[DRM_NEURON_PARAM_ISA_VERSION] = 1u << 16 | 7u;
        Device v17 = env.open();
        assert_int_equal(v17.info().isa_version, 1u << 16 | 7u);
        env.os->params[DRM_NEURON_PARAM_ISA_VERSION] = 1u << 16 | 1u;
        env.os->params[DRM_NEURON_PARAM_API_VERSION] =
            DRM_NEURON_API_VERSION_MAJOR << 16 | DRM_NEURON_API_VERSION_MINOR;
        // A program of ISA 1.1 loads on a 1.1 device, not on a 1.0 one.
        ProgramBuilder b("rsqrt");
        auto t = b.sbuf("t", DType::fp32, 16);
        b.scalar().activate(Activation::rsqrt, t.tap(), t.tap());
        Program p = b.finish();
        assert_int_equal(p.isa_version(), 1u << 16 | 1);
        (void)d.load(p);
        expect_contains(expect_error([&] { (void)v10.load(p); }, errc::not_supported),
                        "fake0: loading program 'rsqrt': it needs ISA 1.1, the device implements "
                        "ISA 1.0");
        (void)v10.load(two_args()); // ISA 1.0 programs still load
    }
    assert_string_equal(d.path().c_str(), "fake0");

    env.os->open_errno = EACCES;
    expect_contains(expect_error([&] { env.open(); }, errc::permission_denied),
                    "fake0: permission denied: add the user to group render");
    env.os->open_errno = ENOENT;
    expect_contains(expect_error([&] { env.open(); }, errc::no_device), "does not exist");
    env.os->open_errno = 0;
    env.os->driver = "i915";
    expect_contains(expect_error([&] { env.open(); }, errc::not_supported),
                    "not a neuron device (its driver is 'i915')");
    env.os->driver = "neuron";
    env.os->params[DRM_NEURON_PARAM_API_VERSION] = 2u << 16;
    expect_contains(expect_error([&] { env.open(); }, errc::not_supported),
                    ("the driver speaks UAPI 2.0, this library " +
                     std::to_string(DRM_NEURON_API_VERSION_MAJOR) + "." +
                     std::to_string(DRM_NEURON_API_VERSION_MINOR))
                        .c_str());
    env.os->params[DRM_NEURON_PARAM_API_VERSION] = 1u << 16;
    env.os->fail[DRM_IOCTL_NEURON_GET_PARAM] = ENODEV;
    expect_contains(expect_error([&] { env.open(); }, errc::device_lost),
                    "fake0: GET_PARAM 14: No such device (ENODEV)");
    int closed = env.os->closed_fds;
    env.os->fail.clear();
    { Device again = env.open(); }
    assert_int_equal(env.os->closed_fds, closed + 1); // the file is closed with the Device
    expect_error([&] { d.queue(2); }, errc::invalid_argument);
}

// --- buffers -----------------------------------------------------------------------

static void buffers(void **) {
    Env env;
    Device d = env.open();
    {
        Buffer b = d.allocate(10000, Region::host, buffer_write_combined);
        assert_int_equal(b.size(), 12288);
        assert_int_equal(b.handle(), 1);
        assert_int_equal(b.device_address(), 0x1000);
        std::vector<std::byte> in(100, std::byte{7}), out(100);
        b.write(50, in);
        b.read(50, out);
        assert_memory_equal(in.data(), out.data(), in.size());
        assert_int_equal(env.os->count(DRM_IOCTL_NEURON_BO_CREATE), 1);
        expect_error([&] { b.write(b.size() - 1, in); }, errc::invalid_argument);
    }
    assert_int_equal(env.os->closed_handles.size(), 1);
    assert_int_equal(env.os->closed_handles[0], 1);
    assert_int_equal(env.os->unmapped.size(), 1);
    assert_int_equal(env.os->unmapped[0], 12288);

    env.os->fail[DRM_IOCTL_NEURON_BO_CREATE] = ENOSPC;
    expect_contains(expect_error([&] { d.allocate(8ull << 30); }, errc::out_of_device_memory),
                    "fake0: allocating 8.0 GiB of device memory: out of device memory: no free "
                    "range of that size in the device's 1.0 GiB");
    for (const auto &t : ioctl_errnos) {
        env.os->fail[DRM_IOCTL_NEURON_BO_CREATE] = t.e;
        expect_contains(expect_error([&] { d.allocate(4096, Region::host); }, t.code), t.text);
    }
    env.os->fail.clear();
    Buffer b = d.allocate(4096);
    env.os->mmap_errno = ENOMEM;
    expect_contains(expect_error([&] { b.map(); }, errc::out_of_host_memory),
                    "fake0: mapping buffer 2 (4.0 KiB): Cannot allocate memory (ENOMEM)");
    expect_error([&] { d.allocate(0); }, errc::invalid_argument);
    expect_error([&] { d.allocate(4096, Region::device, 0x80); }, errc::invalid_argument);
}

// The driver's memory_used, in the PCI device's neuron/ directory of sysfs.
static void memory_used(void **) {
    Env env;
    Device d = env.open();
    const std::string file =
        SysPaths::from_env().sysfs_root + "/bus/pci/devices/0000:00:03.0/neuron/memory_used";
    assert_false(d.memory_used().has_value()); // the file cannot be read
    env.os->files[file] = "12288";
    assert_true(d.memory_used() == 12288u);
    env.os->files[file] = "12288 bytes";
    assert_false(d.memory_used().has_value());
    // The C API says why it has no figure.
    neuron_device *c = detail::c_device(d);
    uint64_t used = 99;
    assert_int_equal(neuron_device_memory_used(c, &used), NEURON_ERR_NOT_SUPPORTED);
    assert_int_equal(used, 99);
    expect_contains(neuron_last_error(), "fake0: device memory in use cannot be read");
    env.os->files[file] = "8192";
    assert_int_equal(neuron_device_memory_used(c, &used), NEURON_OK);
    assert_int_equal(used, 8192);
    neuron_device_close(c);
}

// --- submit ------------------------------------------------------------------------

static void submit_bindings(void **) {
    Env env;
    Device d = env.open();
    LoadedProgram lp = d.load(two_args());
    Buffer x = d.allocate(128 * 16 * 4), y = d.allocate(128 * 16 * 4 + 4096), z = d.allocate(64);
    Fence dep = d.copy(x.range(0, 64), z.range(0, 64));
    Fence f = d.queue(1).submit(
        lp, Arguments().bind("y", y.range(4096, 128 * 16 * 4)).bind("x", x).bind("z", z), {dep});
    const auto &s = env.os->last_submit;
    assert_int_equal(s.core, 1);
    assert_int_equal(s.program_handle, lp.buffer().handle());
    assert_int_equal(s.program_size, lp.image_size());
    assert_int_equal(s.num_bindings, 4);
    // Slots in declaration order, rights from the direction; the constants last.
    const auto &b = env.os->last_bindings;
    assert_int_equal(b[0].handle, x.handle());
    assert_int_equal(b[0].flags, DRM_NEURON_BIND_READ);
    assert_int_equal(b[1].handle, y.handle());
    assert_int_equal(b[1].offset, 4096);
    assert_int_equal(b[1].size, 128 * 16 * 4);
    assert_int_equal(b[1].flags, DRM_NEURON_BIND_WRITE);
    assert_int_equal(b[2].flags, DRM_NEURON_BIND_READ | DRM_NEURON_BIND_WRITE);
    assert_int_equal(b[3].handle, lp.buffer().handle());
    assert_int_equal(b[3].offset, lp.const_offset());
    assert_int_equal(b[3].flags, DRM_NEURON_BIND_READ);
    // In-syncs are the dependencies' syncobjs, the out-sync the fence's own.
    assert_int_equal(env.os->last_in_syncs.size(), 1);
    assert_int_equal(env.os->last_in_syncs[0].handle, dep.syncobj());
    assert_int_equal(s.out_sync.handle, f.syncobj());
    assert_int_not_equal(f.syncobj(), dep.syncobj());
    assert_int_equal(f.seqno(), 7);
    assert_string_equal(f.label().c_str(), "job 7 (program 'relu') on core 1 of fake0");

    // Checks the library makes before the driver sees anything.
    size_t before = env.os->count(DRM_IOCTL_NEURON_SUBMIT);
    expect_contains(
        expect_error([&] { d.queue(0).submit(lp, Arguments().bind("x", x).bind("z", z)); },
                     errc::invalid_argument),
        "argument 'y' (out fp32, 8192 bytes) is not bound");
    expect_contains(expect_error([&] { d.queue(0).submit(lp, Arguments().bind("w", x)); },
                                 errc::invalid_argument),
                    "it has no argument 'w' (its arguments: x, y, z)");
    expect_contains(
        expect_error(
            [&] { d.queue(0).submit(lp, Arguments().bind("x", z).bind("y", y).bind("z", z)); },
            errc::invalid_argument),
        "argument 'x' (fp32) needs 8192 bytes, but is bound to 4096 bytes");
    expect_contains(expect_error(
                        [&] {
                            d.queue(0).submit(
                                lp, Arguments().bind("x", x).bind("y", y).bind("z", z), {Fence()});
                        },
                        errc::invalid_argument),
                    "an empty fence among the dependencies");
    Env other;
    Device d2 = other.open();
    Buffer foreign = d2.allocate(128 * 16 * 4);
    expect_contains(expect_error(
                        [&] {
                            d.queue(0).submit(
                                lp, Arguments().bind("x", foreign).bind("y", y).bind("z", z));
                        },
                        errc::invalid_argument),
                    "argument 'x' is a buffer of another open device");
    assert_int_equal(env.os->count(DRM_IOCTL_NEURON_SUBMIT), before);
}

static void submit_no_arguments(void **) {
    Env env;
    Device d = env.open();
    LoadedProgram lp = load_nop(d);
    d.queue(0).submit(lp, Arguments());
    // The UAPI wants one binding: the program's own image, read-only.
    assert_int_equal(env.os->last_submit.num_bindings, 1);
    assert_int_equal(env.os->last_bindings[0].handle, lp.buffer().handle());
    assert_int_equal(env.os->last_bindings[0].size, lp.image_size());
    assert_int_equal(env.os->last_bindings[0].flags, DRM_NEURON_BIND_READ);
    assert_int_equal(env.os->last_submit.num_in_syncs, 0);
}

static void submit_errnos(void **) {
    Env env;
    Device d = env.open();
    LoadedProgram lp = load_nop(d);
    for (const auto &t : ioctl_errnos) {
        env.os->fail[DRM_IOCTL_NEURON_SUBMIT] = t.e;
        std::string m = expect_error([&] { d.queue(0).submit(lp, Arguments()); }, t.code);
        expect_contains(m, "fake0: submitting program 'nop' to core 0: ");
        expect_contains(m, t.text);
        if (t.e == EINVAL)
            expect_contains(m, "the driver rejected the job's arguments");
    }
    env.os->fail.clear();
    // A device file with no idle syncobj yet (the failed submits left some).
    Device fresh = env.open();
    LoadedProgram fresh_lp = load_nop(fresh);
    env.os->fail[DRM_IOCTL_SYNCOBJ_CREATE] = EOPNOTSUPP;
    expect_contains(
        expect_error([&] { fresh.queue(0).submit(fresh_lp, Arguments()); }, errc::not_supported),
        "fake0: creating a DRM syncobj: Operation not supported (EOPNOTSUPP): the "
        "driver does not offer DRM syncobjs");
}

// --- fences ------------------------------------------------------------------------

// A driver before DRM_IOCTL_NEURON_WAIT, and this one.
constexpr uint64_t api_before_wait = 1u << 16;
constexpr uint64_t api_now = DRM_NEURON_API_VERSION_MAJOR << 16 | DRM_NEURON_API_VERSION_MINOR;

// Each fence error of the UAPI, as Fence::wait() reports it.
static void check_fence_errors(uint64_t api) {
    Env env;
    env.os->params[DRM_NEURON_PARAM_API_VERSION] = api;
    Device d = env.open();
    LoadedProgram lp = load_nop(d);
    Fence f = d.queue(0).submit(lp, Arguments());
    f.wait(); // status 1: signalled, no error
    assert_true(f.wait_for(0s));
    const struct {
        int e;
        errc code;
        const char *text;
    } errors[] = {
        {EFAULT, errc::job_fault, "failed: fault: an access outside the job's bindings"},
        {EINVAL, errc::job_invalid, "failed: the device rejected the program"},
        {ETIMEDOUT, errc::job_timeout, "failed: timeout: the job exceeded the job timeout"},
        {ECANCELED, errc::job_aborted, "failed: reset: aborted by a reset"},
        {ENODEV, errc::device_lost, "failed: the device was removed"},
        {EIO, errc::io_error, "failed: failed on the device (EIO)"},
    };
    for (const auto &t : errors) {
        env.os->fence_status = -t.e;
        std::string m = expect_error([&] { f.wait(); }, t.code);
        expect_contains(m, "job 7 (program 'nop') on core 0 of fake0 ");
        expect_contains(m, t.text);
        assert_true(f.try_wait(0s) == t.code);
        assert_string_equal(f.message().c_str(), m.c_str());
    }
    if (api == api_before_wait) {
        // Every read-back closed its sync file.
        assert_int_equal(env.os->count(DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD), 14);
        assert_int_equal(env.os->closed_fds, env.os->count(DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD));
        assert_int_equal(env.os->count(DRM_IOCTL_NEURON_WAIT), 0);
        env.os->fail[DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD] = EINVAL;
        expect_contains(expect_error([&] { f.wait(); }, errc::invalid_argument),
                        "reading its status: Invalid argument (EINVAL)");
    } else {
        // One system call per wait, status included.
        assert_int_equal(env.os->count(DRM_IOCTL_NEURON_WAIT), 14);
        assert_int_equal(env.os->count(DRM_IOCTL_SYNCOBJ_WAIT), 0);
        assert_int_equal(env.os->count(DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD), 0);
        env.os->fail[DRM_IOCTL_NEURON_WAIT] = EINVAL;
        expect_contains(expect_error([&] { f.wait(); }, errc::invalid_argument),
                        "waiting for it: Invalid argument (EINVAL)");
    }
    env.os->fail.clear();
    // A fence's syncobj is kept for the next fence, up to 64 of them.
    uint32_t h = f.syncobj();
    size_t created = env.os->count(DRM_IOCTL_SYNCOBJ_CREATE);
    f = Fence();
    assert_true(env.os->destroyed_syncobjs.empty());
    f = d.queue(0).submit(lp, Arguments());
    assert_int_equal(f.syncobj(), h);
    assert_int_equal(env.os->count(DRM_IOCTL_SYNCOBJ_CREATE), created);
    std::vector<Fence> many;
    for (int i = 0; i < 65; i++)
        many.push_back(d.queue(0).submit(lp, Arguments()));
    assert_int_equal(env.os->count(DRM_IOCTL_SYNCOBJ_CREATE), created + 65);
    many.clear();
    assert_int_equal(env.os->destroyed_syncobjs.size(), 1);
}

static void fence_errors(void **) {
    check_fence_errors(api_now);
    check_fence_errors(api_before_wait);
}

static void check_fence_timeouts(uint64_t api) {
    Env env;
    env.os->params[DRM_NEURON_PARAM_API_VERSION] = api;
    Device d = env.open();
    LoadedProgram lp = load_nop(d);
    Fence f = d.queue(0).submit(lp, Arguments());
    env.os->wait_errno = ETIME;
    assert_false(f.wait_for(0s));
    assert_int_equal(env.os->last_wait_timeout, 0); // a poll
    assert_true(f.try_wait(10ms) == errc::timeout);
    expect_contains(f.message(), "still running after the wait's timeout");
    // An absolute CLOCK_MONOTONIC deadline.
    int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count();
    assert_false(f.wait_for(5s));
    assert_true(env.os->last_wait_timeout >= now + 5'000'000'000);
    assert_true(env.os->last_wait_timeout < now + 6'000'000'000);
    env.os->wait_errno = ENODEV;
    expect_contains(expect_error([&] { f.wait(); }, errc::device_lost),
                    "waiting for it: No such device (ENODEV)");
    env.os->wait_errno = 0;
    f.wait();
}

static void fence_timeouts(void **) {
    check_fence_timeouts(api_now);
    check_fence_timeouts(api_before_wait);
}

// --- copies ------------------------------------------------------------------------

static void copies(void **) {
    Env env;
    Device d = env.open();
    Buffer a = d.allocate(8192, Region::host), b = d.allocate(8192);
    Fence first = d.copy(b.range(0, 4096), a.range(4096, 4096));
    Fence second = d.copy(a.range(0, 100), b.range(100, 100), {first}, 1);
    const auto &c = env.os->last_copy;
    assert_int_equal(c.src_handle, b.handle());
    assert_int_equal(c.dst_handle, a.handle());
    assert_int_equal(c.src_offset, 100);
    assert_int_equal(c.dst_offset, 0);
    assert_int_equal(c.size, 100);
    assert_int_equal(c.engine, 1);
    assert_int_equal(c.out_sync.handle, second.syncobj());
    assert_int_equal(env.os->last_in_syncs.size(), 1);
    assert_int_equal(env.os->last_in_syncs[0].handle, first.syncobj());
    assert_string_equal(second.label().c_str(), "copy 9 (100 bytes) on fake0");

    expect_contains(
        expect_error([&] { d.copy(a.range(0, 8), b.range(0, 16)); }, errc::invalid_argument),
        "source has 16 bytes, destination 8");
    expect_contains(
        expect_error([&] { d.copy(a.range(0, 8), b.range(0, 8), {}, 2); }, errc::invalid_argument),
        "DMA engine 2 does not exist (the device has 2)");
    std::vector<Fence> many(DRM_NEURON_MAX_IN_SYNCS + 1, first);
    expect_contains(
        expect_error([&] { d.copy(a.range(0, 8), b.range(0, 8), many); }, errc::invalid_argument),
        "65 dependencies, at most 64 allowed");
    for (const auto &t : ioctl_errnos) {
        env.os->fail[DRM_IOCTL_NEURON_COPY] = t.e;
        std::string m = expect_error([&] { d.copy(a.range(0, 8), b.range(0, 8)); }, t.code);
        expect_contains(m, "fake0: copy of 8 bytes (buffer 2 +0 -> buffer 1 +0): ");
        expect_contains(m, t.text);
    }
    env.os->fail.clear();
    env.os->fence_status = -ETIMEDOUT;
    expect_contains(expect_error([&] { second.wait(); }, errc::job_timeout),
                    "copy 9 (100 bytes) on fake0 failed: timeout");
}

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_checks),
        cmocka_unit_test(buffers),
        cmocka_unit_test(memory_used),
        cmocka_unit_test(submit_bindings),
        cmocka_unit_test(submit_no_arguments),
        cmocka_unit_test(submit_errnos),
        cmocka_unit_test(fence_errors),
        cmocka_unit_test(fence_timeouts),
        cmocka_unit_test(copies),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
