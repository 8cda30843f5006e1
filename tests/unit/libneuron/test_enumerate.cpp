// SPDX-License-Identifier: MIT
// Enumeration and opening against a fake sysfs tree.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.hpp"

using namespace neuron;
namespace fs = std::filesystem;

namespace {

fs::path root;

void write(const fs::path &p, const std::string &s) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << s;
}

/// /sys/class/accel/<name> -> a PCI device at <bdf> bound to <driver>.
void add_accel(const std::string &name, const std::string &bdf, const std::string &driver,
               const std::string &device_id = "0x7f00") {
    fs::path sys = root / "sys";
    fs::path dev = sys / "devices/pci0000:00" / bdf;
    fs::create_directories(dev / "accel" / name);
    fs::create_directories(sys / "bus/pci/drivers" / driver);
    fs::create_symlink("../../../bus/pci/drivers/" + driver, dev / "driver");
    write(dev / "vendor", "0x1d0f\n");
    write(dev / "device", device_id + "\n");
    write(dev / "numa_node", "-1\n");
    fs::create_directories(sys / "class/accel");
    fs::create_symlink("../../devices/pci0000:00/" + bdf + "/accel/" + name,
                       sys / "class/accel" / name);
    fs::create_symlink("../../../" + bdf, dev / "accel" / name / "device");
}

SysPaths paths() {
    return SysPaths{(root / "sys").string(), (root / "dev").string()};
}

int setup(void **) {
    root = fs::temp_directory_path() / ("neuron-sysfs-" + std::to_string(getpid()));
    fs::remove_all(root);
    add_accel("accel0", "0000:00:03.0", "neuron");
    add_accel("accel1", "0000:00:04.0", "habanalabs");
    add_accel("accel2", "0000:00:05.0", "neuron");
    add_accel("accel10", "0001:2a:1f.7", "neuron");
    fs::create_directories(root / "sys/class/accel/card0"); // not an accel node name
    fs::create_directories(root / "dev/accel");
    write(root / "dev/accel/accel0", "not a device\n");
    return 0;
}

int teardown(void **) {
    fs::remove_all(root);
    return 0;
}

template <typename F> std::string error_of(F &&f, errc want) {
    try {
        f();
    } catch (const Error &e) {
        if (e.code() != want)
            fail_msg("wrong code %d: %s", e.code().value(), e.what());
        return e.what();
    }
    fail_msg("no error");
    return {};
}

void contains(const std::string &s, const char *sub) {
    if (s.find(sub) == std::string::npos)
        fail_msg("'%s' not in '%s'", sub, s.c_str());
}

} // namespace

static void lists_neuron_devices(void **) {
    auto devs = enumerate(paths());
    assert_int_equal(devs.size(), 3);
    assert_int_equal(devs[0].index, 0);
    assert_int_equal(devs[1].index, 2);
    assert_int_equal(devs[2].index, 10);
    assert_string_equal(devs[0].pci_address.c_str(), "0000:00:03.0");
    assert_string_equal(devs[2].pci_address.c_str(), "0001:2a:1f.7");
    assert_string_equal(devs[1].node.c_str(), (root / "dev/accel/accel2").c_str());
    assert_int_equal(devs[0].vendor_id, 0x1d0f);
    assert_int_equal(devs[0].device_id, 0x7f00);
    assert_int_equal(devs[0].numa_node, -1);
}

static void env_override(void **) {
    setenv("NEURON_SYSFS_ROOT", (root / "sys").c_str(), 1);
    setenv("NEURON_DEV_ROOT", (root / "dev").c_str(), 1);
    auto p = SysPaths::from_env();
    assert_string_equal(p.sysfs_root.c_str(), (root / "sys").c_str());
    assert_int_equal(enumerate().size(), 3);
    unsetenv("NEURON_SYSFS_ROOT");
    unsetenv("NEURON_DEV_ROOT");
    assert_string_equal(SysPaths::from_env().sysfs_root.c_str(), "/sys");
}

static void no_devices(void **) {
    SysPaths empty{(root / "nothing").string(), (root / "dev").string()};
    assert_int_equal(enumerate(empty).size(), 0);
    auto m = error_of([&] { Device::open_first(empty); }, errc::no_device);
    contains(m, "no neuron devices");
    contains(m, "neuron.ko is not loaded (run 'modprobe neuron'); or use the simulator: "
                "NEURON_DEVICE=sim (-d sim for the tools)");
    m = error_of([&] { Device::open(0, empty); }, errc::no_device);
    contains(m, "neuron device 0: no neuron devices");
}

