// SPDX-License-Identifier: MIT
// The validator rejects every class of corruption with the offending byte
// offset and the reason.
#include <cmath>

#include "neuron_isa.h"
#include "testutil.hpp"

using namespace neuron;
using test::refix;
using test::section_entry;

namespace {

enum : uint32_t { STRTAB = 1, ARGS = 2, CODE = 3, CONST = 4, SYMBOLS = 5 };

void expect(const std::vector<std::byte> &b, uint64_t offset, const char *reason) {
    auto e = validate(b);
    if (!e)
        fail_msg("accepted; expected offset %#llx: %s", static_cast<unsigned long long>(offset),
                 reason);
    if (e->offset != offset || e->reason.find(reason) == std::string::npos)
        fail_msg("got offset %#llx: %s\nexpected offset %#llx: %s",
                 static_cast<unsigned long long>(e->offset), e->reason.c_str(),
                 static_cast<unsigned long long>(offset), reason);
    // Program::parse reports the same, as an Error.
    try {
        Program::parse(b);
        fail_msg("parse accepted what validate rejected");
    } catch (const Error &err) {
        assert_true(err.code() == errc::invalid_program);
        assert_non_null(std::strstr(err.what(), e->to_string().c_str()));
    }
}

uint64_t sec_off(const std::vector<std::byte> &b, size_t entry) {
    return test::rd64(b, entry + 8);
}

/// Offset of instruction @p i of the @p engine stream.
uint64_t insn(const std::vector<std::byte> &b, unsigned engine, unsigned i) {
    return sec_off(b, section_entry(b, CODE, engine)) + 64 * i;
}

} // namespace

static void accepts_sample(void **) {
    assert_false(validate(test::sample_bytes()).has_value());
}

static void truncation(void **) {
    auto b = test::sample_bytes();
    auto t = b;
    t.resize(40);
    expect(t, 40, "truncated: the file has 40 bytes, the header alone needs 64");
    t = b;
    t.resize(70);
    expect(t, 70, "truncated: the section table");
    t = b;
    t.resize(b.size() - 8);
    expect(t, 16, "truncated: the header says");
    expect({}, 0, "truncated");
    t = b;
    t.resize(b.size() + 8);
    expect(t, 16, "trailing data");
}

static void header(void **) {
    auto b = test::sample_bytes();
    auto t = b;
    test::wr32(t, 0, 0x12345678);
    expect(t, 0, "bad magic 0x12345678");
    t = b;
    test::wr16(t, 4, 2);
    expect(t, 4, "unsupported container version 2.0");
    t = b;
    test::wr32(t, 8, 60);
    expect(t, 8, "header_size 60");
    t = b;
    test::wr32(t, 12, 4);
    refix(t);
    expect(t, 12, "unknown header flags 0x4");
    t = b;
    test::wr32(t, 56, 1);
    refix(t);
    expect(t, 52, "reserved header fields must be zero");
    t = b;
    test::wr16(t, 32, 9);
    refix(t);
    expect(t, 32, "ISA version 9.0");
    t = b;
    test::wr32(t, 28, 0);
    expect(t, 28, "section_count 0");
    t = b;
    test::wr32(t, 24, 60);
    expect(t, 24, "section table offset 0x3c");
}

static void checksums(void **) {
    auto b = test::sample_bytes();
    auto t = b;
    t[36] ^= std::byte{1}; // the name field: only the header CRC notices
    expect(t, 60, "header checksum");
    t = b;
    size_t e = section_entry(b, CODE, NEURON_ENGINE_SCALAR);
    t[sec_off(b, e) + 60] ^= std::byte{0x80};
    expect(t, e + 24, "section 5 (CODE): checksum");
    t = b;
    e = section_entry(b, CONST);
    t[sec_off(b, e)] ^= std::byte{1};
    expect(t, e + 24, "(CONST): checksum");
}

