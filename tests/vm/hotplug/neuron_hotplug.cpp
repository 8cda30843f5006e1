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
// usage: neuron-hotplug [--remove qmp|qmp-slot]
//   qmp       (default) QEMU removes the device (QMP device_del, neuron-vm
//             --hotplug) and the kernel's PCI hot-plug driver does the
//             guest's part: with native hot-plug (--hotplug=pcie) QEMU
//             presses the attention button of the device's PCI Express root
//             port, and pciehp removes the device from the PCI core and
//             powers the slot off, upon which QEMU unplugs the device; with
//             ACPI hot-plug (--hotplug) acpiphp removes it and ejects the
//             slot through ACPI. device_add brings it back.
//   qmp-slot  the same device_del and device_add, for kernels without a
//             hot-plug driver: the test does pciehp's part itself. It waits
//             for the button press in the port's Slot Status, removes the
//             device from the PCI core (/sys/bus/pci/devices/BDF/remove, the
//             pci_stop_and_remove_bus_device() that pciehp calls), turns the
//             slot's power and power indicator off in the port's Slot
//             Control, and waits for QEMU to unplug the device (Presence
//             Detect State clear). After device_add it waits for the device
//             to be present, powers the slot on (QEMU keeps a device in a
//             powered-off slot disabled) and rescans the bus.
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

#include <fcntl.h>
#include <linux/pci_regs.h>
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
    std::fflush(stdout); // what was checked before the failure
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

/// The Slot registers of a PCI Express port, through its config space in
/// sysfs (the PCI Express capability; PCI_EXP_* offsets and bits).
class PortSlot {
  public:
    explicit PortSlot(std::string bdf) : bdf_(std::move(bdf)) {
        const std::string path = "/sys/bus/pci/devices/" + bdf_ + "/config";
        fd_ = open(path.c_str(), O_RDWR | O_CLOEXEC);
        if (fd_ < 0)
            fail("cannot open " + path + ": " + std::strerror(errno));
        if (!(read(PCI_STATUS, 2) & PCI_STATUS_CAP_LIST))
            fail(bdf_ + " has no capability list");
        unsigned pos = read(PCI_CAPABILITY_LIST, 1);
        for (int n = 0; pos && n < 48 && !exp_; n++, pos = read(pos + PCI_CAP_LIST_NEXT, 1))
            if (read(pos + PCI_CAP_LIST_ID, 1) == PCI_CAP_ID_EXP)
                exp_ = pos;
        if (!exp_)
            fail(bdf_ + " has no PCI Express capability");
        const uint32_t cap = read(exp_ + PCI_EXP_SLTCAP, 4);
        if (!(read(exp_ + PCI_EXP_FLAGS, 2) & PCI_EXP_FLAGS_SLOT) || !(cap & PCI_EXP_SLTCAP_HPC) ||
            !(cap & PCI_EXP_SLTCAP_PCP))
            fail(bdf_ + " has no hot-plug slot with a power controller");
    }
    PortSlot(const PortSlot &) = delete;
    PortSlot &operator=(const PortSlot &) = delete;
    ~PortSlot() { close(fd_); }

    const std::string &bdf() const { return bdf_; }
    uint16_t status() const { return static_cast<uint16_t>(read(exp_ + PCI_EXP_SLTSTA, 2)); }
    bool present() const { return status() & PCI_EXP_SLTSTA_PDS; }

    /// Acknowledges the events in @events (write 1 to clear), as pciehp does.
    void clear(uint16_t events) const { write(exp_ + PCI_EXP_SLTSTA, events & status()); }

    /// Power controller and power indicator both on, or both off.
    void power(bool on) const {
        uint16_t ctl = static_cast<uint16_t>(read(exp_ + PCI_EXP_SLTCTL, 2));
        ctl &= static_cast<uint16_t>(~(PCI_EXP_SLTCTL_PCC | PCI_EXP_SLTCTL_PIC));
        ctl |= on ? PCI_EXP_SLTCTL_PWR_ON | PCI_EXP_SLTCTL_PWR_IND_ON
                  : PCI_EXP_SLTCTL_PWR_OFF | PCI_EXP_SLTCTL_PWR_IND_OFF;
        write(exp_ + PCI_EXP_SLTCTL, ctl);
    }

  private:
    uint32_t read(unsigned off, unsigned len) const {
        uint32_t v = 0; // little-endian, as is config space
        if (pread(fd_, &v, len, off) != static_cast<ssize_t>(len))
            fail("cannot read the config space of " + bdf_ + " at " + std::to_string(off));
        return v;
    }
    // One aligned 16-bit write (sysfs issues a word access for it).
    void write(unsigned off, uint16_t v) const {
        if (pwrite(fd_, &v, 2, off) != 2)
            fail("cannot write the config space of " + bdf_ + " at " + std::to_string(off) + ": " +
                 std::strerror(errno));
    }

    std::string bdf_;
    int fd_ = -1;
    unsigned exp_ = 0;
};