// One selector for every tool and the library: its kinds, where it came
// from, and errors that name that source.
static void selectors(void **) {
    using Kind = DeviceSelector::Kind;
    auto s = DeviceSelector::parse("sim:cores=4,mem=1G", "-d sim:cores=4,mem=1G");
    assert_true(s.kind == Kind::sim && s.is_sim());
    assert_string_equal(s.sim_options.c_str(), "cores=4,mem=1G");
    s = DeviceSelector::parse("sim", "x");
    assert_true(s.is_sim() && s.sim_options.empty());
    s = DeviceSelector::parse("12", "x");
    assert_true(s.kind == Kind::index && s.index == 12);
    s = DeviceSelector::parse("/dev/accel/accel1", "x");
    assert_true(s.kind == Kind::node && s.node == "/dev/accel/accel1");
    s = DeviceSelector::parse("00:05.0", "x");
    assert_true(s.kind == Kind::pci && s.pci_address == "0000:00:05.0");
    auto m = error_of([] { (void)DeviceSelector::parse("simulator", "-d simulator"); },
                      errc::invalid_argument);
    contains(m, "-d simulator: not a device: expected an index (0), a device node");
    contains(m, "or the simulator (sim, sim:cores=4,mem=1G)");

    unsetenv("NEURON_DEVICE");
    s = DeviceSelector::from(std::nullopt);
    assert_true(s.kind == Kind::first && s.source.empty());
    setenv("NEURON_DEVICE", "7", 1);
    s = DeviceSelector::from(std::nullopt);
    assert_string_equal(s.source.c_str(), "NEURON_DEVICE='7'");
    s = DeviceSelector::from(std::string("2"), "--device"); // the command line wins
    assert_string_equal(s.source.c_str(), "--device 2");
    setenv("NEURON_DEVICE", "nonsense", 1);
    m = error_of([] { (void)DeviceSelector::from(std::nullopt); }, errc::invalid_argument);
    contains(m, "NEURON_DEVICE='nonsense': not a device");
    unsetenv("NEURON_DEVICE");

    m = error_of([] { open_selected(DeviceSelector::parse("7", "-d 7"), paths()); },
                 errc::no_device);
    contains(m, "-d 7: neuron device 7: no such device: the neuron devices are 0");
    SysPaths empty{(root / "nothing").string(), (root / "dev").string()};
    m = error_of([&] { open_selected(DeviceSelector::parse("0", "NEURON_DEVICE='0'"), empty); },
                 errc::no_device);
    contains(m, "NEURON_DEVICE='0': neuron device 0: no neuron devices: ");
    contains(m, "or use the simulator: NEURON_DEVICE=sim");
    // The simulator's options, checked by its parser as the selector is
    // parsed, before any device is made or looked for.
    m = error_of([] { (void)DeviceSelector::parse("sim:cores=99", "-d sim:cores=99"); },
                 errc::invalid_argument);
    assert_string_equal(m.c_str(), "-d sim:cores=99: option cores=99: must be 1..16");
    m = error_of([] { (void)DeviceSelector::parse("sim:bogus=1", ""); }, errc::invalid_argument);
    contains(m, "sim:bogus=1: unknown option 'bogus' (known: cores, ");
    m = error_of([] { (void)Device::open("sim:mem=1x"); }, errc::invalid_argument);
    contains(m, "sim:mem=1x: option mem=1x: expected a number");
    setenv("NEURON_SIM_OPTIONS", "bogus=1", 1);
    m = error_of([] { (void)DeviceSelector::parse("sim", "NEURON_DEVICE='sim'"); },
                 errc::invalid_argument);
    contains(m, "NEURON_DEVICE='sim': NEURON_SIM_OPTIONS='bogus=1': unknown option 'bogus'");
    unsetenv("NEURON_SIM_OPTIONS");
}

static void open_errors(void **) {
    auto m = error_of([] { Device::open(7, paths()); }, errc::no_device);
    contains(m, "neuron device 7: no such device: the neuron devices are 0 (0000:00:03.0), "
                "2 (0000:00:05.0), 10 (0001:2a:1f.7)");
    m = error_of([] { Device::open("0000:00:07.0", paths()); }, errc::no_device);
    contains(m, "PCI device 0000:00:07.0: no neuron device at this address");
    // Short BDF form, matched; the node does not exist in the fake /dev.
    m = error_of([] { Device::open("00:05.0", paths()); }, errc::no_device);
    contains(m, "accel2: No such file or directory (ENOENT): the device node does not exist");
    m = error_of([] { Device::open("2", paths()); }, errc::no_device);
    contains(m, "accel2");
    // A node that is not a DRM device.
    m = error_of([] { Device::open(0, paths()); }, errc::not_supported);
    contains(m, "accel0: not a DRM device");
    m = error_of([] { Device::open("gpu0", paths()); }, errc::invalid_argument);
    contains(m, "'gpu0': not a device");
}

static void permission_denied(void **) {
    if (geteuid() == 0) {
        // root opens anything; check as an unprivileged user if we can.
        skip();
    }
    fs::path node = root / "dev/accel/accel2";
    write(node, "");
    chmod(node.c_str(), 0);
    auto m = error_of([] { Device::open(2, paths()); }, errc::permission_denied);
    contains(m, "accel2: permission denied: ");
    fs::remove(node);
}

static void pci_addresses(void **) {
    assert_string_equal(normalize_pci_address("0000:00:03.0")->c_str(), "0000:00:03.0");
    assert_string_equal(normalize_pci_address("3A:1F.7")->c_str(), "0000:3a:1f.7");
    assert_false(normalize_pci_address("00:20.0").has_value()); // device > 31
    assert_false(normalize_pci_address("00:03").has_value());
    assert_false(normalize_pci_address("xyz").has_value());
    assert_false(normalize_pci_address("00000:00:03.0").has_value());
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lists_neuron_devices),
        cmocka_unit_test(env_override),
        cmocka_unit_test(no_devices),
        cmocka_unit_test(open_errors),
        cmocka_unit_test(permission_denied),
        cmocka_unit_test(pci_addresses),
        cmocka_unit_test(selectors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
