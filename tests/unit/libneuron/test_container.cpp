// SPDX-License-Identifier: MIT
// Container round trip: builder -> bytes -> Program -> device image, save/load,
// disassembly, and the builder's own checks.
#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include "neuron_isa.h"
#include "testutil.hpp"

using namespace neuron;

static void round_trip(void **) {
    auto bytes = test::sample_bytes();
    assert_false(validate(bytes).has_value());
    Program p = Program::parse(bytes);
    assert_string_equal(p.name().c_str(), "sample");
    assert_int_equal(p.version_major(), 1);
    assert_int_equal(p.insn_limit(), 100000);
    assert_int_equal(p.num_slots(), 3);
    assert_true(p.const_slot().has_value());
    assert_int_equal(*p.const_slot(), 2);
    assert_int_equal(p.arguments().size(), 4);
    const ArgumentInfo *x = p.find_argument("x");
    assert_non_null(x);
    assert_int_equal(x->slot, 0);
    assert_int_equal(static_cast<int>(x->direction), static_cast<int>(Direction::in));
    assert_int_equal(x->shape.size(), 2);
    assert_int_equal(x->shape[0], 128);
    assert_int_equal(x->shape[1], 64);
    assert_int_equal(x->size, 128 * 64 * 4);
    const ArgumentInfo *bias = p.find_argument("bias");
    assert_non_null(bias);
    assert_int_equal(static_cast<int>(bias->direction), static_cast<int>(Direction::constant));
    assert_int_equal(bias->offset % 64, 0);
    // The constants come back bit for bit.
    float b5;
    std::memcpy(&b5, p.constants().data() + bias->offset + 5 * 4, 4);
    assert_true(b5 == 5 * 0.001f);
    assert_int_equal(p.symbols().size(), 8);
    assert_null(p.find_argument("nope"));
    assert_int_equal(p.stream(Engine::sync).size(), 7 * 64); // + END
    assert_int_equal(p.stream(Engine::tensor).size(), 4 * 64);

    // Deterministic output.
    assert_true(test::sample_bytes() == bytes);
    assert_true(std::equal(p.bytes().begin(), p.bytes().end(), bytes.begin(), bytes.end()));
}

static void device_image(void **) {
    Program p = Program::parse(test::sample_bytes());
    auto img = p.device_image();
    const auto *h = reinterpret_cast<const neuron_prog_header *>(img.data());
    assert_int_equal(h->magic, NEURON_PROG_MAGIC);
    assert_int_equal(h->version_major, NEURON_ISA_VERSION_MAJOR);
    assert_int_equal(h->header_size, sizeof(neuron_prog_header));
    assert_int_equal(h->image_size, img.size());
    assert_int_equal(h->insn_limit, 100000);
    assert_int_equal(h->flags, 0);
    for (unsigned e = 1; e <= 4; e++) {
        auto s = p.stream(static_cast<Engine>(e));
        const auto &st = h->stream[NEURON_ENGINE_INDEX(e)];
        assert_int_equal(st.count * 64, s.size());
        assert_int_equal(st.offset % 64, 0);
        assert_true(st.offset >= sizeof(neuron_prog_header));
        assert_memory_equal(img.data() + st.offset, s.data(), s.size());
    }
    const auto *first = reinterpret_cast<const neuron_insn *>(img.data() + h->stream[3].offset);
    assert_int_equal(first->opcode, NEURON_OP_DMA_LOAD);
    assert_int_equal(first->dma.dram.slot, 0);
    assert_int_equal(first->dma.dram.part_stride, 256);
}

static void save_and_load(void **) {
    Program p = Program::parse(test::sample_bytes());
    auto path = std::filesystem::temp_directory_path() /
                ("neuron-test-" + std::to_string(getpid()) + ".nprog");
    p.save(path);
    Program q = Program::load_file(path);
    std::filesystem::remove(path);
    assert_true(std::equal(p.bytes().begin(), p.bytes().end(), q.bytes().begin(), q.bytes().end()));
    try {
        Program::load_file(path);
        fail_msg("loading a missing file succeeded");
    } catch (const Error &e) {
        assert_non_null(std::strstr(e.what(), path.c_str()));
    }
}

