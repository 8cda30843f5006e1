// SPDX-License-Identifier: MIT
#include "common/numerics.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <neuron/compiler/graph.hpp>

namespace nex {

using neuron::DType;

uint32_t Rng::next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return static_cast<uint32_t>(s_ >> 16);
}

float Rng::uniform(float a) {
    return (static_cast<float>(next()) / 2147483648.0f - 1.0f) * a;
}

namespace {
void fp32_or_bf16(DType t) {
    if (t != DType::fp32 && t != DType::bf16)
        throw std::invalid_argument("the examples use fp32 and bf16 only");
}
} // namespace

float round_to(DType t, float x) {
    fp32_or_bf16(t);
    return neuron::compiler::round_to(t, x);
}

std::vector<float> rounded(DType t, std::span<const float> v) {
    std::vector<float> r(v.size());
    for (size_t i = 0; i < v.size(); i++)
        r[i] = round_to(t, v[i]);
    return r;
}

std::vector<std::byte> pack(DType t, std::span<const float> v) {
    fp32_or_bf16(t);
    return neuron::compiler::pack(t, std::vector<float>(v.begin(), v.end()));
}

std::vector<float> unpack(DType t, std::span<const std::byte> bytes) {
    fp32_or_bf16(t);
    return neuron::compiler::unpack(t, bytes.data(), bytes.size() / neuron::dtype_size(t));
}

ErrorStats compare(std::span<const float> got, std::span<const double> ref, Tolerance tol) {
    if (got.size() != ref.size())
        throw std::invalid_argument(
            fmt::format("comparing {} results with {} reference values", got.size(), ref.size()));
    ErrorStats s;
    s.rel_floor = tol.rtol > 0 ? tol.atol / tol.rtol : INFINITY;
    for (size_t i = 0; i < got.size(); i++) {
        double g = got[i], r = ref[i];
        double err = std::fabs(g - r);
        double ratio = err / (tol.rtol * std::fabs(r) + tol.atol);
        if (!std::isfinite(g) || !std::isfinite(ratio))
            ratio = INFINITY;
        if (ratio > 1)
            s.failures++;
        if (std::isfinite(err))
            s.max_abs = std::max(s.max_abs, err);
        if (std::fabs(r) >= s.rel_floor && std::isfinite(err))
            s.max_rel = std::max(s.max_rel, err / std::fabs(r));
        if (i == 0 || ratio > s.worst) {
            s.worst = ratio;
            s.worst_index = i;
            s.worst_got = g;
            s.worst_ref = r;
        }
    }
    return s;
}

std::string describe(const ErrorStats &s, Tolerance tol) {
    return fmt::format("max abs error {:.3g}, max rel error {:.3g} (|ref| >= {:g}), worst element "
                       "{} = {:.9g} vs {:.9g}: {:.3f} of the tolerance (rtol {:g}, atol {:g}), "
                       "{} beyond",
                       s.max_abs, s.max_rel, s.rel_floor, s.worst_index, s.worst_got, s.worst_ref,
                       s.worst, tol.rtol, tol.atol, s.failures);
}

} // namespace nex