/// The PCI Express port above the device at @pci, or nullopt.
std::optional<std::string> parent_port(const std::string &pci) {
    std::string up = std::filesystem::canonical(pci).parent_path().filename();
    if (!exists("/sys/bus/pci/devices/" + up))
        return std::nullopt;
    return up;
}

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

} // namespace

int main(int argc, char **argv) {
    bool slot_by_test = false;
    if (argc == 3 && std::strcmp(argv[1], "--remove") == 0 &&
        (std::strcmp(argv[2], "qmp") == 0 || std::strcmp(argv[2], "qmp-slot") == 0)) {
        slot_by_test = std::strcmp(argv[2], "qmp-slot") == 0;
    } else if (argc != 1) {
        std::fprintf(stderr, "usage: neuron-hotplug [--remove qmp|qmp-slot]\n");
        return 2;
    }
    auto dev = find_device();
    if (!dev)
        fail("no neuron device bound to neuron.ko");
    const std::string pci = std::string("/sys/bus/pci/devices/") + dev->bdf;
    const auto port_bdf = parent_port(pci);
    if (!port_bdf)
        fail(dev->bdf + std::string(" is not behind a PCI Express port: the VM was not started "
                                    "with neuron-vm --hotplug"));
    // The slot's registers: only native PCIe hot-plug keeps its Presence
    // Detect State (QEMU's ACPI hot-plug leaves it clear).
    std::optional<PortSlot> port;
    if (slot_by_test) {
        port.emplace(*port_bdf);
        if (!port->present())
            fail("the slot of " + port->bdf() +
                 " does not report its device present: the VM does not signal hot-plug "
                 "natively (neuron-vm --hotplug=pcie)");
    }
    if (!slot_by_test && !hotplug_slot(dev->bdf))
        fail(std::string("no hot-plug slot holds ") + dev->bdf +
             " in /sys/bus/pci/slots: the kernel has no PCI hot-plug driver for it "
             "(CONFIG_HOTPLUG_PCI_PCIE or CONFIG_HOTPLUG_PCI_ACPI); --remove qmp-slot does "
             "its part (with neuron-vm --hotplug=pcie)");
    if (slot_by_test && hotplug_slot(dev->bdf))
        fail(std::string("a PCI hot-plug driver holds the slot of ") + dev->bdf +
             " (/sys/bus/pci/slots): it would race the test for the slot; use --remove qmp");
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
        host_request("device_del neuron0");
        // Without a hot-plug driver, the test does its part: the press of
        // the attention button is QEMU's request, the PCI core's removal
        // returns once the driver has let go of the device (so it runs
        // beside the workers it stops), and powering the slot off tells
        // QEMU to unplug the device.
        std::thread remover;
        if (slot_by_test) {
            if (!wait_until(60s, [&] { return port->status() & PCI_EXP_SLTSTA_ABP; }))
                fail("no attention-button press in the slot of " + port->bdf() +
                     " 60 s after the device_del request (see qmp.log in the results)");
            std::printf("device_del: attention button pressed %.1f s after the request\n",
                        seconds_since(unplugged));
            port->clear(PCI_EXP_SLTSTA_ABP);
            remover = std::thread(write_sysfs, pci + "/remove", "1");
        }
        for (auto &w : workers) {
            if (!wait_until(60s, [&] { return w.ended.load(std::memory_order_acquire); }))
                fail(std::string(w.name) + ": still running 60 s after the unplug");
            w.thread.join();
            std::printf("%s: %llu checked before the unplug, then: %s\n", w.name,
                        static_cast<unsigned long long>(w.ok.load()), w.ending.c_str());
        }
        std::printf("all workers stopped %.1f s after the unplug request\n",
                    seconds_since(unplugged));
        if (remover.joinable())
            remover.join();
        if (!wait_until(60s, [&] { return !exists(pci); }))
            fail(pci + " still exists 60 s after its removal");
        if (slot_by_test) {
            std::printf("the PCI core removed the device %.1f s after the device_del request\n",
                        seconds_since(unplugged));
            port->power(false);
            if (!wait_until(30s, [&] { return !port->present(); }))
                fail("device_del did not complete: the slot of " + port->bdf() +
                     " still holds the device 30 s after the test powered the slot off "
                     "(QEMU unplugs the device once its slot is powered off)");
            port->clear(PCI_EXP_SLTSTA_PDC);
            std::printf("QEMU unplugged the device %.1f s after the device_del request\n",
                        seconds_since(unplugged));
        }
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

    auto replugged = Clock::now();
    host_request("device_add neuron0");
    if (slot_by_test) {
        if (!wait_until(60s, [&] { return port->present(); }))
            fail("device_add: the slot of " + port->bdf() +
                 " reports no device 60 s after the request (see qmp.log in the results)");
        port->power(true);
        port->clear(PCI_EXP_SLTSTA_PDC | PCI_EXP_SLTSTA_ABP);
        write_sysfs("/sys/bus/pci/rescan", "1");
    }
    if (!wait_until(60s, [] { return find_device().has_value(); }))
        fail("no neuron device 60 s after it was brought back");
    std::printf("the device is back %.1f s after the device_add request\n",
                seconds_since(replugged));
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
