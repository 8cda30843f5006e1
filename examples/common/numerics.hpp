// SPDX-License-Identifier: MIT
// Data for the examples: a deterministic generator, fp32 <-> bf16 as the
// device converts (hw/isa.md, "Data types"), tensors in device layout, and
// the comparison of a device result with a double-precision reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <neuron/program.hpp>

namespace nex {

/// xorshift64: the same numbers on every host.
class Rng {
  public:
    explicit Rng(uint64_t seed) : s_(seed ? seed : 0x9e3779b97f4a7c15ull) {}
    uint32_t next();
    /// Uniform in [-a, a).
    float uniform(float a = 1.0f);

  private:
    uint64_t s_;
};

/// @p x rounded through @p t and back (fp32 and bf16), as the device
/// converts (neuron::compiler::round_to).
float round_to(neuron::DType t, float x);
/// Every element rounded through @p t (what the device sees of fp32 data stored as @p t).
std::vector<float> rounded(neuron::DType t, std::span<const float> v);

/// fp32 values stored as @p t, little endian.
std::vector<std::byte> pack(neuron::DType t, std::span<const float> v);
std::vector<float> unpack(neuron::DType t, std::span<const std::byte> bytes);

/// Per element: |got - ref| <= rtol * |ref| + atol.
struct Tolerance {
    double rtol = 0;
    double atol = 0;
};

struct ErrorStats {
    double max_abs = 0;     ///< max |got - ref|
    double max_rel = 0;     ///< max |got - ref| / |ref| where |ref| >= atol / rtol
    double rel_floor = 0;   ///< that |ref| bound
    double worst = 0;       ///< max |got - ref| / (rtol |ref| + atol): <= 1 passes
    size_t worst_index = 0; ///< where worst was found
    double worst_got = 0, worst_ref = 0;
    size_t failures = 0; ///< elements beyond the tolerance (or not finite)
    bool ok() const { return failures == 0; }
};

/// Relative errors are reported where the relative term of the tolerance
/// dominates (|ref| >= atol / rtol); below, the absolute term judges.
ErrorStats compare(std::span<const float> got, std::span<const double> ref, Tolerance tol);

/// "max abs 1.2e-07, max rel 3.4e-07, worst 0.31 of tolerance (rtol 1e-05, atol 1e-06)".
std::string describe(const ErrorStats &s, Tolerance tol);

} // namespace nex
