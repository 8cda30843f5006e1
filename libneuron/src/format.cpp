// SPDX-License-Identifier: MIT
// The program container: CRC-32, validation and parsing, writing, and the
// device image. docs/program-format.md is the specification.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "format_internal.hpp"
#include "neuron_isa.h"
#include "neuron_regs.h"

namespace neuron {

using namespace detail;
namespace f = format;

static_assert(static_cast<int>(DType::fp32) == NEURON_DT_FP32);
static_assert(static_cast<int>(DType::int32) == NEURON_DT_INT32);
static_assert(static_cast<int>(DType::u8) == NEURON_DT_U8);
static_assert(static_cast<int>(Engine::tensor) == NEURON_ENGINE_TENSOR);
static_assert(static_cast<int>(Engine::sync) == NEURON_ENGINE_SYNC);
static_assert(num_engines == NEURON_NUM_ENGINES);
static_assert(f::insn_size == sizeof(struct neuron_insn));

unsigned dtype_size(DType t) noexcept {
    return NEURON_DT_SIZE(static_cast<unsigned>(t));
}

const char *to_string(DType t) noexcept {
    switch (t) {
    case DType::fp32:
        return "fp32";
    case DType::bf16:
        return "bf16";
    case DType::fp16:
        return "fp16";
    case DType::int32:
        return "int32";
    case DType::u8:
        return "u8";
    }
    return "dtype?";
}

const char *to_string(Direction d) noexcept {
    switch (d) {
    case Direction::in:
        return "in";
    case Direction::out:
        return "out";
    case Direction::inout:
        return "inout";
    case Direction::constant:
        return "const";
    }
    return "direction?";
}

const char *to_string(Engine e) noexcept {
    switch (e) {
    case Engine::tensor:
        return "tensor";
    case Engine::vector:
        return "vector";
    case Engine::scalar:
        return "scalar";
    case Engine::sync:
        return "sync";
    }
    return "engine?";
}

// --- CRC-32 ------------------------------------------------------------------------

namespace {
struct CrcTable {
    uint32_t t[256];
    constexpr CrcTable() : t{} {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
    }
};
constexpr CrcTable crc_table;
} // namespace

uint32_t crc32(std::span<const std::byte> data, uint32_t crc) noexcept {
    crc = ~crc;
    for (std::byte b : data)
        crc = crc_table.t[(crc ^ static_cast<uint8_t>(b)) & 0xff] ^ (crc >> 8);
    return ~crc;
}

std::string ValidationError::to_string() const {
    return fmt::format("offset {:#x}: {}", offset, reason);
}

// --- validation --------------------------------------------------------------------

namespace {

using VErr = std::optional<ValidationError>;

template <typename... A> VErr fail(uint64_t off, fmt::format_string<A...> f, A &&...a) {
    return ValidationError{off, fmt::format(f, std::forward<A>(a)...)};
}

const char *section_name(uint32_t type) {
    switch (type) {
    case f::section_strtab:
        return "STRTAB";
    case f::section_args:
        return "ARGS";
    case f::section_code:
        return "CODE";
    case f::section_const:
        return "CONST";
    case f::section_symbols:
        return "SYMBOLS";
    case f::section_origins:
        return "ORIGINS";
    case f::section_live:
        return "LIVE";
    default:
        return "unknown";
    }
}

const char *opcode_name(uint8_t op) {
    const neuron_opcode_info *info = neuron_opcode_lookup(op);
    return info ? info->name : nullptr;
}

bool zero(std::span<const std::byte> b, size_t off, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (b[off + i] != std::byte{0})
            return false;
    return true;
}

/// Rights of each binding slot, for DMA checks: bit 0 read, bit 1 write.
struct SlotInfo {
    unsigned rights = 0;
    std::string what;
    bool out = false;         ///< an out argument's slot
    bool accumulated = false; ///< a DMA_SCATTER_ADD adds into it (CodeChecker)
};

class CodeChecker {
  public:
    CodeChecker(std::span<const std::byte> b, std::vector<SlotInfo> &slots, uint16_t isa_minor)
        : b_(b), slots_(slots), isa_minor_(isa_minor) {}

    VErr check_stream(unsigned engine, uint64_t off, uint64_t count) {
        engine_ = engine;
        for (uint64_t j = 0; j < count; j++) {
            if (auto e = check(off + j * f::insn_size, j))
                return e;
        }
        uint64_t last = off + (count - 1) * f::insn_size;
        uint8_t op = rd8(b_, last);
        if (op != NEURON_OP_END && op != NEURON_OP_LOOP)
            return fail(last,
                        "CODE[{}] instruction {}: the stream's last instruction is {}, "
                        "not end or loop: the engine would run past the stream",
                        to_string(static_cast<Engine>(engine)), count - 1, opcode_name(op));
        return {};
    }

  private:
    std::span<const std::byte> b_;
    std::vector<SlotInfo> &slots_;
    uint16_t isa_minor_; // what the container declares
    unsigned engine_ = 0;
    std::string where_;

    template <typename... A> VErr bad(uint64_t off, fmt::format_string<A...> f, A &&...a) {
        return ValidationError{off, where_ + fmt::format(f, std::forward<A>(a)...)};
    }

    VErr need_zero(uint64_t I, std::initializer_list<std::pair<unsigned, unsigned>> fields) {
        static const char *const names[] = {"opcode", "flags", "func", "func2"};
        for (auto [fo, n] : fields) {
            if (!zero(b_, I + fo, n)) {
                const char *nm = fo < 4    ? names[fo]
                                 : fo == 4 ? "arg"
                                 : fo < 24 ? "operand 0"
                                 : fo < 40 ? "operand 1"
                                 : fo < 56 ? "operand 2"
                                 : fo < 60 ? "imm[0]"
                                           : "imm[1]";
                return bad(I + fo, "{} must be zero for this opcode", nm);
            }
        }
        return {};
    }