static void bad_offsets(void **) {
    auto b = test::sample_bytes();
    size_t e = section_entry(b, CONST);
    auto t = b;
    test::wr64(t, e + 8, b.size() - 8);
    refix(t);
    expect(t, e + 16, "extends past the end of the file");
    t = b;
    test::wr64(t, e + 16, ~0ull - 4);
    refix(t);
    expect(t, e + 16, "extends past the end of the file");
    t = b;
    test::wr64(t, e + 8, sec_off(b, e) + 4);
    refix(t);
    expect(t, e + 8, "is not 8-byte aligned");
    t = b;
    test::wr64(t, e + 8, 64);
    refix(t);
    expect(t, e + 8, "overlaps the header or section table");
}

static void overlapping_sections(void **) {
    auto b = test::sample_bytes();
    size_t code = section_entry(b, CODE, NEURON_ENGINE_VECTOR);
    size_t cst = section_entry(b, CONST);
    auto t = b;
    test::wr64(t, cst + 8, sec_off(b, code) + 64);
    refix(t);
    expect(t, cst + 8, "overlaps section");
    t = b;
    size_t other = section_entry(b, CODE, NEURON_ENGINE_SYNC);
    test::wr32(t, other + 28, NEURON_ENGINE_VECTOR);
    refix(t);
    auto err = validate(t);
    assert_true(err.has_value());
    assert_non_null(
        std::strstr(err->reason.c_str(), "a second CODE section for the vector engine"));
}

static void sections(void **) {
    auto b = test::sample_bytes();
    size_t e = section_entry(b, SYMBOLS);
    auto t = b;
    test::wr32(t, e, 99);
    refix(t);
    expect(t, e, "unknown type 99 (not marked optional)");
    test::wr32(t, e + 4, 1); // optional: skipped
    refix(t);
    assert_false(validate(t).has_value());
    t = b;
    test::wr32(t, e + 4, 2);
    refix(t);
    expect(t, e + 4, "unknown flags 0x2");
    t = b;
    test::wr32(t, e + 28, 3);
    refix(t);
    expect(t, e + 28, "info must be zero");
    t = b;
    size_t c = section_entry(b, CODE, NEURON_ENGINE_TENSOR);
    test::wr32(t, c + 28, 9);
    refix(t);
    expect(t, c + 28, "engine 9 does not exist");
    t = b;
    test::wr64(t, c + 16, 100);
    refix(t);
    expect(t, c + 16, "size 100 is not a non-zero multiple of 64");
    // String table.
    t = b;
    size_t s = section_entry(b, STRTAB);
    uint64_t so = sec_off(b, s), ss = test::rd64(b, s + 16);
    t[so + ss - 1] = std::byte{'x'};
    refix(t);
    expect(t, so + ss - 1, "not NUL-terminated");
    t = b;
    t[so + 1] = std::byte{7};
    refix(t);
    expect(t, so + 1, "non-printable byte 0x07");
    t = b;
    test::wr32(t, 36, 100000);
    refix(t);
    expect(t, 36, "outside the string table");
}

static void unknown_opcodes(void **) {
    auto b = test::sample_bytes();
    auto t = b;
    uint64_t i = insn(b, NEURON_ENGINE_TENSOR, 1);
    t[i] = std::byte{0x7f};
    refix(t);
    expect(t, i, "CODE[tensor] instruction 1: unknown opcode 0x7f");
    t = b;
    i = insn(b, NEURON_ENGINE_VECTOR, 0);
    t[i] = std::byte{0};
    refix(t);
    expect(t, i, "unknown opcode 0x00");
    t = b;
    i = insn(b, NEURON_ENGINE_SYNC, 0);
    t[i] = std::byte{NEURON_OP_MATMUL};
    refix(t);
    expect(t, i, "CODE[sync] instruction 0 (matmul): matmul cannot run on the sync engine");
}

