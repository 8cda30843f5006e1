// SPDX-License-Identifier: MIT
//
// Hot-unplug of a device in use: one thread submits jobs, one copies, one
// writes and reads a mapping of device memory, each checking its results,
// when the device is removed. Every thread must stop with the documented
// error (the device is lost, or its work aborted) or, for the mapping,
// SIGBUS, within 60 s; releasing everything must not hang; bringing the
// device back must give one that runs a job and a copy correctly; on
// kernels with kmemleak nothing may leak.
//
// usage: neuron-hotplug [--remove qmp|pci]
//   qmp  (default) QEMU removes the device (QMP device_del, neuron-vm
//        --hotplug) and the kernel's PCI hot-plug driver (pciehp) removes it
//        from the PCI core; device_add brings it back.
//   pci  the PCI core removes it (/sys/bus/pci/devices/BDF/remove), the
//        function pciehp calls for device_del, for kernels without a
//        hot-plug driver; a bus rescan brings it back. The device stays in
//        QEMU, so this skips only QEMU's own teardown.
// Exit status 0 when every check held, 2 on a usage error.

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

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

constexpr uint32_t cols = 64;

[[noreturn]] void fail(const std::string &what) {
    std::fprintf(stderr, "neuron-hotplug: FAIL: %s\n", what.c_str());
    std::fflush(stderr);
    _exit(1);
}

/// What one worker thread did: operations that checked out, and how it ended.
struct Worker {
    explicit Worker(const char *n) : name(n) {}
    const char *name;
    std::atomic<uint64_t> ok{0};
    std::string ending;             // written by the worker before it sets ended
    std::atomic<bool> ended{false}; // then read by the main thread
    std::thread thread;

    void end(std::string how) {
        ending = std::move(how);
        ended.store(true, std::memory_order_release);
    }
};

bool lost(const std::error_code &e) {
    return e == errc::device_lost || e == errc::no_device || e == errc::job_aborted;
}

void end_with(Worker &w, const Error &e) {
    if (!lost(e.code()))
        fail(std::string(w.name) + ": unexpected error: " + e.what());
    w.end(e.what());
}

/// Host staging buffers: the CPU side of every transfer, through DMA copies.
struct Staging {
    Staging(const Device &d, uint64_t size)
        : in(d.allocate(size, Region::host)), out(d.allocate(size, Region::host)) {}
    Buffer in, out;
};

void copy_and_wait(const Device &d, const Buffer &dst, const Buffer &src) {
    if (!d.copy(dst.range(0, src.size()), src.range(0, src.size())).wait_for(60s))
        fail("a copy neither finished nor failed in 60 s");
}

/// Submits jobs and checks their results, @rounds times (0: until an error).
void submit_loop(Worker &w, const Device &d, const LoadedProgram &lp, uint64_t rounds = 0) {
    try {
        std::vector<float> x(128 * cols), y(x.size());
        for (size_t i = 0; i < x.size(); i++)
            x[i] = static_cast<float>(i % 23) - 11.0f;
        Staging st(d, x.size() * 4);
        Buffer xb = d.allocate(x.size() * 4, Region::device);
        Buffer yb = d.allocate(x.size() * 4, Region::device);
        st.in.write(0, std::as_bytes(std::span(x)));
        copy_and_wait(d, xb, st.in);
        for (;;) {
            Fence f = d.queue(0).submit(lp, Arguments().bind("x", xb).bind("y", yb));
            if (!f.wait_for(60s))
                fail("submit: a job neither finished nor failed in 60 s");
            f.wait(); // throws the job's error
            copy_and_wait(d, st.out, yb);
            st.out.read(0, std::as_writable_bytes(std::span(y)));
            for (size_t i = 0; i < x.size(); i++)
                if (y[i] != std::max(0.0f, x[i] * 2.0f + 1.0f))
                    fail("submit: wrong result at " + std::to_string(i));
            if (++w.ok == rounds)
                return w.end("done");
        }
    } catch (const Error &e) {
        end_with(w, e);
    }
}