    // spaces: bit 1 SBUF, bit 2 PSUM.
    VErr tap(uint64_t I, unsigned k, unsigned spaces, bool optional) {
        uint64_t T = I + 8 + 16 * k;
        uint8_t space = rd8(b_, T);
        if (space == NEURON_SPACE_NONE) {
            if (!optional)
                return bad(T, "operand {} is missing (space NONE)", k);
            if (!zero(b_, T, 16))
                return bad(T, "operand {} is absent (space NONE) but has non-zero fields", k);
            return {};
        }
        if (space > NEURON_SPACE_PSUM || !(spaces & (1u << space)))
            return bad(T, "operand {}: space {} is not allowed here (expected {})", k, space,
                       spaces == 2   ? "SBUF"
                       : spaces == 4 ? "PSUM"
                                     : "SBUF or PSUM");
        uint8_t dt = rd8(b_, T + 1);
        if (dt == NEURON_DT_INVALID || dt >= NEURON_DT_COUNT)
            return bad(T + 1, "operand {}: unknown dtype {}", k, dt);
        unsigned ps = rd8(b_, T + 2), pc = rd8(b_, T + 3);
        if (pc == 0 || ps + pc > NEURON_PARTITIONS)
            return bad(T + 2, "operand {}: partitions {}+{} are outside 0..127", k, ps, pc);
        uint32_t offset = rd32(b_, T + 4);
        uint32_t c0 = rd16(b_, T + 8), c1 = rd16(b_, T + 10);
        uint32_t s0 = rd16(b_, T + 12), s1 = rd16(b_, T + 14);
        if (c0 == 0 || c1 == 0 || static_cast<uint64_t>(c0) * c1 > NEURON_MAX_FREE_ELEMS)
            return bad(T + 8, "operand {}: free-axis counts {}x{} (each >= 1, product <= {})", k,
                       c0, c1, NEURON_MAX_FREE_ELEMS);
        unsigned es = NEURON_DT_SIZE(dt);
        if (offset % es)
            return bad(T + 4, "operand {}: offset {:#x} is not a multiple of the element size {}",
                       k, offset, es);
        uint64_t extent = ((uint64_t{c1} - 1) * s1 + (uint64_t{c0} - 1) * s0 + 1) * es;
        uint64_t psum_pp = NEURON_PSUM_SIZE / NEURON_PARTITIONS;
        if (space == NEURON_SPACE_PSUM && offset + extent > psum_pp)
            return bad(T + 4,
                       "operand {}: PSUM bytes [{:#x}, {:#x}) exceed the {} bytes of a "
                       "partition",
                       k, offset, offset + extent, psum_pp);
        return {};
    }

    VErr check(uint64_t I, uint64_t index) {
        uint8_t op = rd8(b_, I);
        const char *name = opcode_name(op);
        const char *eng = to_string(static_cast<Engine>(engine_));
        where_ = fmt::format("CODE[{}] instruction {}: ", eng, index);
        if (!name)
            return bad(I, "unknown opcode {:#04x}", op);
        where_ = fmt::format("CODE[{}] instruction {} ({}): ", eng, index, name);
        if (!(neuron_opcode_engines(op) & (1u << engine_)))
            return bad(I, "{} cannot run on the {} engine", name, eng);
        if (auto e = encoding(I, *neuron_opcode_lookup(op)))
            return e;
        uint8_t flags = rd8(b_, I + 1), func = rd8(b_, I + 2), func2 = rd8(b_, I + 3);
        uint32_t arg = rd32(b_, I + 4);
        if (unsigned need = isa_minor_of(b_.subspan(I, 64)); need > isa_minor_)
            return bad(I, "{} is an ISA {}.{} instruction, but the program declares ISA {}.{}",
                       mnemonic(b_.subspan(I, 64)), NEURON_ISA_VERSION_MAJOR, need,
                       NEURON_ISA_VERSION_MAJOR, isa_minor_);
        switch (op) {
        case NEURON_OP_SEM_SIGNAL:
        case NEURON_OP_SEM_WAIT:
            if (func >= NEURON_NUM_SEMAPHORES)
                return bad(I + 2, "semaphore {} does not exist (0..{})", func,
                           NEURON_NUM_SEMAPHORES - 1);
            return {};
        case NEURON_OP_LOOP:
            if (func >= NEURON_NUM_LOOP_COUNTERS)
                return bad(I + 2, "loop counter {} does not exist (0..{})", func,
                           NEURON_NUM_LOOP_COUNTERS - 1);
            if (arg >= index)
                return bad(I + 4, "loop target {} is not before the loop (index {})", arg, index);
            return {};
        case NEURON_OP_DMA_LOAD:
        case NEURON_OP_DMA_STORE:
        case NEURON_OP_DMA_GATHER:
        case NEURON_OP_DMA_SCATTER_ADD:
            return dma_fields(I, op);
        case NEURON_OP_ACTIVATE:
            if (func == 0 || func >= NEURON_ACT_COUNT)
                return bad(I + 2, "unknown activation function {}", func);
            return {};
        case NEURON_OP_TENSOR_TENSOR:
            if (func == 0 || func >= NEURON_ALU_COUNT)
                return bad(I + 2, "unknown ALU operation {}", func);
            return {};
        case NEURON_OP_TENSOR_SCALAR:
            if (func == 0 || func >= NEURON_ALU_COUNT)
                return bad(I + 2, "unknown ALU operation {}", func);
            if (func2 >= NEURON_ALU_COUNT)
                return bad(I + 3, "unknown second ALU operation {}", func2);
            if (func2 == NEURON_ALU_NONE && (flags & NEURON_TS_F_REVERSE1))
                return bad(I + 1, "REVERSE1 without a second operation");
            if (func2 == NEURON_ALU_NONE && rd32(b_, I + 60))
                return bad(I + 60, "imm[1] must be zero without a second operation");
            if (!zero(b_, I + 40, 16) && rd32(b_, I + 56))
                return bad(I + 56, "imm[0] must be zero when the scalar comes from operand 2");
            return {};
        case NEURON_OP_REDUCE:
            if (func == 0 || func >= NEURON_RED_COUNT)
                return bad(I + 2, "unknown reduction {}", func);
            return {};
        case NEURON_OP_RANDOM:
            return random_fields(I);
        case NEURON_OP_SELECT:
            if ((flags & NEURON_SEL_F_KEEP) && rd32(b_, I + 56))
                return bad(I + 56, "imm[0] (the false value) must be zero with KEEP");
            return {};
        default: /* the encoding is all there is to check */
            return {};
        }
    }

    /// RANDOM's destination (fp32 or int32) and key (int32, one partition, 4
    /// elements: count[0] * count[1] of the tap at byte 24).
    VErr random_fields(uint64_t I) {
        const uint8_t dt = rd8(b_, I + 9);
        if (dt != NEURON_DT_FP32 && dt != NEURON_DT_INT32)
            return bad(I + 9, "random writes fp32 (uniform) or int32 (words), not dtype {}", dt);
        if (rd8(b_, I + 25) != NEURON_DT_INT32)
            return bad(I + 25, "random's key is int32, not dtype {}", rd8(b_, I + 25));
        const uint32_t words = uint32_t{rd16(b_, I + 32)} * rd16(b_, I + 34);
        if (rd8(b_, I + 27) != 1 || words != NEURON_RANDOM_KEY_WORDS)
            return bad(I + 24,
                       "random's key is 1 partition of {} int32 (seed, offset), not {} of {}",
                       NEURON_RANDOM_KEY_WORDS, rd8(b_, I + 27), words);
        return {};
    }