static void reserved_fields(void **) {
    auto b = test::sample_bytes();
    uint64_t i = insn(b, NEURON_ENGINE_SYNC, 0); // dma_load
    auto t = b;
    t[i + 26] = std::byte{1};
    refix(t);
    expect(t, i + 25, "reserved DMA fields must be zero");
    t = b;
    t[i + 50] = std::byte{1};
    refix(t);
    expect(t, i + 48, "reserved DMA fields must be zero");
    t = b;
    t[i + 1] = std::byte{1};
    refix(t);
    expect(t, i + 1, "flags must be zero for this opcode");
    // END with an argument.
    auto sync = section_entry(b, CODE, NEURON_ENGINE_SYNC);
    uint64_t last = sec_off(b, sync) + test::rd64(b, sync + 16) - 64;
    t = b;
    test::wr32(t, last + 4, 5);
    refix(t);
    expect(t, last + 4, "(end): arg must be zero");
    // A NONE operand with garbage.
    i = insn(b, NEURON_ENGINE_VECTOR, 1); // memset: operands 1, 2 absent
    t = b;
    t[i + 30] = std::byte{1};
    refix(t);
    expect(t, i + 24, "operand 1 must be zero");
    // Undefined flag bits.
    i = insn(b, NEURON_ENGINE_TENSOR, 1); // matmul
    t = b;
    t[i + 1] = std::byte{0x80};
    refix(t);
    expect(t, i + 1, "undefined flags 0x80");
}

static void operands(void **) {
    auto b = test::sample_bytes();
    uint64_t i = insn(b, NEURON_ENGINE_TENSOR, 1); // matmul
    auto t = b;
    t[i + 8 + 1] = std::byte{9}; // dst dtype
    refix(t);
    expect(t, i + 9, "operand 0: unknown dtype 9");
    t = b;
    t[i + 8 + 3] = std::byte{200};
    refix(t);
    expect(t, i + 10, "partitions 0+200");
    t = b;
    t[i + 8] = std::byte{NEURON_SPACE_SBUF};
    refix(t);
    expect(t, i + 8, "operand 0: space 1 is not allowed here (expected PSUM)");
    t = b;
    test::wr16(t, i + 8 + 8, 0);
    refix(t);
    expect(t, i + 16, "free-axis counts 0x1");
    t = b;
    test::wr32(t, i + 8 + 4, 16380); // PSUM offset near the end of a partition
    refix(t);
    expect(t, i + 12, "exceed the 16384 bytes of a partition");
    t = b;
    test::wr32(t, i + 8 + 4, 2);
    refix(t);
    expect(t, i + 12, "not a multiple of the element size 4");
    // Semaphores, loops.
    i = insn(b, NEURON_ENGINE_TENSOR, 0); // wait
    t = b;
    t[i + 2] = std::byte{16};
    refix(t);
    expect(t, i + 2, "semaphore 16 does not exist");
    i = insn(b, NEURON_ENGINE_SCALAR, 3); // loop
    t = b;
    test::wr32(t, i + 4, 3);
    refix(t);
    expect(t, i + 4, "loop target 3 is not before the loop");
    t = b;
    t[i + 2] = std::byte{8};
    refix(t);
    expect(t, i + 2, "loop counter 8 does not exist");
    i = insn(b, NEURON_ENGINE_SCALAR, 1); // activate
    t = b;
    t[i + 2] = std::byte{NEURON_ACT_COUNT};
    refix(t);
    expect(t, i + 2, "unknown activation function 15");
}

static void bindings(void **) {
    auto b = test::sample_bytes();
    uint64_t load = insn(b, NEURON_ENGINE_SYNC, 0);
    auto t = b;
    t[load + 24] = std::byte{3};
    refix(t);
    expect(t, load + 24, "binding slot 3 does not exist (the program has 3)");
    // Store into the input x (slot 0).
    uint64_t store = insn(b, NEURON_ENGINE_SYNC, 5);
    t = b;
    t[store + 24] = std::byte{0};
    refix(t);
    expect(t, store + 24, "stores to slot 0 ('x', in argument), which the program may not write");
    t = b;
    t[store + 24] = std::byte{2};
    refix(t);
    expect(t, store + 24, "stores to slot 2 (the constants)");
    t = b;
    test::wr32(t, load + 28, 6);
    refix(t);
    expect(t, load + 28, "multiples of the element size 4");
}