void copy_loop(Worker &w, const Device &d) {
    try {
        const size_t size = 1 << 20;
        Staging st(d, size);
        Buffer b = d.allocate(size, Region::device);
        std::vector<std::byte> in(size), out(size);
        for (uint8_t round = 1;; round++) {
            std::memset(in.data(), round, in.size());
            st.in.write(0, in);
            copy_and_wait(d, b, st.in);
            copy_and_wait(d, st.out, b);
            st.out.read(0, out);
            if (in != out)
                fail("copy: 1 MiB copied to device memory and back differs");
            w.ok++;
        }
    } catch (const Error &e) {
        end_with(w, e);
    }
}

thread_local sigjmp_buf *bus_jump;

void on_sigbus(int) {
    if (bus_jump)
        siglongjmp(*bus_jump, 1);
    static const char msg[] = "neuron-hotplug: FAIL: SIGBUS outside the device mapping\n";
    ssize_t n = write(2, msg, sizeof(msg) - 1);
    (void)n;
    _exit(3);
}

void map_loop(Worker &w, const Device &d) {
    std::optional<Buffer> b;
    try {
        b.emplace(d.allocate(65536, Region::device));
    } catch (const Error &e) {
        end_with(w, e);
        return;
    }
    auto m = b->map();
    volatile uint32_t *p = reinterpret_cast<volatile uint32_t *>(m.data());
    sigjmp_buf jump;
    if (sigsetjmp(jump, 1)) {
        bus_jump = nullptr;
        w.end("SIGBUS on the mapping");
        return;
    }
    bus_jump = &jump;
    for (uint32_t round = 1;; round++) {
        for (size_t i = 0; i < m.size() / 4; i += 1024)
            p[i] = round + static_cast<uint32_t>(i);
        for (size_t i = 0; i < m.size() / 4; i += 1024)
            if (p[i] != round + static_cast<uint32_t>(i))
                fail("map: a word of device memory reads back another value");
        w.ok++;
    }
}

void host_request(const std::string &what) {
    std::ofstream kmsg("/dev/kmsg");
    kmsg << "neuron-vm-host: " << what << "\n";
    if (!kmsg.flush())
        fail("cannot write the request '" + what + "' to /dev/kmsg");
}

template <typename F> bool wait_until(std::chrono::seconds limit, F done) {
    for (auto end = Clock::now() + limit; Clock::now() < end; std::this_thread::sleep_for(50ms))
        if (done())
            return true;
    return done();
}

bool exists(const std::string &path) {
    return access(path.c_str(), F_OK) == 0;
}

/// Whether a hot-plug driver (pciehp, acpiphp) registered the slot of @bdf.
bool hotplug_slot(const std::string &bdf) {
    std::string bus_slot = bdf.substr(0, bdf.rfind('.')); // domain:bus:device
    for (const auto &e : std::filesystem::directory_iterator("/sys/bus/pci/slots")) {
        std::ifstream f(e.path() / "address");
        std::string address;
        if (f >> address && address == bus_slot)
            return true;
    }
    return false;
}

/// The first neuron device in sysfs, bound and with its node, or nullopt.
std::optional<neuron_test_dev> find_device() {
    neuron_test_dev dev;
    if (neuron_test_find_device(&dev) || !exists(std::string("/dev/accel/") + dev.node))
        return std::nullopt;
    return dev;
}

void check_works(const Device &d, const LoadedProgram &lp) {
    Worker w("replugged");
    submit_loop(w, d, lp, 3);
    if (w.ok != 3)
        fail("the replugged device fails: " + w.ending);
}

void write_sysfs(const std::string &path, const char *value) {
    std::ofstream f(path);
    f << value;
    if (!f.flush())
        fail("cannot write '" + std::string(value) + "' to " + path + ": " + std::strerror(errno));
}

} // namespace

