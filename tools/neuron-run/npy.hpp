// SPDX-License-Identifier: MIT
// The .npy format (NumPy's, versions 1.0 to 3.0) for one C-order,
// little-endian array: what neuron-run reads inputs from and writes
// outputs to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <neuron/program.hpp>

namespace nrun {

struct Npy {
    std::string descr;           ///< e.g. "<f4"
    std::vector<uint64_t> shape; ///< () is a scalar: one element
    std::vector<std::byte> data; ///< exactly the array's bytes
};

/// Throws std::runtime_error saying what is wrong: not .npy, Fortran
/// order, a big-endian or unknown dtype, data shorter or longer than the
/// shape.
Npy parse_npy(std::span<const std::byte> file);
/// A version 1.0 file of @p data.
std::vector<std::byte> encode_npy(const std::string &descr, std::span<const uint32_t> shape,
                                  std::span<const std::byte> data);
/// "<f4", "<f2", "<i4"; bf16 has no NumPy dtype: "" (bf16 data is
/// written as "<f4").
std::string descr_of(neuron::DType t);
/// "(2, 3)".
std::string shape_string(const std::vector<uint64_t> &shape);

} // namespace nrun