    /// A DMA instruction's slot (and its rights), alignment and reserved fields.
    VErr dma_fields(uint64_t I, uint8_t op) {
        if (!zero(b_, I + 25, 3) || !zero(b_, I + 48, 8))
            return bad(I + (zero(b_, I + 25, 3) ? 48 : 25), "reserved DMA fields must be zero");
        uint8_t slot = rd8(b_, I + 24);
        if (slot >= slots_.size())
            return bad(I + 24, "binding slot {} does not exist (the program has {})", slot,
                       slots_.size());
        const bool indexed = op == NEURON_OP_DMA_GATHER || op == NEURON_OP_DMA_SCATTER_ADD;
        if (indexed && rd32(b_, I + 56) % 4)
            return bad(I + 56, "the indices' SBUF offset {:#x} is not a multiple of 4",
                       rd32(b_, I + 56));
        // A scatter-add reads and writes its table: an inout argument, or an
        // out argument, which is then bound readable too (accumulated).
        const bool scatter = op == NEURON_OP_DMA_SCATTER_ADD;
        const bool reads = op != NEURON_OP_DMA_STORE && !(scatter && slots_[slot].out),
                   writes = op == NEURON_OP_DMA_STORE || scatter;
        SlotInfo &si = slots_[slot];
        if (scatter && si.out)
            si.accumulated = true;
        if (reads && !(si.rights & 1))
            return bad(I + 24, "{} slot {} ({}), which the program may not read",
                       op == NEURON_OP_DMA_SCATTER_ADD ? "adds into" : "loads from", slot, si.what);
        if (writes && !(si.rights & 2))
            return bad(I + 24, "{} slot {} ({}), which the program may not write",
                       op == NEURON_OP_DMA_SCATTER_ADD ? "adds into" : "stores to", slot, si.what);
        if (op == NEURON_OP_DMA_SCATTER_ADD && rd8(b_, I + 9) != NEURON_DT_FP32 &&
            rd8(b_, I + 9) != NEURON_DT_BF16)
            return bad(I + 9, "dma_scatter_add adds fp32 or bf16 elements, not dtype {}",
                       rd8(b_, I + 9));
        unsigned es = NEURON_DT_SIZE(rd8(b_, I + 9));
        if (rd64(b_, I + 32) % es || rd32(b_, I + 28) % es || rd32(b_, I + 40) % es ||
            rd32(b_, I + 44) % es)
            return bad(I + 28,
                       "memory offset and strides must be multiples of the element "
                       "size {}",
                       es);
        return {};
    }

    /// What the opcode table says of every opcode: defined flags, zero in
    /// the fields it does not use, its operands of the right kinds.
    VErr encoding(uint64_t I, const neuron_opcode_info &info) {
        uint8_t flags = rd8(b_, I + 1);
        if (flags & ~info.flags)
            return info.flags ? bad(I + 1, "undefined flags {:#x}", flags) : need_zero(I, {{1, 1}});
        static constexpr struct {
            unsigned field, offset, size;
        } fields[] = {{NEURON_FIELD_FUNC, 2, 1},
                      {NEURON_FIELD_FUNC2, 3, 1},
                      {NEURON_FIELD_ARG, 4, 4},
                      {NEURON_FIELD_IMM0, 56, 4},
                      {NEURON_FIELD_IMM1, 60, 4}};
        for (const auto &f : fields)
            if (!(info.uses & f.field))
                if (auto e = need_zero(I, {{f.offset, f.size}}))
                    return e;
        const unsigned SB = 1u << NEURON_SPACE_SBUF, PS = 1u << NEURON_SPACE_PSUM;
        for (unsigned k = 0; k < NEURON_INSN_OPERANDS; k++) {
            VErr e;
            switch (info.operand[k]) {
            case NEURON_OPERAND_NONE:
                e = need_zero(I, {{8 + 16 * k, 16}});
                break;
            case NEURON_OPERAND_SBUF:
                e = tap(I, k, SB, false);
                break;
            case NEURON_OPERAND_PSUM:
                e = tap(I, k, PS, false);
                break;
            case NEURON_OPERAND_ONCHIP:
                e = tap(I, k, SB | PS, false);
                break;
            case NEURON_OPERAND_ONCHIP_OPT:
                e = tap(I, k, SB | PS, true);
                break;
            default: /* DMA's DRAM operand: checked with the opcode */
                break;
            }
            if (e)
                return e;
        }
        return {};
    }
};

struct Section {
    uint32_t index, type, flags, crc, info;
    uint64_t entry, offset, size;
};

// The container parser, one method per part (docs/program-format.md):
// each returns the first problem found, as (offset, reason).
struct Parser {
    std::span<const std::byte> b;
    uint64_t n;
    uint16_t vmaj = 0, vmin = 0, isa_min = 0;
    uint32_t table = 0, count = 0, num_slots = 0;
    uint64_t table_end = 0;
    std::vector<Section> secs;
    const Section *strtab = nullptr, *args = nullptr, *cnst = nullptr, *syms = nullptr,
                  *orig = nullptr, *live = nullptr;
    std::array<const Section *, num_engines> code{};
    ProgramData d;
    std::vector<SlotInfo> slots;
    std::vector<int> slot_owner;

    explicit Parser(std::span<const std::byte> bytes) : b(bytes), n(bytes.size()) {}

    // The header: magic, versions, sizes, the section table's place and checksum.
    VErr header() {
        if (n < f::header_size)
            return fail(n, "truncated: the file has {} bytes, the header alone needs {}", n,
                        f::header_size);
        if (rd32(b, 0) != f::magic)
            return fail(0, "bad magic {:#010x}: not a neuron program container (expected \"NRNF\")",
                        rd32(b, 0));
        vmaj = rd16(b, 4);
        vmin = rd16(b, 6);
        if (vmaj != f::version_major)
            return fail(4, "unsupported container version {}.{}: this library reads {}.x", vmaj,
                        vmin, f::version_major);
        uint32_t hsize = rd32(b, 8);
        if (hsize < f::header_size || hsize % 8 || hsize > n)
            return fail(8,
                        "header_size {} is invalid (at least {}, a multiple of 8, within the file)",
                        hsize, f::header_size);
        uint64_t file_size = rd64(b, 16);
        table = rd32(b, 24);
        count = rd32(b, 28);
        if (count == 0 || count > f::max_sections)
            return fail(28, "section_count {} is outside 1..{}", count, f::max_sections);
        table_end = static_cast<uint64_t>(table) + uint64_t{count} * f::section_entry_size;
        if (table < hsize || table % 8)
            return fail(24,
                        "section table offset {:#x} is invalid (8-byte aligned, after the {}-byte "
                        "header)",
                        table, hsize);
        if (table_end > n)
            return fail(n,
                        "truncated: the section table [{:#x}, {:#x}) extends past the end of the "
                        "file ({} bytes)",
                        table, table_end, n);
        uint32_t stored = rd32(b, 60);
        uint32_t computed = crc32(b.subspan(table, table_end - table), crc32(b.first(60)));
        if (stored != computed)
            return fail(60,
                        "header checksum {:#010x} does not match the computed {:#010x}: the header "
                        "or the section table is corrupted",
                        stored, computed);
        if (file_size > n)
            return fail(16, "truncated: the header says {} bytes, the file has {}", file_size, n);
        if (file_size < n)
            return fail(16, "file_size {} does not match the file's {} bytes (trailing data)",
                        file_size, n);
        if (uint32_t fl = rd32(b, 12))
            return fail(12, "unknown header flags {:#x}", fl);
        if (!zero(b, 52, 8))
            return fail(52, "reserved header fields must be zero");
        if (!zero(b, f::header_size, hsize - f::header_size))
            return fail(f::header_size, "header extension bytes must be zero in version {}.{}",
                        vmaj, vmin);
        uint16_t isa_maj = rd16(b, 32);
        isa_min = rd16(b, 34);
        if (isa_maj != NEURON_ISA_VERSION_MAJOR || isa_min > NEURON_ISA_VERSION_MINOR)
            return fail(32, "ISA version {}.{} is not supported (this library knows {}.{})",
                        isa_maj, isa_min, NEURON_ISA_VERSION_MAJOR, NEURON_ISA_VERSION_MINOR);
        num_slots = rd32(b, 48);
        if (num_slots > NEURON_MAX_BINDINGS - 1)
            return fail(48, "num_slots {} exceeds {} (one more slot holds the program image)",
                        num_slots, NEURON_MAX_BINDINGS - 1);
        return {};
    }

