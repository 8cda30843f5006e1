// SPDX-License-Identifier: MIT
// The C API without a device: programs, enumeration, argument checks.
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#include "testutil.hpp"

static void programs(void **) {
    auto bytes = test::sample_bytes();
    uint64_t off = 1234;
    assert_int_equal(neuron_program_validate(bytes.data(), bytes.size(), &off), NEURON_OK);
    assert_int_equal(off, 1234);
    auto bad = bytes;
    bad[0] = std::byte{0};
    assert_int_equal(neuron_program_validate(bad.data(), bad.size(), &off),
                     NEURON_ERR_INVALID_PROGRAM);
    assert_int_equal(off, 0);
    assert_non_null(std::strstr(neuron_last_error(), "bad magic"));

    neuron_program *p = nullptr;
    assert_int_equal(neuron_program_parse(bytes.data(), bytes.size(), &p), NEURON_OK);
    assert_string_equal(neuron_program_name(p), "sample");
    assert_int_equal(neuron_program_num_args(p), 4);
    neuron_arg_info a;
    assert_int_equal(neuron_program_arg(p, 1, &a), NEURON_OK);
    assert_string_equal(a.name, "y");
    assert_int_equal(a.direction, NEURON_DIR_OUT);
    assert_int_equal(a.dtype, NEURON_DTYPE_FP32);
    assert_int_equal(a.rank, 2);
    assert_int_equal(a.shape[0], 128);
    assert_int_equal(a.slot, 1);
    assert_int_equal(a.size, 128 * 64 * 4);
    assert_int_equal(neuron_program_arg(p, 4, &a), NEURON_ERR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(neuron_last_error(), "has 4 arguments"));
    char *text = nullptr;
    assert_int_equal(neuron_program_disassemble(p, &text), NEURON_OK);
    // Same text as the C++ disassembler.
    assert_string_equal(text, neuron::disassemble(neuron::Program::parse(bytes)).c_str());
    neuron_free(text);
    neuron_program_destroy(p);

    auto path =
        std::filesystem::temp_directory_path() / ("neuron-capi-" + std::to_string(getpid()));
    neuron::Program::parse(bytes).save(path);
    assert_int_equal(neuron_program_load_file(path.c_str(), &p), NEURON_OK);
    neuron_program_destroy(p);
    std::filesystem::remove(path);
    assert_int_equal(neuron_program_load_file(path.c_str(), &p), NEURON_ERR_INVALID_ARGUMENT);
    assert_null(p);
}

static void no_device(void **) {
    auto root =
        std::filesystem::temp_directory_path() / ("neuron-capi-sys-" + std::to_string(getpid()));
    std::filesystem::create_directories(root);
    setenv("NEURON_SYSFS_ROOT", root.c_str(), 1);
    size_t n = 99;
    assert_int_equal(neuron_enumerate(nullptr, 0, &n), NEURON_OK);
    assert_int_equal(n, 0);
    neuron_device *d = reinterpret_cast<neuron_device *>(1);
    assert_int_equal(neuron_device_open(nullptr, &d), NEURON_ERR_NO_DEVICE);
    assert_null(d);
    assert_non_null(std::strstr(neuron_last_error(), "no neuron devices"));
    assert_int_equal(neuron_device_open("/nonexistent/accel9", &d), NEURON_ERR_NO_DEVICE);
    assert_non_null(std::strstr(neuron_last_error(), "/nonexistent/accel9: No such file"));
    unsetenv("NEURON_SYSFS_ROOT");
    std::filesystem::remove_all(root);
    neuron_device_info info;
    assert_int_equal(neuron_device_get_info(nullptr, &info), NEURON_ERR_INVALID_ARGUMENT);
    uint64_t used = 0;
    assert_int_equal(neuron_device_memory_used(nullptr, &used), NEURON_ERR_INVALID_ARGUMENT);
    assert_int_equal(neuron_buffer_create(nullptr, 4096, NEURON_REGION_DEVICE, 0, nullptr),
                     NEURON_ERR_INVALID_ARGUMENT);
    // Destroying NULL is harmless, like free().
    neuron_device_close(nullptr);
    neuron_buffer_destroy(nullptr);
    neuron_fence_destroy(nullptr);
    neuron_program_destroy(nullptr);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(programs),
        cmocka_unit_test(no_device),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
