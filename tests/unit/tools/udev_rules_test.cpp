// SPDX-License-Identifier: MIT
// The udev rule and the module configuration files say what docs/tools.md
// promises, modprobe.d documents every parameter of neuron.ko, and the DKMS
// source and the Debian packages carry the project version.
#include <filesystem>
#include <regex>

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

namespace fs = std::filesystem;

// The rules with comments and blank lines removed.
std::string rules() {
    std::string text = support::slurp(fs::path(NEURON_UDEV_DIR) / "70-neuron.rules");
    return std::regex_replace(text, std::regex(R"((^|\n)[ \t]*#[^\n]*)"), "$1");
}

void test_rule(void **) {
    std::string r = rules();
    for (const char *want :
         {R"(SUBSYSTEM=="accel")", R"(KERNEL=="accel[0-9]*")", R"(DRIVERS=="neuron")",
          R"(GROUP="render")", R"(MODE="0660")", R"(TAG+="uaccess")",
          R"(IMPORT{builtin}="path_id")", R"(SYMLINK+="neuron/by-path/$env{ID_PATH}")"}) {
        if (r.find(want) == std::string::npos)
            fail_msg("70-neuron.rules lacks %s", want);
    }
    // A negated parent match (DRIVERS!=) would match the accel device
    // itself, which has no driver: the rule must not use one.
    assert_true(r.find("DRIVERS!=") == std::string::npos);
    // Every GOTO has its LABEL.
    std::regex go(R"re(GOTO="([a-z_]+)")re");
    for (auto it = std::sregex_iterator(r.begin(), r.end(), go); it != std::sregex_iterator(); ++it)
        if (r.find("LABEL=\"" + (*it)[1].str() + "\"") == std::string::npos)
            fail_msg("GOTO=%s without its LABEL", (*it)[1].str().c_str());
}

void test_modprobe_documents_every_parameter(void **) {
    std::string conf = support::slurp(fs::path(NEURON_UDEV_DIR) / "modprobe.d/neuron.conf");
    std::regex param(R"(module_param(?:_named|_cb|_unsafe)?\(\s*([a-z_0-9]+))");
    int found = 0;
    for (const auto &e : fs::directory_iterator(NEURON_KMOD_DIR)) {
        if (e.path().extension() != ".c")
            continue;
        std::string src = support::slurp(e.path());
        for (auto it = std::sregex_iterator(src.begin(), src.end(), param);
             it != std::sregex_iterator(); ++it) {
            std::string name = (*it)[1].str();
            found++;
            if (conf.find("# " + name + ":") == std::string::npos ||
                conf.find("options neuron " + name + "=") == std::string::npos)
                fail_msg("modprobe.d/neuron.conf does not document %s (%s)", name.c_str(),
                         e.path().filename().c_str());
        }
    }
    assert_true(found > 0);
}

void test_modules_load(void **) {
    std::string conf = support::slurp(fs::path(NEURON_UDEV_DIR) / "modules-load.d/neuron.conf");
    assert_true(std::regex_search(conf, std::regex(R"((^|\n)neuron\n)")));
}

} // namespace

// The project version (CMake) is the one of the DKMS source and of the
// Debian packages.
void test_versions(void **) {
    std::smatch m;
    std::string dkms = support::slurp(fs::path(NEURON_KMOD_DIR) / "dkms.conf");
    assert_true(std::regex_search(dkms, m, std::regex(R"re(\nPACKAGE_VERSION="([^"]+)")re")));
    assert_string_equal(m[1].str().c_str(), NEURON_PROJECT_VERSION);
    std::string changelog = support::slurp(fs::path(NEURON_DEBIAN_DIR) / "changelog");
    assert_true(std::regex_search(changelog, m, std::regex(R"(^neuron \(([^-)]+)(-[^)]*)?\))")));
    assert_string_equal(m[1].str().c_str(), NEURON_PROJECT_VERSION);
}

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule),
        cmocka_unit_test(test_modprobe_documents_every_parameter),
        cmocka_unit_test(test_modules_load),
        cmocka_unit_test(test_versions),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
