// SPDX-License-Identifier: MIT
// The error category, neuron::Error and the messages of the C++ API.
#include <thread>

#include "testutil.hpp"

using namespace neuron;

static void category_and_codes(void **) {
    assert_string_equal(category().name(), "neuron");
    std::error_code ec = errc::permission_denied;
    assert_true(ec.category() == category());
    assert_string_equal(ec.message().c_str(), "permission denied");
    assert_true(ec == std::errc::permission_denied);
    assert_true(std::error_code(errc::timeout) == std::errc::timed_out);
    assert_true(std::error_code(errc::job_timeout) == std::errc::timed_out);
    assert_true(std::error_code(errc::out_of_device_memory) == std::errc::no_space_on_device);
    assert_true(std::error_code(errc::no_device) == std::errc::no_such_device);
    assert_true(std::error_code(errc::job_fault) == std::errc::bad_address);
    assert_true(std::error_code(errc::job_aborted) == std::errc::operation_canceled);
    assert_false(std::error_code(errc::job_fault) == std::errc::timed_out);
    for (int v = 1; v <= 14; v++)
        assert_true(category().message(v).find("unknown") == std::string::npos);
    assert_true(category().message(99).find("unknown") != std::string::npos);
}

static void error_type(void **) {
    try {
        throw Error(errc::permission_denied,
                    "/dev/accel/accel0: permission denied: add the user to group render");
    } catch (const std::system_error &e) { // catchable as a system_error
        assert_string_equal(e.what(),
                            "/dev/accel/accel0: permission denied: add the user to group render");
        assert_true(e.code() == errc::permission_denied);
    }
    Error a(errc::io_error, "x");
    Error b = a; // copies share the message, never throw
    assert_string_equal(b.what(), "x");
}

static void api_messages(void **) {
    // Errors that need no device say what and why.
    try {
        Program::parse({});
    } catch (const Error &e) {
        assert_true(e.code() == errc::invalid_program);
        assert_string_equal(e.what(), "invalid program container: offset 0x0: truncated: the "
                                      "file has 0 bytes, the header alone needs 64");
    }
    try {
        std::vector<std::byte> b{};
        ProgramBuilder pb("p");
        pb.sbuf("a", DType::fp32, 10);
        pb.sbuf("a", DType::fp32, 10);
        fail_msg("duplicate accepted");
    } catch (const Error &e) {
        assert_string_equal(e.what(), "SBUF allocation 'a' is declared twice");
    }
    try {
        Buffer empty;
        (void)empty.size();
        fail_msg("empty buffer used");
    } catch (const Error &e) {
        assert_true(e.code() == errc::invalid_argument);
        assert_non_null(std::strstr(e.what(), "moved-from"));
    }
    Fence f;
    assert_true(f.try_wait(std::chrono::seconds(0)) == errc::invalid_argument);
    assert_string_equal(f.label().c_str(), "empty fence");
}

static void c_api_errors(void **) {
    assert_string_equal(neuron_status_string(NEURON_OK), "success");
    assert_string_equal(neuron_status_string(NEURON_ERR_PERMISSION_DENIED), "permission denied");
    assert_string_equal(neuron_status_string(NEURON_ERR_JOB_TIMEOUT), "job timeout");
    neuron_program *p = nullptr;
    assert_int_equal(neuron_program_parse("xx", 2, &p), NEURON_ERR_INVALID_PROGRAM);
    assert_null(p);
    assert_non_null(std::strstr(neuron_last_error(), "offset 0x2: truncated"));
    // The message is per thread.
    std::string other = "unset";
    std::thread([&] { other = neuron_last_error(); }).join();
    assert_string_equal(other.c_str(), "");
    assert_int_equal(neuron_program_parse(nullptr, 0, nullptr), NEURON_ERR_INVALID_ARGUMENT);
    assert_non_null(std::strstr(neuron_last_error(), "neuron_program_parse: out is NULL"));
    assert_int_equal(neuron_fence_wait(nullptr, 0), NEURON_ERR_INVALID_ARGUMENT);
    assert_string_equal(neuron_version(), NEURON_VERSION_STRING);
    assert_string_equal(version(), NEURON_VERSION_STRING);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(category_and_codes),
        cmocka_unit_test(error_type),
        cmocka_unit_test(api_messages),
        cmocka_unit_test(c_api_errors),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
