// SPDX-License-Identifier: MIT
// Programs: the container format (docs/program-format.md), its validator,
// parser and disassembler.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <neuron/error.hpp>
#include <neuron/export.h>

namespace neuron {

/// Element types (the ISA's NEURON_DT_* values).
/// Element types. u8 (ISA 1.2): unsigned bytes, 0..255 (bool and uint8 tensors).
enum class DType : uint8_t { fp32 = 1, bf16 = 2, fp16 = 3, int32 = 4, u8 = 5 };
/// How a job uses an argument; decides the binding's access rights.
enum class Direction : uint8_t {
    in = 1,       ///< read by the program
    out = 2,      ///< written by the program
    inout = 3,    ///< read and written
    constant = 4, ///< part of the program's constant data
};
/// Engines, each with one instruction stream (the ISA's NEURON_ENGINE_* values).
enum class Engine : uint8_t { tensor = 1, vector = 2, scalar = 3, sync = 4 };
inline constexpr unsigned num_engines = 4;

NEURON_EXPORT unsigned dtype_size(DType t) noexcept;
NEURON_EXPORT const char *to_string(DType t) noexcept;
NEURON_EXPORT const char *to_string(Direction d) noexcept;
NEURON_EXPORT const char *to_string(Engine e) noexcept;

/// Constants of the container format; see docs/program-format.md.
namespace format {
inline constexpr uint32_t magic = 0x464e524e; // "NRNF" in file order
inline constexpr uint16_t version_major = 1;
/// The newest minor version this library reads and writes; the writer
/// writes the oldest minor that has every section of the file (1.1: ORIGINS,
/// 1.2: LIVE).
inline constexpr uint16_t version_minor = 2;
inline constexpr uint32_t header_size = 64;
inline constexpr uint32_t section_entry_size = 32;
inline constexpr uint32_t arg_entry_size = 64;
inline constexpr uint32_t symbol_entry_size = 24;
inline constexpr uint32_t origin_entry_size = 16;
inline constexpr uint32_t live_entry_size = 40;
inline constexpr uint32_t insn_size = 64;
inline constexpr uint32_t max_sections = 64;
inline constexpr uint32_t max_rank = 6;
inline constexpr uint32_t no_slot = 0xffffffff;

enum SectionType : uint32_t {
    section_strtab = 1,
    section_args = 2,
    section_code = 3,
    section_const = 4,
    section_symbols = 5,
    section_origins = 6, ///< version 1.1, optional
    section_live = 7,    ///< version 1.2, optional
};
/// Section flag: readers that do not know the section's type skip it.
inline constexpr uint32_t section_optional = 1u << 0;

enum SymbolKind : uint8_t { symbol_sbuf = 1, symbol_psum = 2, symbol_semaphore = 3 };
} // namespace format

/// A named argument (or constant) of a program.
struct ArgumentInfo {
    std::string name;
    DType dtype = DType::fp32;
    Direction direction = Direction::in;
    std::vector<uint32_t> shape;
    uint32_t slot = 0;   ///< the binding slot the program addresses it through
    uint64_t offset = 0; ///< constants: byte offset in the constant data; else 0
    uint64_t size = 0;   ///< bytes: product of shape * dtype_size
    /// An out argument the program adds into with DMA_SCATTER_ADD (after
    /// writing it): it is bound readable as well as writable.
    bool accumulated = false;
};

/// A named on-core allocation or semaphore, for disassembly.
struct SymbolInfo {
    std::string name;
    format::SymbolKind kind = format::symbol_sbuf;
    DType dtype = DType::fp32; ///< sbuf/psum only
    uint32_t part_start = 0;
    uint32_t part_count = 0;
    uint32_t offset = 0; ///< byte offset in each partition, or the semaphore id
    uint32_t size = 0;   ///< bytes per partition
};

/// Instructions [first, first + count) of one engine's stream, produced for
/// the graph node (or any named part of a program) @c name: what a profile
/// names an instruction's operator by. Container version 1.1 (ORIGINS).
struct OriginInfo {
    std::string name;
    Engine engine = Engine::tensor;
    uint32_t first = 0;
    uint32_t count = 0;
};

/// An instruction of a stream.
struct InsnRef {
    Engine engine = Engine::tensor;
    uint32_t index = 0;
    friend bool operator==(const InsnRef &, const InsnRef &) = default;
};

/// Bytes [offset, offset + size) of partitions [part_start, part_start +
/// part_count) of SBUF or PSUM, in use by the program from the start of
/// instruction @c live (the first that touches them: it writes them, and
/// every other instruction that touches them is ordered after it) until
/// each engine's last instruction that touches them (@c dead, by engine:
/// the index in that engine's stream, or no_insn) has ended; another range
/// may reuse the bytes after that. Engines run on their own clocks, so
/// which of the last ones ends last is the device's to tell. What a profile
/// counts "SBUF in use" and "PSUM in use" by. Container version 1.2 (LIVE).
struct LiveRange {
    static constexpr uint32_t no_insn = 0xffffffff;
    std::string name;
    format::SymbolKind kind = format::symbol_sbuf; ///< symbol_sbuf or symbol_psum
    uint32_t part_start = 0;
    uint32_t part_count = 0;
    uint32_t offset = 0; ///< byte offset in each partition
    uint32_t size = 0;   ///< bytes per partition
    InsnRef live;
    std::array<uint32_t, num_engines> dead{no_insn, no_insn, no_insn, no_insn};
};

/// Why a container is malformed: the byte offset of the offending field and
/// the reason.
struct NEURON_EXPORT ValidationError {
    uint64_t offset = 0;
    std::string reason;
    std::string to_string() const; ///< "offset 0x1c: ..."
};

/// Checks a container completely (layout, checksums, tables, every
/// instruction); nullopt when it is well formed. Never throws.
NEURON_EXPORT std::optional<ValidationError>
validate(std::span<const std::byte> container) noexcept;

namespace detail {
struct ProgramData;
}

/// A validated program container, immutable; copies share it.
class NEURON_EXPORT Program {
  public:
    /// Validates and parses; throws Error(errc::invalid_program) with the
    /// offset and reason.
    static Program parse(std::span<const std::byte> container);
    static Program load_file(const std::filesystem::path &path);

