// SPDX-License-Identifier: MIT
// Number formatting shared by the tools.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace neuron::tools {

/// 0 B, 512 B, 1.5 KiB, 256.0 MiB, 16.0 GiB.
std::string human_bytes(uint64_t bytes);

/// human_bytes(), or "-" when unknown.
std::string human_bytes(const std::optional<uint64_t> &bytes);

/// A byte rate: 0 B/s, 12.3 MiB/s.
std::string human_rate(double bytes_per_s);

/// "0,1,3" (or "-" when empty).
std::string join_list(const std::vector<unsigned> &v);

/// Left-aligned text columns separated by two spaces; the last column is not
/// padded. Rows may be shorter than the header.
std::string format_columns(const std::vector<std::vector<std::string>> &rows,
                           const std::string &indent = "");

} // namespace neuron::tools
