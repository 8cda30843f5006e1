// SPDX-License-Identifier: MIT
// neuron-ls against a fake sysfs/proc tree: golden table, wide and JSON
// output, the JSON schema, error messages and exit statuses, --help vs man.
#include <chrono>
#include <grp.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <neuron/buffer.hpp>
#include <neuron/device.hpp>

#include "fake_tree.hpp"
#include "json_schema.hpp"
#include "ls.hpp"
#include "test_support.hpp"

// cmocka last: it defines macros (fail, ...) that clash with C++ headers.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

extern "C" {
#include <cmocka.h>
}

namespace {

using neuron::tools::Roots;
namespace ls = neuron::tools::ls;

struct Result {
    int status;
    std::string out;
    std::string err;
};

Result run_ls(const Roots &roots, std::vector<const char *> args) {
    args.insert(args.begin(), "neuron-ls");
    std::ostringstream out, err;
    int status = ls::run(static_cast<int>(args.size()), args.data(), out, err, roots);
    return {status, out.str(), err.str()};
}

void test_table(void **) {
    fake::Tree t;
    t.standard();
    Result r = run_ls(t.roots(), {});
    assert_int_equal(r.status, neuron::tools::exit_ok);
    assert_string_equal(r.err.c_str(), "");
    assert_true(support::golden("neuron-ls-table.txt", r.out));
}

void test_wide(void **) {
    fake::Tree t;
    t.standard();
    Result r = run_ls(t.roots(), {"--wide"});
    assert_int_equal(r.status, neuron::tools::exit_ok);
    assert_true(support::golden("neuron-ls-wide.txt", r.out));
    // The file shared by train and train-worker is counted once, for train.
    assert_true(r.out.find("train-worker") != std::string::npos);
    assert_true(r.out.find("bash") == std::string::npos);
}

void test_json(void **) {
    fake::Tree t;
    t.standard();
    Result r = run_ls(t.roots(), {"--json"});
    assert_int_equal(r.status, neuron::tools::exit_ok);
    assert_true(support::golden("neuron-ls.json", r.out));

    auto doc = nlohmann::json::parse(r.out);
    auto schema_doc = nlohmann::json::parse(
        support::slurp(std::string(NEURON_TOOLS_SOURCE_DIR) + "/neuron-ls.schema.json"));
    schema::Validator v(schema_doc);
    auto errors = v.validate(doc);
    for (const auto &e : errors)
        fprintf(stderr, "schema: %s\n", e.c_str());
    assert_true(errors.empty());

    // The numbers users rely on.
    assert_int_equal(doc.size(), 2);
    assert_int_equal(doc[0]["nc_count"], 2);
    assert_true(doc[0]["numa_node"].is_null());
    assert_int_equal(doc[1]["numa_node"], 0);
    assert_int_equal(doc[0]["memory_size"].get<uint64_t>(), 256 * fake::MiB);
    auto &p0 = doc[0]["neuron_processes"];
    assert_int_equal(p0.size(), 2);
    assert_int_equal(p0[0]["pid"], 1200);
    assert_int_equal(p0[0]["memory_used"].get<uint64_t>(), 64 * fake::MiB);
    assert_int_equal(p0[0]["clients"], 1);
    assert_int_equal(doc[1]["neuron_processes"][0]["pid"], 1201);

    // A document that breaks the schema is caught by the validator.
    doc[0].erase("bdf");
    doc[1]["state"] = "sleeping";
    doc[1]["nc_count"] = "2";
    assert_int_equal(v.validate(doc).size(), 3);
}

void test_no_driver(void **) {
    fake::Tree t;
    Result r = run_ls(t.roots(), {});
    assert_int_equal(r.status, neuron::tools::exit_no_driver);
    assert_string_equal(r.err.c_str(), "neuron: driver not loaded: run modprobe neuron, or use the "
                                       "simulator: -d sim (NEURON_DEVICE=sim)\n");
    assert_string_equal(r.out.c_str(), "");
    // The device asked for is named, with where it came from.
    r = run_ls(t.roots(), {"-d", "/dev/accel/accel3"});
    assert_int_equal(r.status, neuron::tools::exit_no_driver);
    assert_true(r.err.find("neuron: -d /dev/accel/accel3: driver not loaded: run modprobe") == 0);
}

void test_no_devices(void **) {
    fake::Tree t;
    t.set_driver("0.1.0");
    // An accel device of another driver is not ours.
    t.add_device(0, "0000:00:05.0", -1, 0, 0, 0, "", "ivpu");
    Result r = run_ls(t.roots(), {});
    assert_int_equal(r.status, neuron::tools::exit_no_devices);
    assert_true(r.err.find("neuron: no devices: the driver is loaded") == 0);
    r = run_ls(t.roots(), {"--json"});
    assert_int_equal(r.status, neuron::tools::exit_no_devices);
    assert_string_equal(r.out.c_str(), "[]\n");
}

void test_missing_attributes(void **) {
    // An older driver without some attributes: shown as "-", JSON null.
    fake::Tree t;
    t.set_driver("");
    t.add_device(2, "0000:00:03.0", -1, 1, 0, 0, "ready");
    std::filesystem::remove(t.attrs(2) / "fw_version");
    std::filesystem::remove(t.attrs(2) / "memory_used");
    std::filesystem::remove(t.attrs(2) / "state");
    Result r = run_ls(t.roots(), {});
    assert_int_equal(r.status, neuron::tools::exit_ok);
    assert_true(support::golden("neuron-ls-missing.txt", r.out));
    r = run_ls(t.roots(), {"--json"});
    auto doc = nlohmann::json::parse(r.out);
    assert_true(doc[0]["fw_version"].is_null());
    assert_true(doc[0]["driver_version"].is_null());
    assert_string_equal(doc[0]["state"].get<std::string>().c_str(), "unknown");
}

// Runs neuron-ls as a user that is not root: as nobody when we are root
// (with `groups` as supplementary groups), else as ourselves.
Result run_unprivileged(const Roots &roots, const std::vector<gid_t> &groups) {
    int out_pipe[2], err_pipe[2];
    if (pipe(out_pipe) || pipe(err_pipe))
        fail_msg("pipe failed");
    pid_t pid = fork();
    if (pid == 0) {
        if (geteuid() == 0) {
            if (setgroups(groups.size(), groups.data()) || setgid(65534) || setuid(65534))
                _exit(100);
        }
        std::ostringstream out, err;
        const char *argv[] = {"neuron-ls", nullptr};
        int status = ls::run(1, argv, out, err, roots);
        std::string o = out.str(), e = err.str();
        if (write(out_pipe[1], o.data(), o.size()) < 0 ||
            write(err_pipe[1], e.data(), e.size()) < 0)
            _exit(101);
        _exit(status);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    auto drain = [](int fd) {
        std::string s;
        char buf[4096];
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0)
            s.append(buf, static_cast<size_t>(n));
        close(fd);
        return s;
    };
    Result r;
    r.out = drain(out_pipe[0]);
    r.err = drain(err_pipe[0]);
    int ws = 0;
    waitpid(pid, &ws, 0);
    r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    return r;
}

void test_permission(void **) {
    fake::Tree t;
    t.standard();
    const gid_t render_gid = 4242;
    for (const char *n : {"dev/accel/accel0", "dev/accel/accel1"}) {
        std::filesystem::path node = t.root / n;
        if (geteuid() == 0) {
            assert_int_equal(chown(node.c_str(), 0, render_gid), 0);
        } else {
            chmod(node.c_str(), 0); // we cannot chown: make it unreadable instead
        }
    }
    // Outside the group: the table, then what to do, and exit status 5.
    Result r = run_unprivileged(t.roots(), {});
    assert_int_equal(r.status, neuron::tools::exit_no_access);
    assert_true(r.out.find("0000:00:03.0") != std::string::npos);
    fprintf(stderr, "%s", r.err.c_str());
    assert_true(r.err.find("neuron: /dev/accel/accel0: permission denied (owner ") == 0);
    assert_true(r.err.find("add the user to group") != std::string::npos ||
                r.err.find("install the udev rule") != std::string::npos);
    if (geteuid() != 0)
        return;
    assert_true(r.err.find("mode 0660): add the user to group 4242") != std::string::npos);
    // In the group: fine.
    r = run_unprivileged(t.roots(), {render_gid});
    assert_int_equal(r.status, neuron::tools::exit_ok);
    assert_string_equal(r.err.c_str(), "");
    // A node that udev did not fix up (root:root 0600).
    chown((t.root / "dev/accel/accel1").c_str(), 0, 0);
    chmod((t.root / "dev/accel/accel1").c_str(), 0600);
    r = run_unprivileged(t.roots(), {render_gid});
    assert_int_equal(r.status, neuron::tools::exit_no_access);
    assert_true(r.err.find("neuron: /dev/accel/accel1: permission denied (owner root:root, mode "
                           "0600): install the udev rule 70-neuron.rules") == 0);
}

void test_fdinfo_parse(void **) {
    auto c = neuron::tools::parse_fdinfo("pos:\t0\ndrm-driver:\tneuron\ndrm-pdev:\t0000:00:03.0\n"
                                         "drm-client-id:\t12\ndrm-engine-core1:\t300 ns\n"
                                         "drm-engine-capacity-core1:\t1\n"
                                         "drm-total-device:\t2 MiB\ndrm-total-host:\t4096\n");
    assert_true(c.has_value());
    assert_string_equal(c->pdev.c_str(), "0000:00:03.0");
    assert_int_equal(*c->client_id, 12);
    assert_int_equal(c->engine_ns.at(1), 300);
    assert_int_equal(c->engine_ns.count(0), 0);
    assert_int_equal(c->device_total, 2 * fake::MiB);
    assert_int_equal(c->host_total, 4096);
    assert_false(
        neuron::tools::parse_fdinfo("drm-driver:\tamdgpu\ndrm-client-id:\t3\n").has_value());
    assert_false(neuron::tools::parse_fdinfo("pos:\t0\nflags:\t0\n").has_value());
}

// The simulator, with -d sim or NEURON_DEVICE=sim, without a driver: the
// devices running processes simulate, else the one the selector describes.
void test_sim(void **) {
    fake::Tree t;
    std::filesystem::path dir = t.root / "sim";
    setenv("NEURON_SIM_DIR", dir.c_str(), 1);
    Result r = run_ls(t.roots(), {"-d", "sim:cores=3,mem=64M"});
    assert_int_equal(r.status, neuron::tools::exit_ok);
    assert_true(r.out.find("neuron driver sim, 1 device\n") == 0);
    nlohmann::json doc;
    assert_true(r.out.find("sim:" + std::to_string(getpid())) != std::string::npos);
    assert_true(std::filesystem::is_empty(dir)); // gone with the device neuron-ls simulated
    // devices=N makes N devices, as for the library's enumerate(): all listed.
    r = run_ls(t.roots(), {"-d", "sim:devices=2,mem=64M", "--json"});
    assert_int_equal(r.status, neuron::tools::exit_ok);
    doc = nlohmann::json::parse(r.out);
    assert_int_equal(doc.size(), 2);
    assert_int_equal(doc[1]["memory_size"].get<uint64_t>(), 64u << 20);
    assert_true(std::filesystem::is_empty(dir));
    setenv("NEURON_DEVICE", "sim:cores=3,mem=64M", 1);
    r = run_ls(t.roots(), {"--json"});
    unsetenv("NEURON_DEVICE");
    assert_int_equal(r.status, neuron::tools::exit_ok);
    doc = nlohmann::json::parse(r.out);
    assert_int_equal(doc.size(), 1);
    assert_int_equal(doc[0]["nc_count"].get<int>(), 3);
    assert_int_equal(doc[0]["memory_size"].get<uint64_t>(), 64u << 20);
    assert_true(doc[0]["memory_used"].is_number()); // not null: the simulator counts
    assert_int_equal(doc[0]["memory_used"].get<uint64_t>(), 0);
    {
        // A device this process simulates is the one listed, whatever the
        // options, with the memory of its buffers once published (every
        // 100 ms while it changes).
        neuron::Device sim = neuron::Device::open("sim:cores=4,mem=32M");
        neuron::Buffer b = sim.allocate(1 << 20);
        uint64_t used = 0;
        for (int i = 0; i < 100 && used != 1u << 20; i++) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            r = run_ls(t.roots(), {"-d", "sim", "--json"});
            used = nlohmann::json::parse(r.out)[0]["memory_used"].get<uint64_t>();
        }
        assert_int_equal(used, 1u << 20);
        doc = nlohmann::json::parse(r.out);
        assert_int_equal(doc.size(), 1);
        assert_int_equal(doc[0]["nc_count"].get<int>(), 4);
        r = run_ls(t.roots(), {"-d", "sim"});
        assert_true(r.out.find("1.0 MiB / 32.0 MiB") != std::string::npos);
    }
    r = run_ls(t.roots(), {"-d", "sim:cores=99"});
    assert_int_equal(r.status, neuron::tools::exit_usage);
    assert_true(r.err.find("neuron-ls: -d sim:cores=99: ") == 0);
    assert_true(r.err.find("cores=99") != std::string::npos);
    unsetenv("NEURON_SIM_DIR");
}