    void save(const std::filesystem::path &path) const;
    std::span<const std::byte> bytes() const; ///< the container

    const std::string &name() const;
    uint16_t version_major() const;
    uint16_t version_minor() const;
    /// The ISA revision the streams are written for, (major << 16) | minor:
    /// the oldest that has every instruction they use (the builder writes
    /// that; the validator rejects an instruction of a later revision).
    uint32_t isa_version() const;
    uint64_t insn_limit() const;
    uint32_t num_slots() const; ///< binding slots 0..num_slots-1
    /// The slot of the constant data, if the program has constants.
    std::optional<uint32_t> const_slot() const;

    std::span<const ArgumentInfo> arguments() const; ///< constants included
    const ArgumentInfo *find_argument(std::string_view name) const;
    std::span<const SymbolInfo> symbols() const;
    /// The instruction ranges the program names the origin of, by engine and
    /// first instruction (empty if it names none).
    std::span<const OriginInfo> origins() const;
    /// The name of the origin of instruction @p index of @p e's stream, or
    /// nullptr if the program names none for it.
    const std::string *origin(Engine e, uint32_t index) const;
    /// The SBUF/PSUM ranges the program says when it uses (empty if it says
    /// none: a profile then knows only the high-water marks).
    std::span<const LiveRange> live_ranges() const;
    /// Raw 64-byte instructions of one engine's stream (empty if none).
    std::span<const std::byte> stream(Engine e) const;
    std::span<const std::byte> constants() const;

    /// The program image of hw/neuron_isa.h (header + streams) the device runs.
    std::vector<std::byte> device_image() const;

  private:
    explicit Program(std::shared_ptr<const detail::ProgramData> d) : d_(std::move(d)) {}
    std::shared_ptr<const detail::ProgramData> d_;
};

/// The (output, input) binding slots of @p program for which a run with
/// the output bound to exactly the input's memory (an in-place run) writes
/// what a run into other memory does: no instruction reads a byte of the
/// input after one wrote that byte of the output. Decided from the bytes
/// each DMA instruction may touch, conservatively: rows chosen by index
/// may touch the whole binding, and a Sync stream with a LOOP allows no
/// pair.
NEURON_EXPORT std::vector<std::pair<uint32_t, uint32_t>> in_place_slots(const Program &program);

/// The ISA revision this library assembles, validates and disassembles,
/// (major << 16) | minor.
NEURON_EXPORT uint32_t isa_version() noexcept;
/// The ISA minor revision (of isa_version()'s major) that introduced the
/// instruction @p opcode with function @p func / @p func2 (0 for an unknown
/// opcode).
NEURON_EXPORT unsigned isa_minor_of(uint8_t opcode, uint8_t func = 0, uint8_t func2 = 0) noexcept;
/// The mnemonic of an instruction with its function, as the disassembler
/// prints it: "activate.rsqrt", "tensor_scalar.is_ge", "select".
NEURON_EXPORT std::string mnemonic(uint8_t opcode, uint8_t func = 0, uint8_t func2 = 0);
/// The ISA minor revision an encoded instruction (its 64 bytes) needs: its
/// opcode's and functions', and that of the flags and operand data types
/// it uses (ISA 1.2: COPY's TRUNC, integer TENSOR_TENSOR/TENSOR_SCALAR, u8).
NEURON_EXPORT unsigned isa_minor_of(std::span<const std::byte> insn) noexcept;
/// The mnemonic of an encoded instruction, with the flags that change its
/// operation: "copy.trunc", "tensor_tensor.add.int32".
NEURON_EXPORT std::string mnemonic(std::span<const std::byte> insn);

/// Text listing of a program: header, arguments, symbols, every stream.
NEURON_EXPORT std::string disassemble(const Program &program);
/// One instruction (64 bytes) as text, e.g.
/// "matmul psum.fp32[p0+128 @0x0 512] <- sbuf.fp32[...]^T * sbuf.fp32[...]".
NEURON_EXPORT std::string disassemble_instruction(std::span<const std::byte> insn,
                                                  const Program *context = nullptr);

/// CRC-32 (IEEE 802.3, as zlib's crc32()) used by the container format.
NEURON_EXPORT uint32_t crc32(std::span<const std::byte> data, uint32_t crc = 0) noexcept;

} // namespace neuron
