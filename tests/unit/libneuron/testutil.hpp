// SPDX-License-Identifier: MIT
// Shared helpers of the libneuron unit tests.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <setjmp.h>
#include <span>
#include <string>
#include <vector>

#include <neuron/neuron.h>
#include <neuron/neuron.hpp>

#include "sample_program.hpp"

// cmocka last: it defines macros (fail(), ...) that clash with the standard library.
extern "C" {
#include <cmocka.h>
}

namespace test {

/// Runs @p f, which must throw a neuron::Error with code @p want; returns its what().
template <typename F> std::string expect_error(F &&f, neuron::errc want) {
    try {
        f();
    } catch (const neuron::Error &e) {
        if (e.code() != want)
            fail_msg("got '%s' (%d), want code %d", e.what(), e.code().value(),
                     static_cast<int>(want));
        return e.what();
    }
    fail_msg("no error, want code %d", static_cast<int>(want));
    return {};
}

inline uint32_t rd32(const std::vector<std::byte> &b, size_t off) {
    uint32_t v;
    std::memcpy(&v, b.data() + off, 4);
    return v;
}
inline uint64_t rd64(const std::vector<std::byte> &b, size_t off) {
    uint64_t v;
    std::memcpy(&v, b.data() + off, 8);
    return v;
}
inline void wr8(std::vector<std::byte> &b, size_t off, uint8_t v) {
    b[off] = std::byte{v};
}
inline void wr16(std::vector<std::byte> &b, size_t off, uint16_t v) {
    std::memcpy(b.data() + off, &v, 2);
}
inline void wr32(std::vector<std::byte> &b, size_t off, uint32_t v) {
    std::memcpy(b.data() + off, &v, 4);
}
inline void wr64(std::vector<std::byte> &b, size_t off, uint64_t v) {
    std::memcpy(b.data() + off, &v, 8);
}

/// Recomputes every section CRC and the header CRC, so that a corruption
/// reaches the check behind the checksums.
inline void refix(std::vector<std::byte> &b) {
    uint32_t table = rd32(b, 24), count = rd32(b, 28);
    for (uint32_t i = 0; i < count; i++) {
        size_t e = table + i * 32;
        uint64_t off = rd64(b, e + 8), size = rd64(b, e + 16);
        if (off <= b.size() && size <= b.size() - off)
            wr32(b, e + 24, neuron::crc32(std::span(b).subspan(off, size)));
    }
    std::span<const std::byte> s(b);
    wr32(b, 60, neuron::crc32(s.subspan(table, count * 32), neuron::crc32(s.first(60))));
}

/// Offset of the section table entry of the first section of @p type (and
/// engine @p info for CODE).
inline size_t section_entry(const std::vector<std::byte> &b, uint32_t type, uint32_t info = 0) {
    uint32_t table = rd32(b, 24), count = rd32(b, 28);
    for (uint32_t i = 0; i < count; i++) {
        size_t e = table + i * 32;
        if (rd32(b, e) == type && (!info || rd32(b, e + 28) == info))
            return e;
    }
    fail_msg("no section of type %u", type);
    return 0;
}

} // namespace test