    // Each section table entry on its own.
    VErr section_table() {
        // Section table.
        secs.reserve(count);
        for (uint32_t i = 0; i < count; i++) {
            uint64_t E = table + uint64_t{i} * f::section_entry_size;
            Section s{i, rd32(b, E),     rd32(b, E + 4), rd32(b, E + 24), rd32(b, E + 28),
                      E, rd64(b, E + 8), rd64(b, E + 16)};
            std::string what = fmt::format("section {} ({})", i, section_name(s.type));
            bool known = s.type >= f::section_strtab && s.type <= f::section_live;
            if (!known && !(s.flags & f::section_optional))
                return fail(E, "section {}: unknown type {} (not marked optional)", i, s.type);
            if (s.flags & ~f::section_optional)
                return fail(E + 4, "{}: unknown flags {:#x}", what, s.flags);
            if (s.offset % 8)
                return fail(E + 8, "{}: offset {:#x} is not 8-byte aligned", what, s.offset);
            if (s.offset < table_end)
                return fail(E + 8,
                            "{}: offset {:#x} overlaps the header or section table (which end "
                            "at {:#x})",
                            what, s.offset, table_end);
            if (s.offset > n || s.size > n - s.offset)
                return fail(E + 16,
                            "{}: [{:#x}, +{:#x}) extends past the end of the file ({} bytes)", what,
                            s.offset, s.size, n);
            if (uint32_t c = crc32(b.subspan(s.offset, s.size)); c != s.crc)
                return fail(E + 24,
                            "{}: checksum {:#010x} does not match the computed {:#010x} of "
                            "its {} bytes at {:#x}",
                            what, s.crc, c, s.size, s.offset);
            if (s.type == f::section_code) {
                if (s.info < NEURON_ENGINE_TENSOR || s.info > NEURON_ENGINE_SYNC)
                    return fail(E + 28, "{}: engine {} does not exist (1..4)", what, s.info);
            } else if (s.info) {
                return fail(E + 28, "{}: info must be zero for this section type", what);
            }
            secs.push_back(s);
        }
        return {};
    }

    // No two non-empty sections overlap.
    VErr overlaps() {
        // Overlaps: sort non-empty sections by offset.
        std::vector<const Section *> order;
        for (const auto &s : secs)
            if (s.size)
                order.push_back(&s);
        std::sort(order.begin(), order.end(),
                  [](const Section *a, const Section *c) { return a->offset < c->offset; });
        for (size_t k = 1; k < order.size(); k++) {
            const Section *p = order[k - 1], *s = order[k];
            if (s->offset < p->offset + p->size)
                return fail(
                    s->entry + 8,
                    "section {} ({}) [{:#x}, {:#x}) overlaps section {} ({}) [{:#x}, {:#x})",
                    s->index, section_name(s->type), s->offset, s->offset + s->size, p->index,
                    section_name(p->type), p->offset, p->offset + p->size);
        }
        return {};
    }

    // At most one section of each known type (one CODE per engine).
    VErr assign_sections() {
        for (const auto &s : secs) {
            const Section **slot = nullptr;
            switch (s.type) {
            case f::section_strtab:
                slot = &strtab;
                break;
            case f::section_args:
                slot = &args;
                break;
            case f::section_const:
                slot = &cnst;
                break;
            case f::section_symbols:
                slot = &syms;
                break;
            case f::section_origins:
                slot = &orig;
                break;
            case f::section_live:
                slot = &live;
                break;
            case f::section_code:
                slot = &code[NEURON_ENGINE_INDEX(s.info)];
                break;
            default:
                continue; // optional, unknown: skipped
            }
            if (*slot)
                return fail(
                    s.entry, "section {}: a second {} section{} (section {} is one)", s.index,
                    section_name(s.type),
                    s.type == f::section_code
                        ? fmt::format(" for the {} engine", to_string(static_cast<Engine>(s.info)))
                        : std::string(),
                    (*slot)->index);
            *slot = &s;
        }
        return {};
    }

    // STRTAB and the program's name.
    VErr string_table() {
        // String table.
        if (!strtab)
            return fail(24, "no STRTAB section (every container has one)");
        if (strtab->size == 0 || rd8(b, strtab->offset) != 0)
            return fail(strtab->offset, "the string table must start with a NUL byte");
        if (rd8(b, strtab->offset + strtab->size - 1) != 0)
            return fail(strtab->offset + strtab->size - 1,
                        "the string table is not NUL-terminated");
        return str(36, d.name);
    }

    // The entries of table section @p s (@p section its name), @p entry_size
    // bytes each and named by the string offset at their start: @p each
    // (k, Y, name, what) checks entry k at offset Y, whose name is not
    // empty; "@p noun k 'name'" (what) starts its messages.
    template <typename Each>
    VErr named_entries(const Section *s, const char *section, uint64_t entry_size, const char *noun,
                       Each each) {
        if (!s)
            return {};
        if (s->size % entry_size)
            return fail(s->entry + 16, "{} size {} is not a multiple of {}", section, s->size,
                        entry_size);
        for (uint64_t k = 0; k < s->size / entry_size; k++) {
            uint64_t Y = s->offset + k * entry_size;
            std::string name;
            if (auto e = str(Y, name))
                return e;
            if (name.empty())
                return fail(Y, "{} {}: empty name", noun, k);
            std::string what = fmt::format("{} {} '{}'", noun, k, name);
            if (auto e = each(k, Y, std::move(name), what))
                return e;
        }
        return {};
    }

    // ARGS: every binding slot belongs to one argument (or the constants).
    VErr arguments() {
        d.num_slots = num_slots;
        slots.assign(num_slots, SlotInfo{});
        slot_owner.assign(num_slots, -1);
        std::set<std::string> names;
        if (auto e = named_entries(
                args, "ARGS", f::arg_entry_size, "argument",
                [&](uint64_t k, uint64_t A, std::string name, const std::string &what) {
                    return argument(k, A, std::move(name), what, names);
                }))
            return e;
        for (uint32_t s = 0; s < num_slots; s++)
            if (slot_owner[s] < 0)
                return fail(48, "binding slot {} (of num_slots {}) belongs to no argument", s,
                            num_slots);
        if (cnst && d.const_slot == f::no_slot)
            return fail(cnst->entry, "section {} (CONST): constant data but no constant argument",
                        cnst->index);
        return {};
    }

