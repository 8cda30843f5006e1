// SPDX-License-Identifier: MIT
// Errors of libneuron: a std::error_code category and the exception type.
#pragma once

#include <memory>
#include <string>
#include <system_error>

#include <neuron/export.h>

namespace neuron {

/// Error conditions of libneuron. The values are also the C API's
/// neuron_status codes (neuron.h), so they never change.
enum class errc : int {
    invalid_argument = 1,     ///< a caller passed something the API cannot accept
    no_device = 2,            ///< no such device, or the device is gone
    permission_denied = 3,    ///< the device node cannot be opened by this user
    not_supported = 4,        ///< the device or driver lacks the feature
    out_of_host_memory = 5,   ///< host memory exhausted
    out_of_device_memory = 6, ///< device memory exhausted
    io_error = 7,             ///< the driver or device failed an operation
    timeout = 8,              ///< a wait ran out of time; the operation is still pending
    job_fault = 9,            ///< a job accessed memory outside its bindings or rights
    job_invalid = 10,         ///< the device rejected the job's program
    job_timeout = 11,         ///< a job exceeded the job timeout; its core was reset
    job_aborted = 12,         ///< a job or copy was aborted by a reset
    invalid_program = 13,     ///< a program container failed validation
    device_lost = 14,         ///< the device was unplugged or its driver unbound
};

/// The category of neuron::errc ("neuron").
NEURON_EXPORT const std::error_category &category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), category()};
}

/// The exception every libneuron call throws on failure. what() says what
/// failed and why, e.g. "/dev/accel/accel0: permission denied: add the user
/// to group render"; code() says which errc it is.
class NEURON_EXPORT Error : public std::system_error {
  public:
    Error(std::error_code code, std::string message);
    Error(errc code, std::string message) : Error(make_error_code(code), std::move(message)) {}
    const char *what() const noexcept override;

  private:
    std::shared_ptr<const std::string> message_;
};

} // namespace neuron

template <> struct std::is_error_code_enum<neuron::errc> : std::true_type {};