// -d selects one device of the driver, by index, node or PCI address.
void test_select(void **) {
    fake::Tree t;
    t.standard();
    Result r = run_ls(t.roots(), {"-d", "1", "--json"});
    assert_int_equal(r.status, neuron::tools::exit_ok);
    auto doc = nlohmann::json::parse(r.out);
    assert_int_equal(doc.size(), 1);
    assert_int_equal(doc[0]["neuron_device"].get<int>(), 1);
    std::string bdf = doc[0]["bdf"].get<std::string>();
    r = run_ls(t.roots(), {"-d", bdf.c_str(), "--json"});
    assert_int_equal(nlohmann::json::parse(r.out)[0]["neuron_device"].get<int>(), 1);
    r = run_ls(t.roots(), {"-d", "/dev/accel/accel0", "--json"});
    assert_int_equal(nlohmann::json::parse(r.out)[0]["neuron_device"].get<int>(), 0);
    r = run_ls(t.roots(), {"-d", "7"});
    assert_int_equal(r.status, neuron::tools::exit_no_devices);
    assert_string_equal(r.err.c_str(), "neuron-ls: -d 7: no such device (neuron-ls lists them)\n");
    setenv("NEURON_DEVICE", "7", 1);
    r = run_ls(t.roots(), {});
    unsetenv("NEURON_DEVICE");
    assert_string_equal(r.err.c_str(),
                        "neuron-ls: NEURON_DEVICE='7': no such device (neuron-ls lists them)\n");
}

void test_help_matches_man(void **) {
    fake::Tree t;
    Result r = run_ls(t.roots(), {"--help"});
    assert_int_equal(r.status, 0);
    auto help = support::long_options(r.out);
    auto man = support::man_options(std::string(NEURON_TOOLS_SOURCE_DIR) + "/man/neuron-ls.1");
    if (help != man)
        fprintf(stderr, "--help: %s\nman:    %s\n", support::join(help).c_str(),
                support::join(man).c_str());
    assert_true(help == man);
    assert_true(help.count("--json") && help.count("--wide"));

    r = run_ls(t.roots(), {"--bogus"});
    assert_int_equal(r.status, neuron::tools::exit_usage);
    assert_true(r.err.find("neuron-ls: ") == 0);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_wide),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_no_driver),
        cmocka_unit_test(test_no_devices),
        cmocka_unit_test(test_missing_attributes),
        cmocka_unit_test(test_permission),
        cmocka_unit_test(test_fdinfo_parse),
        cmocka_unit_test(test_sim),
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_help_matches_man),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