    // SYMBOLS.
    VErr symbols() {
        return named_entries(syms, "SYMBOLS", f::symbol_entry_size, "symbol",
                             [&](uint64_t, uint64_t Y, std::string name, const std::string &what) {
                                 return symbol(Y, std::move(name), what);
                             });
    }

    // CODE: every stream, through the CodeChecker.
    VErr code_sections() {
        // Code.
        uint64_t image = sizeof(struct neuron_prog_header);
        bool any = false;
        CodeChecker checker(b, slots, isa_min);
        for (unsigned e = 0; e < num_engines; e++) {
            const Section *s = code[e];
            if (!s)
                continue;
            if (s->size == 0 || s->size % f::insn_size)
                return fail(s->entry + 16,
                            "section {} (CODE {}): size {} is not a non-zero multiple "
                            "of {}",
                            s->index, to_string(static_cast<Engine>(e + 1)), s->size, f::insn_size);
            image += s->size;
            if (image > NEURON_PROG_MAX_SIZE)
                return fail(s->entry + 16,
                            "the streams need a {}-byte device image, more than the "
                            "device's limit of {} bytes",
                            image, NEURON_PROG_MAX_SIZE);
            if (auto err = checker.check_stream(e + 1, s->offset, s->size / f::insn_size))
                return err;
            d.streams[e] = {s->offset, s->size};
            any = true;
        }
        if (!any)
            return fail(28, "no CODE section: the program has no instructions");
        for (ArgumentInfo &a : d.args)
            a.accumulated = a.direction == Direction::out && slots[a.slot].accumulated;
        if (cnst)
            d.constants = {cnst->offset, cnst->size};
        return {};
    }

    // ORIGINS: named instruction ranges of the streams, sorted, disjoint.
    VErr origins() {
        return named_entries(
            orig, "ORIGINS", f::origin_entry_size, "origin",
            [&](uint64_t k, uint64_t Y, std::string name, const std::string &what) -> VErr {
                OriginInfo o;
                o.name = std::move(name);
                uint8_t engine = rd8(b, Y + 4);
                if (engine < NEURON_ENGINE_TENSOR || engine > NEURON_ENGINE_SYNC)
                    return fail(Y + 4, "{}: engine {} does not exist (1..4)", what, engine);
                if (!zero(b, Y + 5, 3))
                    return fail(Y + 5, "{}: reserved fields must be zero", what);
                o.engine = static_cast<Engine>(engine);
                o.first = rd32(b, Y + 8);
                o.count = rd32(b, Y + 12);
                uint64_t insns = d.streams[engine - 1].second / f::insn_size;
                if (o.count == 0 || uint64_t{o.first} + o.count > insns)
                    return fail(
                        Y + 8, "{}: instructions [{}, +{}) are empty or outside the {} stream's {}",
                        what, o.first, o.count, to_string(o.engine), insns);
                if (!d.origins.empty()) {
                    const OriginInfo &p = d.origins.back();
                    if (p.engine > o.engine ||
                        (p.engine == o.engine && uint64_t{p.first} + p.count > o.first))
                        return fail(Y + 4,
                                    "{}: not after origin {} '{}' ({} [{}, +{})): origins are "
                                    "sorted by engine and instruction and do not overlap",
                                    what, k - 1, p.name, to_string(p.engine), p.first, p.count);
                }
                d.origins.push_back(std::move(o));
                return {};
            });
    }

    // LIVE: when SBUF/PSUM ranges are in use, by instruction.
    VErr live_ranges() {
        return named_entries(
            live, "LIVE", f::live_entry_size, "live range",
            [&](uint64_t, uint64_t Y, std::string name, const std::string &what) -> VErr {
                LiveRange r;
                r.name = std::move(name);
                uint8_t kind = rd8(b, Y + 4), ps = rd8(b, Y + 5), pc = rd8(b, Y + 6);
                if (kind != f::symbol_sbuf && kind != f::symbol_psum)
                    return fail(Y + 4, "{}: kind {} is neither SBUF (1) nor PSUM (2)", what, kind);
                if (pc == 0 || ps + pc > NEURON_PARTITIONS)
                    return fail(Y + 5, "{}: partitions {}+{} are outside 0..127", what, ps, pc);
                uint8_t le = rd8(b, Y + 7);
                if (le < NEURON_ENGINE_TENSOR || le > NEURON_ENGINE_SYNC)
                    return fail(Y + 7, "{}: live engine {} does not exist (1..4)", what, le);
                r.kind = static_cast<f::SymbolKind>(kind);
                r.part_start = ps;
                r.part_count = pc;
                r.offset = rd32(b, Y + 8);
                r.size = rd32(b, Y + 12);
                if (auto e = range_size(Y, what, kind, r.offset, r.size))
                    return e;
                if (rd32(b, Y + 36))
                    return fail(Y + 36, "{}: reserved fields must be zero", what);
                auto insns = [&](unsigned e) { return d.streams[e].second / f::insn_size; };
                r.live = {static_cast<Engine>(le), rd32(b, Y + 16)};
                if (r.live.index >= insns(le - 1u))
                    return fail(Y + 16, "{}: live instruction {} is outside the {} stream's {}",
                                what, r.live.index, to_string(r.live.engine), insns(le - 1u));
                for (unsigned e = 0; e < num_engines; e++) {
                    uint32_t i = rd32(b, Y + 20 + 4 * e);
                    if (i != LiveRange::no_insn && i >= insns(e))
                        return fail(Y + 20 + 4 * e,
                                    "{}: dead instruction {} is outside the {} stream's {}", what,
                                    i, to_string(static_cast<Engine>(e + 1)), insns(e));
                    r.dead[e] = i;
                }
                if (r.dead[le - 1u] == LiveRange::no_insn || r.dead[le - 1u] < r.live.index)
                    return fail(Y + 20 + 4 * (le - 1u),
                                "{}: the {} stream's last use is before its first (instruction {})",
                                what, to_string(r.live.engine), r.live.index);
                d.live.push_back(std::move(r));
                return {};
            });
    }

    // The offset (at @p Y + 8) and size (at @p Y + 12) of a SYMBOLS or LIVE
    // entry's SBUF or PSUM range: not empty, and a PSUM range within a
    // partition's bytes.
    VErr range_size(uint64_t Y, const std::string &what, uint8_t kind, uint32_t offset,
                    uint32_t size) const {
        if (size == 0)
            return fail(Y + 12, "{}: zero size", what);
        if (kind == f::symbol_psum &&
            uint64_t{offset} + size > NEURON_PSUM_SIZE / NEURON_PARTITIONS)
            return fail(Y + 8, "{}: PSUM range [{:#x}, +{:#x}) exceeds a partition", what, offset,
                        size);
        return {};
    }

