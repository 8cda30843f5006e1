// SPDX-License-Identifier: MIT
// A fake /sys, /proc and /dev for the tools' tests: two neuron devices and a
// known set of processes using them, in a temporary directory.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "neuron_tools/sysfs.hpp"

namespace fake {

namespace fs = std::filesystem;

inline constexpr uint64_t MiB = 1ull << 20;

struct Tree {
    fs::path root;

    Tree() {
        std::string tmpl = (fs::temp_directory_path() / "neuron-tools-XXXXXX").string();
        if (!mkdtemp(tmpl.data()))
            throw std::runtime_error("mkdtemp failed");
        root = tmpl;
        // Other users (the permission tests drop privileges) must see it.
        fs::permissions(root, fs::perms(0755));
        fs::create_directories(root / "sys/class/accel");
        fs::create_directories(root / "sys/bus/pci/drivers/neuron");
        fs::create_directories(root / "sys/bus/pci/devices");
        fs::create_directories(root / "proc");
        fs::create_directories(root / "dev/accel");
    }
    ~Tree() {
        std::error_code ec;
        fs::remove_all(root, ec);
    }
    Tree(const Tree &) = delete;
    Tree &operator=(const Tree &) = delete;

    neuron::tools::Roots roots() const {
        neuron::tools::Roots r;
        r.sys = root / "sys";
        r.proc = root / "proc";
        r.dev = root / "dev";
        return r;
    }

    static void write(const fs::path &p, const std::string &content) {
        fs::create_directories(p.parent_path());
        std::ofstream out(p, std::ios::trunc);
        out << content;
        if (!out)
            throw std::runtime_error("cannot write " + p.string());
    }

    fs::path pci(const std::string &bdf) const { return root / "sys/devices/pci0000:00" / bdf; }
    fs::path attrs(unsigned index) const {
        return root / "sys/class/accel" / ("accel" + std::to_string(index)) / "device/neuron";
    }

    void set_driver(const std::string &version) {
        fs::create_directories(root / "sys/module/neuron");
        if (!version.empty())
            write(root / "sys/module/neuron/version", version + "\n");
    }

    /// A PCI device bound to `driver` with accel node accel<index>.
    void add_device(unsigned index, const std::string &bdf, int numa, unsigned cores,
                    uint64_t mem_total, uint64_t mem_used, const std::string &state,
                    const std::string &driver = "neuron") {
        fs::path dev = pci(bdf);
        std::string name = "accel" + std::to_string(index);
        fs::create_directories(dev / "accel" / name);
        fs::create_directories(root / "sys/bus/pci/drivers" / driver);
        fs::create_symlink("../../../bus/pci/drivers/" + driver, dev / "driver");
        fs::create_symlink("../../../" + bdf, dev / "accel" / name / "device");
        fs::create_symlink("../../devices/pci0000:00/" + bdf + "/accel/" + name,
                           root / "sys/class/accel" / name);
        fs::create_symlink("../../../devices/pci0000:00/" + bdf,
                           root / "sys/bus/pci/devices" / bdf);
        write(dev / "numa_node", std::to_string(numa) + "\n");
        if (driver != "neuron")
            return;
        fs::path a = dev / "neuron";
        write(a / "cores", std::to_string(cores) + "\n");
        write(a / "dma_engines", "2\n");
        write(a / "memory_total", std::to_string(mem_total) + "\n");
        write(a / "memory_used", std::to_string(mem_used) + "\n");
        write(a / "hw_version", "1.0\n");
        write(a / "fw_version", "1.2\n");
        write(a / "state", state + "\n");
        write(a / "reset_count", "0\n");
        for (unsigned c = 0; c < cores; c++)
            set_core(index, c, 0, 0, 0, 0, 0);
        for (unsigned d = 0; d < 2; d++)
            set_dma(index, d, 0);
        write(root / "dev/accel" / name, "");
        chmod((root / "dev/accel" / name).c_str(), 0660);
    }

    void set_attr(unsigned index, const std::string &name, const std::string &value) {
        write(attrs(index) / name, value + "\n");
    }