static void missing_end(void **) {
    auto b = test::sample_bytes();
    auto sync = section_entry(b, CODE, NEURON_ENGINE_SYNC);
    uint64_t last = sec_off(b, sync) + test::rd64(b, sync + 16) - 64;
    auto t = b;
    t[last] = std::byte{NEURON_OP_NOP};
    refix(t);
    expect(t, last, "the stream's last instruction is nop, not end or loop");
}

static void argument_table(void **) {
    auto b = test::sample_bytes();
    size_t e = section_entry(b, ARGS);
    uint64_t a0 = sec_off(b, e), a1 = a0 + 64, a2 = a0 + 128;
    auto t = b;
    t[a0 + 4] = std::byte{9};
    refix(t);
    expect(t, a0 + 4, "argument 0 'x': unknown dtype 9");
    t = b;
    t[a0 + 5] = std::byte{7};
    refix(t);
    expect(t, a0 + 5, "unknown direction 7");
    t = b;
    t[a0 + 6] = std::byte{7};
    refix(t);
    expect(t, a0 + 6, "rank 7 is outside 1..6");
    t = b;
    test::wr32(t, a1, test::rd32(b, a0));
    refix(t);
    expect(t, a1, "argument 1 'x': duplicate name");
    t = b;
    test::wr32(t, a1, 0);
    refix(t);
    expect(t, a1, "argument 1: empty name");
    t = b;
    test::wr64(t, a0 + 24, 12);
    refix(t);
    expect(t, a0 + 24, "size 12 does not match its shape (8192 elements of 4 bytes)");
    t = b;
    test::wr32(t, a0 + 32 + 4, 0);
    refix(t);
    expect(t, a0 + 36, "dimension 1 is zero");
    t = b;
    test::wr32(t, a0 + 32 + 12, 5);
    refix(t);
    expect(t, a0 + 44, "dimension 3 beyond rank 2 must be zero");
    t = b;
    test::wr32(t, a1 + 8, 0);
    refix(t);
    expect(t, a1 + 8, "slot 0 is already argument 0's");
    t = b;
    test::wr32(t, a1 + 8, 7);
    refix(t);
    expect(t, a1 + 8, "slot 7 is not below num_slots 3");
    t = b;
    test::wr64(t, a0 + 16, 64);
    refix(t);
    expect(t, a0 + 16, "offset must be zero for a non-constant argument");
    t = b;
    test::wr64(t, a2 + 16, 1u << 30);
    refix(t);
    expect(t, a2 + 16, "is not an aligned range of the");
    t = b;
    t[a0 + 7] = std::byte{1};
    refix(t);
    expect(t, a0 + 7, "reserved fields must be zero");
    t = b;
    test::wr32(t, 48, 4);
    refix(t);
    expect(t, 48, "binding slot 3 (of num_slots 4) belongs to no argument");
    t = b;
    test::wr64(t, e + 16, 100);
    refix(t);
    expect(t, e + 16, "ARGS size 100 is not a multiple of 64");
}

static void symbol_table(void **) {
    auto b = test::sample_bytes();
    size_t e = section_entry(b, SYMBOLS);
    uint64_t y = sec_off(b, e);
    auto t = b;
    t[y + 4] = std::byte{9};
    refix(t);
    expect(t, y + 4, "symbol 0 'x_tile': unknown kind 9");
    t = b;
    t[y + 7] = std::byte{0};
    refix(t);
    expect(t, y + 6, "partitions 0+0");
}

