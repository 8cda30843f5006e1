// SPDX-License-Identifier: MIT
// The disassembler: a program as text.
#include <cstring>
#include <iterator>

#include <fmt/format.h>

#include "format_internal.hpp"
#include "neuron_isa.h"

namespace neuron {

using namespace detail;

namespace {

const char *dt_name(uint8_t dt) {
    return dt >= 1 && dt < NEURON_DT_COUNT ? to_string(static_cast<DType>(dt)) : "dt?";
}

float f32(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

const char *alu_name(uint8_t op) {
    static const char *const n[] = {"none",  "add",   "sub",   "mul",   "max",   "min",  "div",
                                    "is_eq", "is_ne", "is_lt", "is_le", "is_gt", "is_ge"};
    static_assert(std::size(n) == NEURON_ALU_COUNT);
    return op < NEURON_ALU_COUNT ? n[op] : "alu?";
}
const char *act_name(uint8_t f) {
    static const char *const n[] = {"?",          "identity", "relu", "gelu_tanh", "gelu",
                                    "sigmoid",    "tanh",     "exp",  "silu",      "rsqrt",
                                    "reciprocal", "ln",       "erf",  "sqrt",      "abs"};
    static_assert(std::size(n) == NEURON_ACT_COUNT);
    return f < NEURON_ACT_COUNT ? n[f] : "act?";
}
const char *red_name(uint8_t f) {
    static const char *const n[] = {"?", "sum", "max", "min"};
    return f < 4 ? n[f] : "red?";
}

std::string symbol_for(const Program *p, uint8_t space, uint32_t offset) {
    if (!p)
        return {};
    for (const auto &s : p->symbols()) {
        bool match = (space == NEURON_SPACE_SBUF && s.kind == format::symbol_sbuf) ||
                     (space == NEURON_SPACE_PSUM && s.kind == format::symbol_psum);
        if (match && offset >= s.offset && offset < s.offset + s.size)
            return offset == s.offset ? fmt::format(" ({})", s.name)
                                      : fmt::format(" ({}+{:#x})", s.name, offset - s.offset);
    }
    return {};
}

std::string tap(std::span<const std::byte> in, unsigned k, const Program *p) {
    size_t T = 8 + 16 * k;
    uint8_t space = rd8(in, T);
    if (space == NEURON_SPACE_NONE)
        return "-";
    std::string s = fmt::format("{}.{}[p{}+{} @{:#x} {}",
                                space == NEURON_SPACE_SBUF   ? "sbuf"
                                : space == NEURON_SPACE_PSUM ? "psum"
                                                             : "space?",
                                dt_name(rd8(in, T + 1)), rd8(in, T + 2), rd8(in, T + 3),
                                rd32(in, T + 4), rd16(in, T + 8));
    if (rd16(in, T + 12) != 1)
        s += fmt::format("/{}", rd16(in, T + 12));
    if (rd16(in, T + 10) != 1 || rd16(in, T + 14))
        s += fmt::format(" x{}/{}", rd16(in, T + 10), rd16(in, T + 14));
    return s + "]" + symbol_for(p, space, rd32(in, T + 4));
}

std::string slot_name(const Program *p, uint32_t slot) {
    if (!p)
        return {};
    if (p->const_slot() && *p->const_slot() == slot)
        return " (constants)";
    for (const auto &a : p->arguments())
        if (a.slot == slot && a.direction != Direction::constant)
            return fmt::format(" ({})", a.name);
    return {};
}

std::string sem_name(const Program *p, uint32_t id) {
    if (p)
        for (const auto &s : p->symbols())
            if (s.kind == format::symbol_semaphore && s.offset == id)
                return fmt::format("sem{} ({})", id, s.name);
    return fmt::format("sem{}", id);
}

} // namespace

std::string disassemble_instruction(std::span<const std::byte> in, const Program *p) {
    if (in.size() < 64)
        return "<truncated instruction>";
    uint8_t op = rd8(in, 0), flags = rd8(in, 1), func = rd8(in, 2), func2 = rd8(in, 3);
    uint32_t arg = rd32(in, 4), imm0 = rd32(in, 56), imm1 = rd32(in, 60);
    const neuron_opcode_info *info = neuron_opcode_lookup(op);
    if (!info)
        return fmt::format(".insn {:#04x}", op);
    const char *name = info->name; // the mnemonic, from the opcode table
    switch (op) {
    case NEURON_OP_END:
    case NEURON_OP_NOP:
        return name;
    case NEURON_OP_NOTIFY:
        return fmt::format("{} {}", name, arg);
    case NEURON_OP_SEM_SIGNAL:
        return fmt::format("{} {} += {}", name, sem_name(p, func), arg);
    case NEURON_OP_SEM_WAIT:
        return fmt::format("{} {} >= {}{}", name, sem_name(p, func), arg,
                           flags & NEURON_SEM_F_DECREMENT ? ", decrement" : "");
    case NEURON_OP_LOOP:
        return imm0 ? fmt::format("{} ctr{} -> {} x{}", name, func, arg, imm0)
                    : fmt::format("{} ctr{} -> {} forever", name, func, arg);
    case NEURON_OP_DMA_LOAD:
    case NEURON_OP_DMA_STORE:
    case NEURON_OP_DMA_GATHER:
    case NEURON_OP_DMA_SCATTER_ADD: {
        std::string mem = fmt::format("slot{}{}[+{:#x} pstride {} strides {},{}]", rd8(in, 24),
                                      slot_name(p, rd8(in, 24)), rd64(in, 32), rd32(in, 28),
                                      rd32(in, 40), rd32(in, 44));
        if (op == NEURON_OP_DMA_GATHER)
            return fmt::format("{} {} <- {} rows sbuf.int32[@{:#x}] < {}", name, tap(in, 0, p), mem,
                               imm0, imm1);
        if (op == NEURON_OP_DMA_SCATTER_ADD)
            return fmt::format("{} {} rows sbuf.int32[@{:#x}] < {} += {}", name, mem, imm0, imm1,
                               tap(in, 0, p));
        return op == NEURON_OP_DMA_LOAD ? fmt::format("{} {} <- {}", name, tap(in, 0, p), mem)
                                        : fmt::format("{} {} <- {}", name, mem, tap(in, 0, p));
    }
    case NEURON_OP_MATMUL:
        return fmt::format("{} {} {} {}^T * {}", name, tap(in, 0, p),
                           flags & NEURON_MM_F_ACCUMULATE ? "+=" : "=", tap(in, 1, p),
                           tap(in, 2, p));
    case NEURON_OP_TRANSPOSE:
        return fmt::format("{} {} <- {}", name, tap(in, 0, p), tap(in, 1, p));
    case NEURON_OP_ACTIVATE:
        return fmt::format("{}.{} {} <- {} * {} + {}", name, act_name(func), tap(in, 0, p),
                           tap(in, 1, p), f32(imm0),
                           rd8(in, 40) ? tap(in, 2, p) : fmt::format("{}", f32(imm1)));
    case NEURON_OP_TENSOR_TENSOR:
        return fmt::format("{}.{}{} {} <- {}, {}", name, alu_name(func),
                           flags & NEURON_TT_F_INT32 ? ".int32" : "", tap(in, 0, p), tap(in, 1, p),
                           tap(in, 2, p));
    case NEURON_OP_TENSOR_SCALAR: {
        // Integer operations (ISA 1.2) take int32 immediates.
        const bool integer = flags & NEURON_TS_F_INT32;
        auto imm = [&](uint32_t v) {
            return integer ? fmt::format("{}", static_cast<int32_t>(v)) : fmt::format("{}", f32(v));
        };
        std::string s0 = rd8(in, 40) ? tap(in, 2, p) : imm(imm0);
        std::string s = fmt::format("{}{} {} <- {} {}{} {}", name, integer ? ".int32" : "",
                                    tap(in, 0, p), tap(in, 1, p), alu_name(func),
                                    flags & NEURON_TS_F_REVERSE0 ? "(rev)" : "", s0);
        if (func2)
            s += fmt::format(" then {}{} {}", alu_name(func2),
                             flags & NEURON_TS_F_REVERSE1 ? "(rev)" : "", imm(imm1));
        return s;
    }
    case NEURON_OP_REDUCE:
        return fmt::format("{}.{} {} <- {}", name, red_name(func), tap(in, 0, p), tap(in, 1, p));
    case NEURON_OP_COPY:
        return fmt::format("{}{} {} <- {}", name, flags & NEURON_COPY_F_TRUNC ? ".trunc" : "",
                           tap(in, 0, p), tap(in, 1, p));
    case NEURON_OP_MEMSET:
        return fmt::format("{} {} <- {:#010x} ({})", name, tap(in, 0, p), imm0, f32(imm0));
    case NEURON_OP_IOTA:
        return fmt::format("{} {} <- {} + {}*p + {}*i", name, tap(in, 0, p),
                           static_cast<int32_t>(arg), static_cast<int32_t>(imm0),
                           static_cast<int32_t>(imm1));
    case NEURON_OP_SELECT:
        return fmt::format(
            "{} {} <- {} ? {} : {}", name, tap(in, 0, p), tap(in, 1, p), tap(in, 2, p),
            flags & NEURON_SEL_F_KEEP ? std::string("keep") : fmt::format("{}", f32(imm0)));
    case NEURON_OP_RANDOM:
        return fmt::format("{} {} <- philox({}) at {} + {}*p + i", name, tap(in, 0, p),
                           tap(in, 1, p), arg, imm0);
    default:
        return fmt::format(".insn {:#04x}", op);
    }
}

uint32_t isa_version() noexcept {
    return uint32_t{NEURON_ISA_VERSION_MAJOR} << 16 | NEURON_ISA_VERSION_MINOR;
}

unsigned isa_minor_of(uint8_t opcode, uint8_t func, uint8_t func2) noexcept {
    return neuron_insn_isa_minor(opcode, func, func2);
}

unsigned isa_minor_of(std::span<const std::byte> insn) noexcept {
    if (insn.size() < sizeof(neuron_insn))
        return 0;
    neuron_insn in;
    std::memcpy(&in, insn.data(), sizeof(in)); // the fields read are single bytes
    return neuron_insn_isa_minor_of(&in);
}

std::string mnemonic(std::span<const std::byte> insn) {
    if (insn.size() < sizeof(neuron_insn))
        return "<truncated instruction>";
    const uint8_t op = rd8(insn, 0), flags = rd8(insn, 1);
    std::string s = mnemonic(op, rd8(insn, 2), rd8(insn, 3));
    if ((op == NEURON_OP_TENSOR_TENSOR && (flags & NEURON_TT_F_INT32)) ||
        (op == NEURON_OP_TENSOR_SCALAR && (flags & NEURON_TS_F_INT32)))
        s += ".int32";
    else if (op == NEURON_OP_COPY && (flags & NEURON_COPY_F_TRUNC))
        s += ".trunc";
    for (unsigned k = 0; k < NEURON_INSN_OPERANDS; k++) {
        const neuron_opcode_info *info = neuron_opcode_lookup(op);
        if (info && info->operand[k] != NEURON_OPERAND_NONE &&
            info->operand[k] != NEURON_OPERAND_DRAM && rd8(insn, 9 + 16 * k) == NEURON_DT_U8) {
            s += " (u8 operand)";
            break;
        }
    }
    return s;
}

std::string mnemonic(uint8_t op, uint8_t func, uint8_t func2) {
    const neuron_opcode_info *info = neuron_opcode_lookup(op);
    if (!info)
        return fmt::format(".insn {:#04x}", op);
    switch (op) {
    case NEURON_OP_ACTIVATE:
        return fmt::format("{}.{}", info->name, act_name(func));
    case NEURON_OP_TENSOR_TENSOR:
        return fmt::format("{}.{}", info->name, alu_name(func));
    case NEURON_OP_TENSOR_SCALAR:
        return func2 ? fmt::format("{}.{}.{}", info->name, alu_name(func), alu_name(func2))
                     : fmt::format("{}.{}", info->name, alu_name(func));
    case NEURON_OP_REDUCE:
        return fmt::format("{}.{}", info->name, red_name(func));
    default:
        return info->name;
    }
}

std::string disassemble(const Program &p) {
    std::string s = fmt::format("program \"{}\": container {}.{}, ISA {}.{}, {} binding slot(s)",
                                p.name(), p.version_major(), p.version_minor(),
                                p.isa_version() >> 16, p.isa_version() & 0xffff, p.num_slots());
    if (p.insn_limit())
        s += fmt::format(", insn_limit {}", p.insn_limit());
    s += "\n";
    if (!p.arguments().empty()) {
        s += "arguments:\n";
        for (const auto &a : p.arguments()) {
            std::string shape;
            for (size_t i = 0; i < a.shape.size(); i++)
                shape += fmt::format("{}{}", i ? "," : "", a.shape[i]);
            s += fmt::format("  slot {:<2} {:<5} {}[{}] {}", a.slot, to_string(a.direction),
                             to_string(a.dtype), shape, a.name);
            if (a.direction == Direction::constant)
                s += fmt::format(" @const+{:#x}", a.offset);
            s += fmt::format(" ({} bytes)\n", a.size);
        }
    }
    if (!p.symbols().empty()) {
        s += "symbols:\n";
        for (const auto &y : p.symbols()) {
            if (y.kind == format::symbol_semaphore)
                s += fmt::format("  sem{:<2}            {}\n", y.offset, y.name);
            else
                s +=
                    fmt::format("  {} {}[p{}+{}] [{:#x}, {:#x}) {}\n",
                                y.kind == format::symbol_sbuf ? "sbuf" : "psum", to_string(y.dtype),
                                y.part_start, y.part_count, y.offset, y.offset + y.size, y.name);
        }
    }
    for (unsigned e = 1; e <= num_engines; e++) {
        auto code = p.stream(static_cast<Engine>(e));
        if (code.empty())
            continue;
        s += fmt::format("stream {} ({} instructions):\n", to_string(static_cast<Engine>(e)),
                         code.size() / 64);
        for (size_t i = 0; i < code.size() / 64; i++)
            s += fmt::format("  {:4}: {}\n", i,
                             disassemble_instruction(code.subspan(i * 64, 64), &p));
    }
    if (!p.constants().empty())
        s += fmt::format("constants: {} bytes\n", p.constants().size());
    return s;
}

} // namespace neuron