    void set_core(unsigned index, unsigned core, uint64_t busy_ns, uint64_t jobs, uint64_t faults,
                  uint64_t resets, uint64_t timeouts) {
        fs::path c = attrs(index) / ("core" + std::to_string(core));
        write(c / "busy_ns", std::to_string(busy_ns) + "\n");
        write(c / "jobs", std::to_string(jobs) + "\n");
        write(c / "faults", std::to_string(faults) + "\n");
        write(c / "resets", std::to_string(resets) + "\n");
        write(c / "timeouts", std::to_string(timeouts) + "\n");
        write(c / "instructions", std::to_string(jobs * 100) + "\n");
        write(c / "flops", std::to_string(jobs * 1000) + "\n");
        write(c / "dma_bytes", std::to_string(jobs * 4096) + "\n");
    }

    void set_dma(unsigned index, unsigned engine, uint64_t bytes) {
        fs::path d = attrs(index) / ("dma" + std::to_string(engine));
        write(d / "bytes", std::to_string(bytes) + "\n");
        write(d / "descriptors", std::to_string(bytes / 4096) + "\n");
        write(d / "errors", "0\n");
    }

    void add_process(int pid, const std::string &comm) {
        fs::path p = root / "proc" / std::to_string(pid);
        fs::create_directories(p / "fd");
        fs::create_directories(p / "fdinfo");
        write(p / "comm", comm + "\n");
    }

    /// An fd of `pid` open on accel<index> with this fdinfo body.
    void add_fd(int pid, int fd, const std::string &target, const std::string &fdinfo) {
        fs::path p = root / "proc" / std::to_string(pid);
        fs::create_symlink(target, p / "fd" / std::to_string(fd));
        write(p / "fdinfo" / std::to_string(fd),
              "pos:\t0\nflags:\t02100002\nmnt_id:\t24\n" + fdinfo);
    }

    static std::string neuron_fdinfo(const std::string &bdf, uint64_t client, uint64_t dev_kib,
                                     uint64_t host_kib, const std::vector<uint64_t> &core_ns) {
        std::string s = "drm-driver:\tneuron\ndrm-pdev:\t" + bdf + "\ndrm-client-id:\t" +
                        std::to_string(client) + "\n";
        for (size_t i = 0; i < core_ns.size(); i++) {
            s += "drm-engine-core" + std::to_string(i) + ":\t" + std::to_string(core_ns[i]) +
                 " ns\n";
            s += "drm-engine-capacity-core" + std::to_string(i) + ":\t1\n";
        }
        s += "drm-total-device:\t" + std::to_string(dev_kib) + " KiB\n";
        s += "drm-resident-device:\t" + std::to_string(dev_kib) + " KiB\n";
        s += "drm-total-host:\t" + std::to_string(host_kib) + " KiB\n";
        s += "drm-resident-host:\t" + std::to_string(host_kib) + " KiB\n";
        return s;
    }

    /// The standard scene: driver 0.1.0, two devices, four processes.
    void standard() {
        set_driver("0.1.0");
        add_device(0, "0000:00:03.0", -1, 2, 256 * MiB, 80 * MiB, "ready");
        add_device(1, "0000:00:04.0", 0, 2, 256 * MiB, 16 * MiB, "ready");
        // train: one file on accel0, dup'ed onto two fds.
        add_process(1200, "train");
        std::string f7 = neuron_fdinfo("0000:00:03.0", 7, 64 * 1024, 1024, {5000000000, 0});
        add_fd(1200, 3, "/dev/accel/accel0", f7);
        add_fd(1200, 4, "/dev/accel/accel0", f7);
        add_fd(1200, 0, "/dev/pts/0", "");
        // train-worker: inherited the same file (fork), plus its own on accel1.
        add_process(1201, "train-worker");
        add_fd(1201, 3, "/dev/accel/accel0", f7);
        add_fd(1201, 5, "/dev/accel/accel1",
               neuron_fdinfo("0000:00:04.0", 9, 16 * 1024, 0, {0, 2500000000}));
        // infer: its own file on accel0.
        add_process(1300, "infer");
        add_fd(1300, 3, "/dev/accel/accel0",
               neuron_fdinfo("0000:00:03.0", 8, 16 * 1024, 0, {0, 1000000000}));
        // bash: nothing of ours.
        add_process(1400, "bash");
        add_fd(1400, 1, "/dev/null", "");
    }
};

} // namespace fake