// ISA revisions: a program declares the oldest ISA that has all its
// instructions; an instruction of a later revision than the one declared is
// rejected, naming it and both versions.
static void isa_revisions(void **) {
    // The sample uses ISA 1.0 instructions only.
    Program sample = Program::parse(test::sample_bytes());
    assert_int_equal(sample.isa_version(), 1u << 16);
    auto img = sample.device_image();
    assert_int_equal(static_cast<int>(img[6]) | static_cast<int>(img[7]) << 8, 0);
    assert_int_equal(isa_version(), NEURON_ISA_VERSION_MAJOR << 16 | NEURON_ISA_VERSION_MINOR);

    ProgramBuilder b("isa11");
    auto t = b.sbuf("t", DType::fp32, 16);
    auto m = b.sbuf("m", DType::fp32, 16);
    b.scalar().activate(Activation::rsqrt, t.tap(), t.tap(), 1.0f / 16, 1e-5f);
    b.vector()
        .tensor_scalar(m.tap(), t.tap(), AluOp::is_ge, 0.5f)
        .select(t.tap(), m.tap(), t.tap(), -INFINITY)
        .select_keep(t.tap(), m.tap(), m.tap())
        .tensor_tensor(AluOp::is_ne, m.tap(), m.tap(), t.tap());
    auto bytes = b.build();
    assert_int_equal(test::rd32(bytes, 32), 1u << 16 | 1u); // isa_major, isa_minor
    Program p = Program::parse(bytes);
    assert_int_equal(p.isa_version(), 1u << 16 | 1u);
    img = p.device_image();
    assert_int_equal(static_cast<int>(img[6]), 1);
    std::string text = disassemble(p);
    for (const char *want :
         {"ISA 1.1",
          "activate.rsqrt sbuf.fp32[p0+128 @0x0 16] (t) <- sbuf.fp32[p0+128 @0x0 16] "
          "(t) * 0.0625 + 1e-05",
          "tensor_scalar sbuf.fp32[p0+128 @0x40 16] (m) <- sbuf.fp32[p0+128 @0x0 16] (t) is_ge 0.5",
          "select sbuf.fp32[p0+128 @0x0 16] (t) <- sbuf.fp32[p0+128 @0x40 16] (m) ? "
          "sbuf.fp32[p0+128 @0x0 16] (t) : -inf",
          "(m) : keep", "tensor_tensor.is_ne"})
        if (!std::strstr(text.c_str(), want))
            fail_msg("'%s' not in:\n%s", want, text.c_str());
    assert_string_equal(mnemonic(Activation::reciprocal).c_str(), "activate.reciprocal");
    assert_int_equal(isa_minor_of(Activation::reciprocal), 1);
    assert_int_equal(isa_minor_of(Activation::exp), 0);
    assert_string_equal(mnemonic(NEURON_OP_TENSOR_SCALAR, NEURON_ALU_MUL, NEURON_ALU_IS_LT).c_str(),
                        "tensor_scalar.mul.is_lt");

    // The same streams declared as ISA 1.0: each new instruction is refused.
    auto t10 = bytes;
    test::wr16(t10, 34, 0);
    refix(t10);
    expect(t10, insn(t10, NEURON_ENGINE_VECTOR, 0),
           "tensor_scalar.is_ge is an ISA 1.1 instruction, but the program declares ISA 1.0");
    test::wr8(t10, insn(t10, NEURON_ENGINE_VECTOR, 0) + 2, NEURON_ALU_MIN);
    refix(t10);
    expect(t10, insn(t10, NEURON_ENGINE_VECTOR, 1),
           "select is an ISA 1.1 instruction, but the program declares ISA 1.0");
    // Streams are checked in engine order (tensor, vector, scalar, sync):
    // with the vector stream's new instructions made NOPs, the scalar
    // stream's rsqrt is the first.
    for (unsigned i = 1; i <= 3; i++)
        test::wr8(t10, insn(t10, NEURON_ENGINE_VECTOR, i), NEURON_OP_NOP);
    for (unsigned i = 1; i <= 3; i++)
        for (unsigned k = 1; k < 64; k++)
            test::wr8(t10, insn(t10, NEURON_ENGINE_VECTOR, i) + k, 0);
    refix(t10);
    expect(t10, insn(t10, NEURON_ENGINE_SCALAR, 0),
           "activate.rsqrt is an ISA 1.1 instruction, but the program declares ISA 1.0");
    // A declared revision this library does not know.
    auto t12 = bytes;
    test::wr16(t12, 34, NEURON_ISA_VERSION_MINOR + 1);
    refix(t12);
    expect(t12, 32, "ISA version 1.3 is not supported (this library knows 1.2)");

    // SELECT with KEEP takes no fill value.
    auto k = bytes;
    test::wr32(k, insn(k, NEURON_ENGINE_VECTOR, 2) + 56, 0x3f800000);
    refix(k);
    expect(k, insn(k, NEURON_ENGINE_VECTOR, 2) + 56,
           "imm[0] (the false value) must be zero with KEEP");
    // DMA_GATHER: rows of a readable table by the int32 indices in SBUF.
    ProgramBuilder gb("gather");
    auto table = gb.argument("table", DType::fp32, {300, 48}, Direction::in);
    auto out = gb.argument("out", DType::fp32, {100, 48}, Direction::out);
    auto idx = gb.sbuf("idx", DType::int32, 1, 100);
    auto rows = gb.sbuf("rows", DType::fp32, 48, 100);
    gb.sync()
        .dma_load(idx.tap(), table.at(0, 4)) // (any int32 bits)
        .dma_gather(rows.tap(), table.at(0, 48 * 4), idx.offset, 300)
        .dma_store(out.at(0, 48 * 4), rows.tap());
    auto gbytes = gb.build();
    Program gp = Program::parse(gbytes);
    assert_int_equal(gp.isa_version(), 1u << 16 | 1u);
    text = disassemble(gp);
    if (!std::strstr(text.c_str(), "dma_gather sbuf.fp32[p0+100 @0x40 48] (rows) <- slot0 "
                                   "(table)[+0x0 pstride 192 strides 4,0] rows "
                                   "sbuf.int32[@0x0] < 300"))
        fail_msg("no gather in:\n%s", text.c_str());
    const uint64_t g1 = insn(gbytes, NEURON_ENGINE_SYNC, 1);
    auto gt = gbytes;
    test::wr32(gt, g1 + 56, 2);
    refix(gt);
    expect(gt, g1 + 56, "the indices' SBUF offset 0x2 is not a multiple of 4");
    gt = gbytes;
    test::wr8(gt, g1 + 24, 1); // the output: write-only
    refix(gt);
    expect(gt, g1 + 24, "loads from slot 1 ('out', out argument), which the program may not read");
    gt = gbytes;
    test::wr16(gt, 34, 0);
    refix(gt);
    expect(gt, g1, "dma_gather is an ISA 1.1 instruction, but the program declares ISA 1.0");

    // Comparison ops beyond the table are unknown, not ISA 1.1.
    auto u = bytes;
    test::wr8(u, insn(u, NEURON_ENGINE_VECTOR, 3) + 2, NEURON_ALU_COUNT);
    refix(u);
    expect(u, insn(u, NEURON_ENGINE_VECTOR, 3) + 2, "unknown ALU operation 13");
}