    // The string at the string-table offset stored at @p field.
    VErr str(uint64_t field, std::string &s) const {
        uint32_t o = rd32(b, field);
        if (o >= strtab->size)
            return fail(field, "string offset {} is outside the string table ({} bytes)", o,
                        strtab->size);
        s.clear();
        for (uint64_t p = strtab->offset + o; rd8(b, p); p++) {
            uint8_t c = rd8(b, p);
            if (c < 0x20 || c > 0x7e)
                return fail(p, "non-printable byte {:#04x} in a string", c);
            s.push_back(static_cast<char>(c));
        }
        return {};
    }

    // Argument @p k at @p A, named @p name: its dtype, direction and shape.
    VErr argument(uint64_t k, uint64_t A, std::string name, const std::string &what,
                  std::set<std::string> &names) {
        ArgumentInfo a;
        a.name = std::move(name);
        if (!names.insert(a.name).second)
            return fail(A, "{}: duplicate name", what);
        uint8_t dt = rd8(b, A + 4), dir = rd8(b, A + 5), rank = rd8(b, A + 6);
        if (dt == NEURON_DT_INVALID || dt >= NEURON_DT_COUNT)
            return fail(A + 4, "{}: unknown dtype {}", what, dt);
        if (dir < 1 || dir > 4)
            return fail(A + 5, "{}: unknown direction {}", what, dir);
        if (rank < 1 || rank > f::max_rank)
            return fail(A + 6, "{}: rank {} is outside 1..{}", what, rank, f::max_rank);
        if (rd8(b, A + 7) || rd32(b, A + 12) || rd64(b, A + 56))
            return fail(rd8(b, A + 7)     ? A + 7
                        : rd32(b, A + 12) ? A + 12
                                          : A + 56,
                        "{}: reserved fields must be zero", what);
        a.dtype = static_cast<DType>(dt);
        a.direction = static_cast<Direction>(dir);
        uint64_t elems = 1;
        for (unsigned i = 0; i < f::max_rank; i++) {
            uint32_t dim = rd32(b, A + 32 + 4 * i);
            if (i < rank) {
                if (dim == 0)
                    return fail(A + 32 + 4 * i, "{}: dimension {} is zero", what, i);
                if (elems > (1ull << 48) / dim)
                    return fail(A + 32 + 4 * i, "{}: the shape has more than 2^48 elements", what);
                elems *= dim;
                a.shape.push_back(dim);
            } else if (dim) {
                return fail(A + 32 + 4 * i, "{}: dimension {} beyond rank {} must be zero", what, i,
                            rank);
            }
        }
        return argument_slot(k, std::move(a), A, what, dt, elems);
    }

    // Argument @p k's binding slot, size and offset, and the slot's rights.
    VErr argument_slot(uint64_t k, ArgumentInfo a, uint64_t A, const std::string &what, uint8_t dt,
                       uint64_t elems) {
        a.slot = rd32(b, A + 8);
        a.offset = rd64(b, A + 16);
        a.size = rd64(b, A + 24);
        if (a.size != elems * NEURON_DT_SIZE(dt))
            return fail(A + 24,
                        "{}: size {} does not match its shape ({} elements of {} "
                        "bytes)",
                        what, a.size, elems, NEURON_DT_SIZE(dt));
        if (a.slot >= num_slots)
            return fail(A + 8, "{}: slot {} is not below num_slots {}", what, a.slot, num_slots);
        if (a.direction == Direction::constant) {
            if (!cnst)
                return fail(A + 5, "{}: a constant, but the file has no CONST section", what);
            if (d.const_slot == f::no_slot) {
                if (slot_owner[a.slot] >= 0)
                    return fail(A + 8, "{}: slot {} is already argument {}'s", what, a.slot,
                                slot_owner[a.slot]);
                d.const_slot = a.slot;
                slot_owner[a.slot] = static_cast<int>(k);
                slots[a.slot] = {1, "the constants"};
            } else if (a.slot != d.const_slot) {
                return fail(A + 8, "{}: constants share one slot ({}), not {}", what, d.const_slot,
                            a.slot);
            }
            if (a.offset % NEURON_DT_SIZE(dt) || a.offset > cnst->size ||
                a.size > cnst->size - a.offset)
                return fail(A + 16,
                            "{}: [{:#x}, +{:#x}) is not an aligned range of the {} "
                            "bytes of constant data",
                            what, a.offset, a.size, cnst->size);
        } else {
            if (a.offset)
                return fail(A + 16, "{}: offset must be zero for a non-constant argument", what);
            if (slot_owner[a.slot] >= 0)
                return fail(A + 8, "{}: slot {} is already argument {}'s", what, a.slot,
                            slot_owner[a.slot]);
            slot_owner[a.slot] = static_cast<int>(k);
            unsigned r = a.direction == Direction::in ? 1 : a.direction == Direction::out ? 2 : 3;
            slots[a.slot] = {r, fmt::format("'{}', {} argument", a.name, to_string(a.direction)),
                             a.direction == Direction::out, false};
        }
        d.args.push_back(std::move(a));
        return {};
    }

