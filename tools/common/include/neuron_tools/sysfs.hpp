// SPDX-License-Identifier: MIT
// Reading the driver's stable interfaces: sysfs attributes and /proc files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <neuron/device.hpp>

namespace neuron::tools {

/// Where the tools look for sysfs, procfs and device nodes. Tests point these
/// at a fake tree with $NEURON_SYSFS_ROOT, $NEURON_PROC_ROOT and
/// $NEURON_DEV_ROOT.
struct Roots {
    std::filesystem::path sys = "/sys";
    std::filesystem::path proc = "/proc";
    std::filesystem::path dev = "/dev";
    /// The devices to show (-d/--device, $NEURON_DEVICE): every device in
    /// sysfs unless it selects one, or the simulated devices for "sim".
    neuron::DeviceSelector device;

    static Roots from_env();
};

/// The content of a small text file with trailing whitespace removed;
/// nullopt when it does not exist or cannot be read.
std::optional<std::string> read_text(const std::filesystem::path &path);

/// The whole file, unmodified; nullopt when it cannot be read.
std::optional<std::string> read_file(const std::filesystem::path &path);

/// A decimal unsigned/signed number file; nullopt when missing or malformed.
std::optional<uint64_t> read_u64(const std::filesystem::path &path);
std::optional<int64_t> read_i64(const std::filesystem::path &path);

/// Parses a whole string as a decimal number.
std::optional<uint64_t> parse_u64(std::string_view text);

} // namespace neuron::tools