// ISA 1.2: ln, erf, sqrt, abs; COPY's TRUNC; integer TENSOR_TENSOR and
// TENSOR_SCALAR; u8 operands. The builder declares 1.2 for them, the
// disassembler names them, and a program declaring 1.1 is refused at each.
static void isa12(void **) {
    ProgramBuilder b("isa12");
    auto x = b.sbuf("x", DType::fp32, 16);
    auto i = b.sbuf("i", DType::int32, 16);
    auto m = b.sbuf("m", DType::u8, 16);
    b.scalar()
        .activate(Activation::ln, x.tap(), x.tap())
        .activate(Activation::erf, x.tap(), x.tap(), 0.5f)
        .copy_trunc(i.tap(), x.tap());
    b.vector()
        .tensor_tensor_int(AluOp::mul, i.tap(), i.tap(), i.tap())
        .tensor_scalar_int(i.tap(), i.tap(), AluOp::add, -7, AluOp::max, 3)
        .tensor_tensor(AluOp::is_lt, m.tap(), x.tap(), x.tap());
    auto bytes = b.build();
    assert_int_equal(test::rd32(bytes, 32), 2u << 16 | 1u); // isa_major, isa_minor
    Program p = Program::parse(bytes);
    std::string text = disassemble(p);
    for (const char *want :
         {"ISA 1.2", "activate.ln sbuf.fp32", "activate.erf", "(x) * 0.5 + 0",
          "copy.trunc sbuf.int32[p0+128 @0x40 16] (i) <- sbuf.fp32[p0+128 @0x0 16] (x)",
          "tensor_tensor.mul.int32", "tensor_scalar.int32 sbuf.int32", "add -7 then max 3",
          "tensor_tensor.is_lt sbuf.u8[p0+128 @0x80 16] (m)"})
        if (!std::strstr(text.c_str(), want))
            fail_msg("'%s' not in:\n%s", want, text.c_str());
    assert_int_equal(isa_minor_of(Activation::sqrt), 2);
    assert_int_equal(isa_minor_of(Activation::abs), 2);
    assert_string_equal(mnemonic(Activation::ln).c_str(), "activate.ln");

    auto t11 = bytes;
    test::wr16(t11, 34, 1);
    refix(t11);
    expect(t11, insn(t11, NEURON_ENGINE_VECTOR, 0),
           "tensor_tensor.mul.int32 is an ISA 1.2 instruction, but the program declares ISA 1.1");
    test::wr8(t11, insn(t11, NEURON_ENGINE_VECTOR, 0) + 1, 0); // a float mul
    refix(t11);
    expect(t11, insn(t11, NEURON_ENGINE_VECTOR, 1),
           "tensor_scalar.add.max.int32 is an ISA 1.2 instruction, but the program declares "
           "ISA 1.1");
    test::wr8(t11, insn(t11, NEURON_ENGINE_VECTOR, 1), NEURON_OP_NOP);
    for (unsigned k = 1; k < 64; k++)
        test::wr8(t11, insn(t11, NEURON_ENGINE_VECTOR, 1) + k, 0);
    refix(t11);
    expect(t11, insn(t11, NEURON_ENGINE_VECTOR, 2),
           "tensor_tensor.is_lt (u8 operand) is an ISA 1.2 instruction, but the program "
           "declares ISA 1.1");
    test::wr8(t11, insn(t11, NEURON_ENGINE_VECTOR, 2), NEURON_OP_NOP);
    for (unsigned k = 1; k < 64; k++)
        test::wr8(t11, insn(t11, NEURON_ENGINE_VECTOR, 2) + k, 0);
    refix(t11);
    expect(t11, insn(t11, NEURON_ENGINE_SCALAR, 0),
           "activate.ln is an ISA 1.2 instruction, but the program declares ISA 1.1");

    // Integer division does not exist; the integer forms take int32 operands.
    try {
        ProgramBuilder d("div");
        auto v = d.sbuf("v", DType::int32, 4);
        d.vector().tensor_tensor_int(AluOp::div, v.tap(), v.tap(), v.tap());
        fail_msg("integer division was built");
    } catch (const Error &e) {
        assert_non_null(std::strstr(e.what(), "there is no integer division"));
    }
}