    // The symbol at @p Y, named @p name: a semaphore, or a named SBUF/PSUM range.
    VErr symbol(uint64_t Y, std::string name, const std::string &what) {
        SymbolInfo s;
        s.name = std::move(name);
        uint8_t kind = rd8(b, Y + 4), dt = rd8(b, Y + 5), ps = rd8(b, Y + 6), pc = rd8(b, Y + 7);
        s.offset = rd32(b, Y + 8);
        s.size = rd32(b, Y + 12);
        if (rd64(b, Y + 16))
            return fail(Y + 16, "{}: reserved fields must be zero", what);
        if (kind == f::symbol_semaphore) {
            if (dt || ps || pc || s.size)
                return fail(Y + 5, "{}: a semaphore has no dtype, partitions or size", what);
            if (s.offset >= NEURON_NUM_SEMAPHORES)
                return fail(Y + 8, "{}: semaphore {} does not exist", what, s.offset);
        } else if (kind == f::symbol_sbuf || kind == f::symbol_psum) {
            if (dt == NEURON_DT_INVALID || dt >= NEURON_DT_COUNT)
                return fail(Y + 5, "{}: unknown dtype {}", what, dt);
            if (pc == 0 || ps + pc > NEURON_PARTITIONS)
                return fail(Y + 6, "{}: partitions {}+{} are outside 0..127", what, ps, pc);
            if (auto e = range_size(Y, what, kind, s.offset, s.size))
                return e;
        } else {
            return fail(Y + 4, "{}: unknown kind {}", what, kind);
        }
        s.kind = static_cast<f::SymbolKind>(kind);
        s.dtype = static_cast<DType>(dt ? dt : 1);
        s.part_start = ps;
        s.part_count = pc;
        d.symbols.push_back(std::move(s));
        return {};
    }
};

VErr parse_impl(std::span<const std::byte> b, ProgramData *out) {
    Parser p(b);
    for (auto step :
         {&Parser::header, &Parser::section_table, &Parser::overlaps, &Parser::assign_sections,
          &Parser::string_table, &Parser::arguments, &Parser::symbols, &Parser::code_sections,
          &Parser::origins, &Parser::live_ranges})
        if (auto e = (p.*step)())
            return e;
    ProgramData &d = p.d;
    if (out) {
        d.version_major = p.vmaj;
        d.version_minor = p.vmin;
        d.isa_minor = p.isa_min;
        d.insn_limit = rd64(b, 40);
        d.bytes.assign(b.begin(), b.end());
        *out = std::move(d);
    }
    return {};
}

} // namespace

namespace detail {
std::optional<ValidationError> parse_container(std::span<const std::byte> b, ProgramData *out) {
    return parse_impl(b, out);
}
} // namespace detail

std::optional<ValidationError> validate(std::span<const std::byte> container) noexcept {
    try {
        return parse_impl(container, nullptr);
    } catch (const std::bad_alloc &) {
        return ValidationError{0, "out of memory while validating"};
    } catch (...) {
        return ValidationError{0, "internal error while validating"};
    }
}

// --- Program -----------------------------------------------------------------------

Program Program::parse(std::span<const std::byte> container) {
    auto d = std::make_shared<ProgramData>();
    if (auto e = parse_impl(container, d.get()))
        throw Error(errc::invalid_program, "invalid program container: " + e->to_string());
    return Program(std::move(d));
}

Program Program::load_file(const std::filesystem::path &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error(errc::invalid_argument,
                    fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
    std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto d = std::make_shared<ProgramData>();
    auto bytes = std::as_bytes(std::span(raw));
    if (auto e = parse_impl(bytes, d.get()))
        throw Error(errc::invalid_program, fmt::format("{}: {}", path.string(), e->to_string()));
    return Program(std::move(d));
}

void Program::save(const std::filesystem::path &path) const {
    errno = 0;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out)
        throw Error(errc::io_error, fmt::format("{}: cannot create the program file: {}",
                                                path.string(), std::strerror(errno)));
    out.write(reinterpret_cast<const char *>(d_->bytes.data()),
              static_cast<std::streamsize>(d_->bytes.size()));
    out.flush();
    if (!out)
        throw Error(errc::io_error, fmt::format("{}: cannot write the program: {}", path.string(),
                                                std::strerror(errno)));
}

std::span<const std::byte> Program::bytes() const {
    return d_->bytes;
}
const std::string &Program::name() const {
    return d_->name;
}
uint16_t Program::version_major() const {
    return d_->version_major;
}
uint16_t Program::version_minor() const {
    return d_->version_minor;
}
uint32_t Program::isa_version() const {
    return uint32_t{NEURON_ISA_VERSION_MAJOR} << 16 | d_->isa_minor;
}
uint64_t Program::insn_limit() const {
    return d_->insn_limit;
}
uint32_t Program::num_slots() const {
    return d_->num_slots;
}
std::optional<uint32_t> Program::const_slot() const {
    if (d_->const_slot == f::no_slot)
        return std::nullopt;
    return d_->const_slot;
}
std::span<const ArgumentInfo> Program::arguments() const {
    return d_->args;
}
const ArgumentInfo *Program::find_argument(std::string_view name) const {
    for (const auto &a : d_->args)
        if (a.name == name)
            return &a;
    return nullptr;
}
std::span<const SymbolInfo> Program::symbols() const {
    return d_->symbols;
}

std::span<const OriginInfo> Program::origins() const {
    return d_->origins;
}

const std::string *Program::origin(Engine e, uint32_t index) const {
    const auto &o = d_->origins;
    // The last range starting at or before (e, index).
    auto it = std::upper_bound(o.begin(), o.end(), std::make_pair(e, index),
                               [](const std::pair<Engine, uint32_t> &k, const OriginInfo &x) {
                                   return k < std::make_pair(x.engine, x.first);
                               });
    if (it == o.begin())
        return nullptr;
    --it;
    if (it->engine != e || index - it->first >= it->count)
        return nullptr;
    return &it->name;
}
std::span<const LiveRange> Program::live_ranges() const {
    return d_->live;
}
std::span<const std::byte> Program::stream(Engine e) const {
    unsigned i = static_cast<unsigned>(e) - 1;
    if (i >= num_engines)
        throw Error(errc::invalid_argument, fmt::format("engine {} does not exist", i + 1));
    auto [off, size] = d_->streams[i];
    return std::span<const std::byte>(d_->bytes).subspan(off, size);
}
std::span<const std::byte> Program::constants() const {
    return std::span<const std::byte>(d_->bytes).subspan(d_->constants.first, d_->constants.second);
}

std::vector<std::byte> Program::device_image() const {
    uint64_t total = sizeof(struct neuron_prog_header);
    for (auto [off, size] : d_->streams)
        total += size;
    std::vector<std::byte> img(total);
    std::span<std::byte> w(img);
    wr32(w, 0, NEURON_PROG_MAGIC);
    wr16(w, 4, NEURON_ISA_VERSION_MAJOR);
    wr16(w, 6, d_->isa_minor); // a device of that revision or later runs it
    wr32(w, 8, sizeof(struct neuron_prog_header));
    wr32(w, 12, static_cast<uint32_t>(total));
    uint64_t pos = sizeof(struct neuron_prog_header);
    for (unsigned e = 0; e < num_engines; e++) {
        auto [off, size] = d_->streams[e];
        if (!size)
            continue;
        wr32(w, 16 + 8 * e, static_cast<uint32_t>(pos));
        wr32(w, 20 + 8 * e, static_cast<uint32_t>(size / f::insn_size));
        std::memcpy(img.data() + pos, d_->bytes.data() + off, size);
        pos += size;
    }
    wr64(w, offsetof(struct neuron_prog_header, insn_limit), d_->insn_limit);
    return img;
}

// --- writer ------------------------------------------------------------------------

namespace {

/// A container's string table: each string once, at the offset the entries
/// refer to it by; offset 0 is the empty string.
class StringTable {
  public:
    uint32_t intern(const std::string &s) {
        if (s.empty())
            return 0;
        auto [it, fresh] = offsets_.emplace(s, static_cast<uint32_t>(bytes_.size()));
        if (fresh) {
            for (char ch : s)
                bytes_.push_back(static_cast<std::byte>(ch));
            bytes_.push_back(std::byte{0});
        }
        return it->second;
    }
    const std::vector<std::byte> &bytes() const { return bytes_; }