int main(int argc, char **argv) {
    bool through_qmp = true;
    if (argc == 3 && std::strcmp(argv[1], "--remove") == 0 &&
        (std::strcmp(argv[2], "qmp") == 0 || std::strcmp(argv[2], "pci") == 0)) {
        through_qmp = std::strcmp(argv[2], "qmp") == 0;
    } else if (argc != 1) {
        std::fprintf(stderr, "usage: neuron-hotplug [--remove qmp|pci]\n");
        return 2;
    }
    auto dev = find_device();
    if (!dev)
        fail("no neuron device bound to neuron.ko");
    const std::string pci = std::string("/sys/bus/pci/devices/") + dev->bdf;
    if (through_qmp && !hotplug_slot(dev->bdf))
        fail(std::string("no hot-plug slot holds ") + dev->bdf +
             " in /sys/bus/pci/slots: the kernel has no PCI hot-plug driver for it "
             "(CONFIG_HOTPLUG_PCI_PCIE or CONFIG_HOTPLUG_PCI_ACPI), or the VM was not "
             "started with neuron-vm --hotplug");
    const bool kmemleak = neuron_test_kmemleak_clear() == 0;
    struct sigaction sa {};
    sa.sa_handler = on_sigbus;
    sigaction(SIGBUS, &sa, nullptr);

    ProgramBuilder pb("relu2x1");
    test::add_relu2x1(pb, cols);
    const Program prog = pb.finish();
    {
        Device d = Device::open_first();
        LoadedProgram lp = d.load(prog);
        // Bound after the unplug, so that the submit reaches the driver.
        Buffer late_x = d.allocate(128 * cols * 4, Region::device);
        Buffer late_y = d.allocate(128 * cols * 4, Region::device);
        Worker workers[3] = {Worker("submit"), Worker("copy"), Worker("map")};
        workers[0].thread =
            std::thread(submit_loop, std::ref(workers[0]), std::cref(d), std::cref(lp), 0);
        workers[1].thread = std::thread(copy_loop, std::ref(workers[1]), std::cref(d));
        workers[2].thread = std::thread(map_loop, std::ref(workers[2]), std::cref(d));
        if (!wait_until(120s, [&] {
                for (auto &w : workers)
                    if (w.ok < 3)
                        return false;
                return true;
            }))
            fail("the workers did not get going in 120 s");

        auto unplugged = Clock::now();
        // The PCI core's removal returns once the driver has let go of the
        // device, so it runs beside the workers it stops.
        std::thread remover;
        if (through_qmp)
            host_request(std::string("device_del neuron0"));
        else
            remover = std::thread(write_sysfs, pci + "/remove", "1");
        for (auto &w : workers) {
            if (!wait_until(60s, [&] { return w.ended.load(std::memory_order_acquire); }))
                fail(std::string(w.name) + ": still running 60 s after the unplug");
            w.thread.join();
            std::printf("%s: %llu checked before the unplug, then: %s\n", w.name,
                        static_cast<unsigned long long>(w.ok.load()), w.ending.c_str());
        }
        std::printf("all workers stopped %.1f s after the unplug request\n",
                    std::chrono::duration<double>(Clock::now() - unplugged).count());
        if (remover.joinable())
            remover.join();
        if (!wait_until(60s, [&] { return !exists(pci); }))
            fail(pci + " still exists 60 s after its removal");
        try {
            d.queue(0).submit(lp, Arguments().bind("x", late_x).bind("y", late_y)).wait();
            fail("a submit to the unplugged device succeeded");
        } catch (const Error &e) {
            if (!lost(e.code()))
                fail(std::string("a submit to the unplugged device: ") + e.what());
            std::printf("a submit after the unplug: %s\n", e.what());
        }
    } // everything released: buffers, program, device
    std::printf("released the unplugged device's objects\n");

    if (through_qmp)
        host_request("device_add neuron0");
    else
        write_sysfs("/sys/bus/pci/rescan", "1");
    if (!wait_until(60s, [] { return find_device().has_value(); }))
        fail("no neuron device 60 s after it was brought back");
    {
        Device d = Device::open_first();
        check_works(d, d.load(prog));
    }
    std::printf("the replugged device runs a job correctly\n");
    if (kmemleak) {
        long leaks = neuron_test_kmemleak_scan();
        std::printf("kmemleak: %ld new unreferenced objects\n", leaks);
        if (leaks)
            fail("kmemleak found leaks");
    }
    std::printf("PASS\n");
    return 0;
}
