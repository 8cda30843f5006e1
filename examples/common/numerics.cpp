// SPDX-License-Identifier: MIT
#include "common/numerics.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

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

uint16_t to_bf16(float x) {
    uint32_t u = std::bit_cast<uint32_t>(x);
    if (std::isnan(x))
        return static_cast<uint16_t>((u >> 16) | 0x40);
    // Round to nearest even on the upper 16 bits; overflow carries into
    // the exponent and gives infinity, as it should.
    uint32_t lsb = (u >> 16) & 1u;
    return static_cast<uint16_t>((u + 0x7fffu + lsb) >> 16);
}

float from_bf16(uint16_t h) {
    return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

float round_to(DType t, float x) {
    switch (t) {
    case DType::fp32:
        return x;
    case DType::bf16:
        return from_bf16(to_bf16(x));
    default:
        throw std::invalid_argument("the examples use fp32 and bf16 only");
    }
}

std::vector<float> rounded(DType t, std::span<const float> v) {
    std::vector<float> r(v.size());
    for (size_t i = 0; i < v.size(); i++)
        r[i] = round_to(t, v[i]);
    return r;
}

std::vector<std::byte> pack(DType t, std::span<const float> v) {
    std::vector<std::byte> out(v.size() * neuron::dtype_size(t));
    for (size_t i = 0; i < v.size(); i++) {
        if (t == DType::bf16) {
            uint16_t h = to_bf16(v[i]);
            std::memcpy(out.data() + 2 * i, &h, 2);
        } else if (t == DType::fp32) {
            std::memcpy(out.data() + 4 * i, &v[i], 4);
        } else {
            throw std::invalid_argument("the examples use fp32 and bf16 only");
        }
    }
    return out;
}

std::vector<float> unpack(DType t, std::span<const std::byte> bytes) {
    size_t es = neuron::dtype_size(t);
    std::vector<float> out(bytes.size() / es);
    for (size_t i = 0; i < out.size(); i++) {
        if (t == DType::bf16) {
            uint16_t h;
            std::memcpy(&h, bytes.data() + 2 * i, 2);
            out[i] = from_bf16(h);
        } else if (t == DType::fp32) {
            std::memcpy(&out[i], bytes.data() + 4 * i, 4);
        } else {
            throw std::invalid_argument("the examples use fp32 and bf16 only");
        }
    }
    return out;
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