static void disassembly(void **) {
    Program p = Program::parse(test::sample_bytes());
    std::string s = disassemble(p);
    for (const char *want :
         {"program \"sample\"", "slot 0  in    fp32[128,64] x", "slot 2  const fp32[128] bias",
          "stream tensor (4 instructions)",
          "matmul psum.fp32[p0+128 @0x0 64] (acc) = "
          "sbuf.fp32[p0+128 @0x100 128] (w_tile)^T",
          "dma_load sbuf.fp32[p0+128 @0x0 64] (x_tile) <- slot0 (x)[+0x0 pstride 256 strides 4,0]",
          "wait sem0 (loaded) >= 1, decrement", "activate.gelu", "loop ctr1 -> 2 x3",
          "tensor_scalar", "reduce.sum", "notify 7", "constants:"}) {
        if (!std::strstr(s.c_str(), want))
            fail_msg("'%s' not in:\n%s", want, s.c_str());
    }
}

static void expect_builder_error(const std::function<void()> &f, const char *substr) {
    try {
        f();
        fail_msg("no error; expected '%s'", substr);
    } catch (const Error &e) {
        assert_true(e.code() == errc::invalid_argument);
        if (!std::strstr(e.what(), substr))
            fail_msg("'%s' not in '%s'", substr, e.what());
    }
}

static void builder_checks(void **) {
    ProgramBuilder b("checks");
    b.argument("a", DType::fp32, {4}, Direction::in);
    expect_builder_error([&] { b.argument("a", DType::fp32, {4}, Direction::out); },
                         "argument 'a' is declared twice");
    expect_builder_error([&] { b.argument("z", DType::fp32, {}, Direction::out); }, "rank 0");
    expect_builder_error([&] { b.sbuf("huge", DType::fp32, 1u << 20); }, "does not fit");
    auto t = b.sbuf("t", DType::fp32, 16);
    expect_builder_error([&] { t.view(10, 8); }, "does not fit a tile of 16");
    expect_builder_error([&] { b.vector().loop(Label{0}, 2); }, "loop target 0");
    expect_builder_error([&] { b.sync().matmul(t.tap(), t.tap(), t.tap()); }, "PSUM");
    std::vector<float> two(2);
    expect_builder_error([&] { b.constant("c", {3}, std::span<const float>(two)); },
                         "8 bytes of data");
    for (int i = 0; i < 16; i++)
        b.semaphore("s" + std::to_string(i));
    expect_builder_error([&] { b.semaphore("s16"); }, "all 16 semaphores");
    // A matmul on the wrong engine is caught when the container is built.
    ProgramBuilder bad("bad");
    auto ps = bad.psum("p", DType::fp32, 4);
    auto sb = bad.sbuf("s", DType::fp32, 4);
    std::array<std::byte, 64> raw{};
    raw[0] = std::byte{NEURON_OP_MATMUL};
    bad.vector().raw(raw);
    (void)ps;
    (void)sb;
    expect_builder_error([&] { bad.build(); }, "matmul cannot run on the vector engine");
    // An empty program has no code.
    ProgramBuilder empty("empty");
    expect_builder_error([&] { empty.build(); }, "no CODE section");
}

static void end_appended(void **) {
    ProgramBuilder b("tiny");
    b.vector().nop();
    Program p = b.finish();
    auto s = p.stream(Engine::vector);
    assert_int_equal(s.size(), 128);
    assert_int_equal(static_cast<int>(s[64]), NEURON_OP_END);
    assert_int_equal(p.num_slots(), 0);
    assert_false(p.const_slot().has_value());

    // A counted LOOP falls through when done: END follows it; an infinite
    // one never does.
    ProgramBuilder loops("loops");
    const Label top = loops.tensor().here();
    loops.tensor().nop().loop(top, 3);
    const Label forever = loops.vector().here();
    loops.vector().nop().loop(forever, 0);
    Program lp = loops.finish();
    assert_int_equal(lp.stream(Engine::tensor).size(), 3 * 64);
    assert_int_equal(static_cast<int>(lp.stream(Engine::tensor)[128]), NEURON_OP_END);
    assert_int_equal(lp.stream(Engine::vector).size(), 2 * 64);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),     cmocka_unit_test(device_image),
        cmocka_unit_test(save_and_load),  cmocka_unit_test(disassembly),
        cmocka_unit_test(builder_checks), cmocka_unit_test(end_appended),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
