// SPDX-License-Identifier: MIT
// Internals of the container format: little-endian field access, the parsed
// program, and the writer the builder uses.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <neuron/program.hpp>

namespace neuron::detail {

inline uint8_t rd8(std::span<const std::byte> b, size_t off) {
    return static_cast<uint8_t>(b[off]);
}
inline uint16_t rd16(std::span<const std::byte> b, size_t off) {
    return static_cast<uint16_t>(rd8(b, off) | rd8(b, off + 1) << 8);
}
inline uint32_t rd32(std::span<const std::byte> b, size_t off) {
    return static_cast<uint32_t>(rd16(b, off)) | static_cast<uint32_t>(rd16(b, off + 2)) << 16;
}
inline uint64_t rd64(std::span<const std::byte> b, size_t off) {
    return static_cast<uint64_t>(rd32(b, off)) | static_cast<uint64_t>(rd32(b, off + 4)) << 32;
}
inline void wr8(std::span<std::byte> b, size_t off, uint8_t v) {
    b[off] = std::byte{v};
}
inline void wr16(std::span<std::byte> b, size_t off, uint16_t v) {
    wr8(b, off, static_cast<uint8_t>(v));
    wr8(b, off + 1, static_cast<uint8_t>(v >> 8));
}
inline void wr32(std::span<std::byte> b, size_t off, uint32_t v) {
    wr16(b, off, static_cast<uint16_t>(v));
    wr16(b, off + 2, static_cast<uint16_t>(v >> 16));
}
inline void wr64(std::span<std::byte> b, size_t off, uint64_t v) {
    wr32(b, off, static_cast<uint32_t>(v));
    wr32(b, off + 4, static_cast<uint32_t>(v >> 32));
}

struct ProgramData {
    std::vector<std::byte> bytes;
    std::string name;
    uint16_t version_major = 0, version_minor = 0;
    uint16_t isa_minor = 0; ///< the ISA minor the container declares
    uint64_t insn_limit = 0;
    uint32_t num_slots = 0;
    uint32_t const_slot = format::no_slot;
    std::vector<ArgumentInfo> args;
    std::vector<SymbolInfo> symbols;
    std::vector<OriginInfo> origins; ///< sorted by engine, then first
    std::vector<LiveRange> live;
    std::array<std::pair<uint64_t, uint64_t>, num_engines> streams{}; // offset, size in bytes
    std::pair<uint64_t, uint64_t> constants{0, 0};
};

/// Validates @p b; fills @p out (if not null) when it is well formed.
std::optional<ValidationError> parse_container(std::span<const std::byte> b, ProgramData *out);

/// What the builder writes.
struct ContainerContents {
    std::string name;
    uint64_t insn_limit = 0;
    uint32_t num_slots = 0;
    std::vector<ArgumentInfo> args;
    std::vector<SymbolInfo> symbols;
    std::vector<OriginInfo> origins; ///< sorted by engine, then first
    std::vector<LiveRange> live;
    std::array<std::vector<std::byte>, num_engines> streams;
    std::vector<std::byte> constants;
};

std::vector<std::byte> write_container(const ContainerContents &c);

} // namespace neuron::detail