  private:
    std::vector<std::byte> bytes_{std::byte{0}};
    std::map<std::string, uint32_t> offsets_;
};

std::vector<std::byte> args_section(std::span<const ArgumentInfo> args, StringTable &strings) {
    std::vector<std::byte> out(args.size() * f::arg_entry_size);
    for (size_t k = 0; k < args.size(); k++) {
        const auto &a = args[k];
        std::span<std::byte> w = std::span(out).subspan(k * f::arg_entry_size, f::arg_entry_size);
        wr32(w, 0, strings.intern(a.name));
        wr8(w, 4, static_cast<uint8_t>(a.dtype));
        wr8(w, 5, static_cast<uint8_t>(a.direction));
        wr8(w, 6, static_cast<uint8_t>(a.shape.size()));
        wr32(w, 8, a.slot);
        wr64(w, 16, a.offset);
        wr64(w, 24, a.size);
        for (size_t i = 0; i < a.shape.size() && i < f::max_rank; i++)
            wr32(w, 32 + 4 * i, a.shape[i]);
    }
    return out;
}

std::vector<std::byte> symbols_section(std::span<const SymbolInfo> symbols, StringTable &strings) {
    std::vector<std::byte> out(symbols.size() * f::symbol_entry_size);
    for (size_t k = 0; k < symbols.size(); k++) {
        const auto &s = symbols[k];
        std::span<std::byte> w =
            std::span(out).subspan(k * f::symbol_entry_size, f::symbol_entry_size);
        wr32(w, 0, strings.intern(s.name));
        wr8(w, 4, s.kind);
        if (s.kind != f::symbol_semaphore) {
            wr8(w, 5, static_cast<uint8_t>(s.dtype));
            wr8(w, 6, static_cast<uint8_t>(s.part_start));
            wr8(w, 7, static_cast<uint8_t>(s.part_count));
        }
        wr32(w, 8, s.offset);
        wr32(w, 12, s.size);
    }
    return out;
}

struct SectionData {
    uint32_t type, info;
    const std::vector<std::byte> *data;
    uint32_t flags = 0;
};

std::vector<std::byte> origins_section(std::span<const OriginInfo> origins, StringTable &strings) {
    std::vector<std::byte> out(origins.size() * f::origin_entry_size);
    for (size_t k = 0; k < origins.size(); k++) {
        const auto &o = origins[k];
        std::span<std::byte> w =
            std::span(out).subspan(k * f::origin_entry_size, f::origin_entry_size);
        wr32(w, 0, strings.intern(o.name));
        wr8(w, 4, static_cast<uint8_t>(o.engine));
        wr32(w, 8, o.first);
        wr32(w, 12, o.count);
    }
    return out;
}

std::vector<std::byte> live_section(std::span<const LiveRange> live, StringTable &strings) {
    std::vector<std::byte> out(live.size() * f::live_entry_size);
    for (size_t k = 0; k < live.size(); k++) {
        const auto &r = live[k];
        std::span<std::byte> w = std::span(out).subspan(k * f::live_entry_size, f::live_entry_size);
        wr32(w, 0, strings.intern(r.name));
        wr8(w, 4, r.kind);
        wr8(w, 5, static_cast<uint8_t>(r.part_start));
        wr8(w, 6, static_cast<uint8_t>(r.part_count));
        wr32(w, 8, r.offset);
        wr32(w, 12, r.size);
        wr8(w, 7, static_cast<uint8_t>(r.live.engine));
        wr32(w, 16, r.live.index);
        for (unsigned e = 0; e < num_engines; e++)
            wr32(w, 20 + 4 * e, r.dead[e]);
    }
    return out;
}

/// The header, the section table after it and each section at a 64-byte
/// boundary; the header's CRC covers its first 60 bytes and the table.
// The oldest ISA minor that runs every instruction of @p streams.
uint16_t isa_minor_needed(const std::array<std::vector<std::byte>, num_engines> &streams) {
    unsigned minor = 0;
    for (const auto &code : streams)
        for (size_t i = 0; i + f::insn_size <= code.size(); i += f::insn_size)
            minor = std::max(
                minor, isa_minor_of(std::span<const std::byte>(code).subspan(i, f::insn_size)));
    return static_cast<uint16_t>(minor);
}

std::vector<std::byte> assemble(const ContainerContents &c, uint32_t name,
                                std::span<const SectionData> secs) {
    auto align = [](uint64_t v, uint64_t a) { return (v + a - 1) / a * a; };
    const uint64_t table = f::header_size;
    const uint64_t table_end = table + secs.size() * f::section_entry_size;
    uint64_t pos = table_end;
    std::vector<uint64_t> offs;
    for (const auto &s : secs) {
        pos = align(pos, 64);
        offs.push_back(pos);
        pos += s.data->size();
    }
    std::vector<std::byte> out(pos);
    std::span<std::byte> w(out);
    wr32(w, 0, f::magic);
    wr16(w, 4, f::version_major);
    // 1.0 unless the file has what 1.1 (ORIGINS) or 1.2 (LIVE) added.
    wr16(w, 6, !c.live.empty() ? 2 : c.origins.empty() ? 0 : 1);
    wr32(w, 8, f::header_size);
    wr64(w, 16, out.size());
    wr32(w, 24, static_cast<uint32_t>(table));
    wr32(w, 28, static_cast<uint32_t>(secs.size()));
    wr16(w, 32, NEURON_ISA_VERSION_MAJOR);
    wr16(w, 34, isa_minor_needed(c.streams));
    wr32(w, 36, name);
    wr64(w, 40, c.insn_limit);
    wr32(w, 48, c.num_slots);
    for (size_t i = 0; i < secs.size(); i++) {
        uint64_t E = table + i * f::section_entry_size;
        const auto &s = secs[i];
        wr32(w, E, s.type);
        wr32(w, E + 4, s.flags);
        wr64(w, E + 8, offs[i]);
        wr64(w, E + 16, s.data->size());
        wr32(w, E + 24, crc32(*s.data));
        wr32(w, E + 28, s.info);
        if (!s.data->empty())
            std::memcpy(out.data() + offs[i], s.data->data(), s.data->size());
    }
    wr32(w, 60,
         crc32(std::span<const std::byte>(out).subspan(table, table_end - table),
               crc32(std::span<const std::byte>(out).first(60))));
    return out;
}

} // namespace

namespace detail {

std::vector<std::byte> write_container(const ContainerContents &c) {
    // The entries intern their strings, so the string table is complete last.
    StringTable strings;
    uint32_t name = strings.intern(c.name);
    std::vector<std::byte> args = args_section(c.args, strings);
    std::vector<std::byte> syms = symbols_section(c.symbols, strings);
    std::vector<std::byte> origins = origins_section(c.origins, strings);
    std::vector<std::byte> live = live_section(c.live, strings);

    std::vector<SectionData> secs{{f::section_strtab, 0, &strings.bytes()}};
    if (!args.empty())
        secs.push_back({f::section_args, 0, &args});
    if (!syms.empty())
        secs.push_back({f::section_symbols, 0, &syms});
    for (unsigned e = 0; e < num_engines; e++)
        if (!c.streams[e].empty())
            secs.push_back({f::section_code, e + 1, &c.streams[e]});
    if (!c.constants.empty())
        secs.push_back({f::section_const, 0, &c.constants});
    // Optional: a 1.0 reader skips it.
    if (!origins.empty())
        secs.push_back({f::section_origins, 0, &origins, f::section_optional});
    if (!live.empty())
        secs.push_back({f::section_live, 0, &live, f::section_optional});
    return assemble(c, name, secs);
}

} // namespace detail
} // namespace neuron