// ISA 1.2's RANDOM and DMA_SCATTER_ADD: the builder declares 1.2, the
// disassembler names them, the validator checks their operands and the
// table's rights, and a program declaring 1.1 is refused.
static void isa12_random_scatter(void **) {
    ProgramBuilder b("rs");
    auto table = b.argument("table", DType::fp32, {300, 48}, Direction::inout);
    auto seed = b.argument("seed", DType::int32, {4}, Direction::in);
    auto out = b.argument("out", DType::fp32, {100, 48}, Direction::out);
    auto key = b.sbuf("key", DType::int32, 4, 1);
    auto idx = b.sbuf("idx", DType::int32, 1, 100);
    auto rows = b.sbuf("rows", DType::fp32, 48, 100);
    b.sync().dma_load(key.tap(), seed.at(0, 16)).dma_load(idx.tap(), table.at(0, 4));
    b.vector().random(rows.tap(), key.tap(), 7, 48);
    b.sync()
        .dma_scatter_add(table.at(0, 48 * 4), rows.tap(), idx.offset, 300)
        .dma_store(out.at(0, 48 * 4), rows.tap());
    auto bytes = b.build();
    Program p = Program::parse(bytes);
    assert_int_equal(p.isa_version(), 1u << 16 | 2u);
    std::string text = disassemble(p);
    for (const char *want :
         {"random sbuf.fp32[p0+100 @0x80 48] (rows) <- philox(sbuf.int32[p0+1 @0x0 4] (key)) at "
          "7 + 48*p + i",
          "dma_scatter_add slot0 (table)[+0x0 pstride 192 strides 4,0] rows sbuf.int32[@0x40] < "
          "300 += sbuf.fp32[p0+100 @0x80 48] (rows)"})
        if (!std::strstr(text.c_str(), want))
            fail_msg("'%s' not in:\n%s", want, text.c_str());
    const uint64_t r = insn(bytes, NEURON_ENGINE_VECTOR, 0), s = insn(bytes, NEURON_ENGINE_SYNC, 2);
    auto t = bytes;
    test::wr8(t, r + 9, NEURON_DT_BF16);
    refix(t);
    expect(t, r + 9, "random writes fp32 (uniform) or int32 (words), not dtype 2");
    t = bytes;
    test::wr8(t, r + 25, NEURON_DT_FP32);
    refix(t);
    expect(t, r + 25, "random's key is int32, not dtype 1");
    t = bytes;
    test::wr16(t, r + 32, 3);
    refix(t);
    expect(t, r + 24, "random's key is 1 partition of 4 int32 (seed, offset), not 1 of 3");
    t = bytes;
    test::wr8(t, s + 24, 1); // the seed: read-only
    refix(t);
    expect(t, s + 24, "adds into slot 1 ('seed', in argument), which the program may not write");
    assert_false(p.find_argument("out")->accumulated);
    // Into an out argument: accepted, which binds it readable too.
    t = bytes;
    test::wr8(t, s + 24, 2);
    refix(t);
    assert_true(Program::parse(t).find_argument("out")->accumulated);
    assert_false(Program::parse(t).find_argument("table")->accumulated);
    t = bytes;
    test::wr32(t, s + 56, 0x42);
    refix(t);
    expect(t, s + 56, "the indices' SBUF offset 0x42 is not a multiple of 4");
    t = bytes;
    test::wr8(t, s + 9, NEURON_DT_INT32);
    refix(t);
    expect(t, s + 9, "dma_scatter_add adds fp32 or bf16 elements, not dtype 4");
    t = bytes;
    test::wr16(t, 34, 1);
    refix(t);
    expect(t, r, "random is an ISA 1.2 instruction, but the program declares ISA 1.1");
    test::wr8(t, r, NEURON_OP_NOP);
    for (unsigned k = 1; k < 64; k++)
        test::wr8(t, r + k, 0);
    refix(t);
    expect(t, s, "dma_scatter_add is an ISA 1.2 instruction, but the program declares ISA 1.1");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(isa12_random_scatter),
        cmocka_unit_test(accepts_sample),
        cmocka_unit_test(truncation),
        cmocka_unit_test(header),
        cmocka_unit_test(checksums),
        cmocka_unit_test(bad_offsets),
        cmocka_unit_test(overlapping_sections),
        cmocka_unit_test(sections),
        cmocka_unit_test(unknown_opcodes),
        cmocka_unit_test(reserved_fields),
        cmocka_unit_test(operands),
        cmocka_unit_test(bindings),
        cmocka_unit_test(missing_end),
        cmocka_unit_test(argument_table),
        cmocka_unit_test(symbol_table),
        cmocka_unit_test(isa_revisions),
        cmocka_unit_test(isa12),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
