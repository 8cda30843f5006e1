// SPDX-License-Identifier: MIT
// Error helpers shared by the library's translation units.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include <neuron/error.hpp>

namespace neuron {
namespace detail {

/// "ENOENT" etc. for messages.
const char *errno_name(int e) noexcept;
/// "permission denied (EACCES)".
std::string errno_text(int e);
/// The errc an ioctl errno maps to when no better one is known.
errc errc_from_errno(int e) noexcept;
[[noreturn]] void throw_errno(int e, const std::string &what, const std::string &hint = {});

} // namespace detail
} // namespace neuron
