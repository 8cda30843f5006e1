// SPDX-License-Identifier: MIT
// Kernel: the waits and signals it derives between the engine streams from
// the SBUF/PSUM bytes each instruction reads and writes.
#include <stdexcept>

#include "neuron_isa.h"
#include "testutil.hpp"

using namespace neuron;

namespace {

struct Insn {
    uint8_t opcode, func;
    uint32_t arg;
};

std::vector<Insn> stream(const Program &p, Engine e) {
    std::vector<Insn> v;
    auto code = p.stream(e);
    for (size_t i = 0; i + 64 <= code.size(); i += 64) {
        Insn in{};
        in.opcode = static_cast<uint8_t>(code[i]);
        in.func = static_cast<uint8_t>(code[i + 2]);
        std::memcpy(&in.arg, &code[i + 4], 4);
        v.push_back(in);
    }
    return v;
}

void expect(const std::vector<Insn> &got, const std::vector<uint8_t> &want, const char *what) {
    std::string g, w;
    for (const auto &i : got)
        g += std::to_string(i.opcode) + " ";
    for (auto o : want)
        w += std::to_string(o) + " ";
    if (g != w)
        fail_msg("%s: opcodes %s, want %s", what, g.c_str(), w.c_str());
}

std::string semaphore_name(const Program &p, uint32_t id) {
    for (const auto &s : p.symbols())
        if (s.kind == format::symbol_semaphore && s.offset == id)
            return s.name;
    return "?";
}

constexpr uint8_t END = NEURON_OP_END, SIG = NEURON_OP_SEM_SIGNAL, WAIT = NEURON_OP_SEM_WAIT,
                  LOAD = NEURON_OP_DMA_LOAD, STORE = NEURON_OP_DMA_STORE, ACT = NEURON_OP_ACTIVATE,
                  TS = NEURON_OP_TENSOR_SCALAR, MM = NEURON_OP_MATMUL, MEMSET = NEURON_OP_MEMSET;

// Read after write across engines; an untouched range needs no wait.
void raw_and_disjoint(void **) {
    ProgramBuilder b("raw");
    auto x = b.argument("x", DType::fp32, {128, 8}, Direction::in);
    Tile a = b.sbuf("a", DType::fp32, 8), c = b.sbuf("c", DType::fp32, 8);
    Kernel k(b);
    k.dma_load(a.view(0, 4), x.at(0, 32));                        // sync 0
    k.activate(Activation::relu, c.view(4, 4), a.view(4, 4));     // a[4..8): no wait
    k.activate(Activation::identity, c.view(0, 4), a.view(0, 4)); // waits sync 0
    k.finish();
    Program p = b.finish();
    expect(stream(p, Engine::sync), {LOAD, SIG, END}, "sync");
    auto sc = stream(p, Engine::scalar);
    expect(sc, {ACT, WAIT, ACT, END}, "scalar");
    assert_int_equal(sc[1].arg, 1);
    assert_string_equal(semaphore_name(p, sc[1].func).c_str(), "sync_done");
    assert_int_equal(k.stats().insns[2], 2);
    assert_int_equal(k.stats().waits[2], 1);
    assert_int_equal(k.stats().signals[3], 1);
}

// Partitions are part of the range: the same bytes of other partitions do
// not conflict.
void partitions_disjoint(void **) {
    ProgramBuilder b("parts");
    auto x = b.argument("x", DType::fp32, {128, 8}, Direction::in);
    Tile a = b.sbuf("a", DType::fp32, 8), c = b.sbuf("c", DType::fp32, 8);
    Kernel k(b);
    k.dma_load(a.partitions(0, 64).tap(), x.at(0, 32));
    k.activate(Activation::relu, c.partitions(64, 64).tap(), a.partitions(64, 64).tap());
    k.finish();
    expect(stream(b.finish(), Engine::scalar), {ACT, END}, "scalar");
}

// Write after read and write after write: a PSUM bank is rewritten only
// after its reader ran; a second writer of the same bytes waits too.
void war_and_waw(void **) {
    ProgramBuilder b("war");
    Tile s = b.sbuf("s", DType::fp32, 128), y = b.sbuf("y", DType::fp32, 128);
    Tile acc = b.psum("acc", DType::fp32, 128);
    Kernel k(b);
    k.memset(Engine::vector, s.tap(), 1.0f);              // vector 0
    k.matmul(acc.tap(), s.tap(), s.tap(), false);         // tensor 0: RAW on vector 0
    k.activate(Activation::identity, y.tap(), acc.tap()); // scalar 0: RAW on tensor 0
    k.matmul(acc.tap(), s.tap(), s.tap(), false);         // tensor 1: WAR on scalar 0
    k.memset(Engine::vector, y.tap(), 2.0f);              // vector 1: WAW on scalar 0
    k.finish();
    Program p = b.finish();
    auto t = stream(p, Engine::tensor), v = stream(p, Engine::vector);
    expect(t, {WAIT, MM, SIG, WAIT, MM, END}, "tensor");
    assert_string_equal(semaphore_name(p, t[3].func).c_str(), "scalar_done");
    expect(v, {MEMSET, SIG, WAIT, MEMSET, END}, "vector");
    assert_string_equal(semaphore_name(p, v[2].func).c_str(), "scalar_done");
    assert_int_equal(v[2].arg, 1);
}

// A wait implied through a third engine is dropped: scalar waits for
// tensor, which waited for sync; scalar then reads sync's data without a
// wait of its own.
void implied_waits(void **) {
    ProgramBuilder b("implied");
    auto x = b.argument("x", DType::fp32, {128, 128}, Direction::in);
    Tile s = b.sbuf("s", DType::fp32, 128), y = b.sbuf("y", DType::fp32, 128);
    Tile acc = b.psum("acc", DType::fp32, 128);
    Kernel k(b);
    k.dma_load(s.tap(), x.at(0, 512));
    k.matmul(acc.tap(), s.tap(), s.tap(), false);
    k.activate(Activation::identity, y.tap(), acc.tap());
    k.tensor_scalar(Engine::scalar, y.tap(), s.tap(), AluOp::mul, 2.0f);
    k.finish();
    Program p = b.finish();
    expect(stream(p, Engine::scalar), {WAIT, ACT, TS, END}, "scalar");
}

// Waits use the running signal count: the second signal of an engine is
// waited for with value 2.
void counts(void **) {
    ProgramBuilder b("counts");
    auto x = b.argument("x", DType::fp32, {128, 8}, Direction::in);
    Tile a = b.sbuf("a", DType::fp32, 8), c = b.sbuf("c", DType::fp32, 8);
    Kernel k(b);
    k.dma_load(a.view(0, 4), x.at(0, 32));
    k.dma_load(a.view(4, 4), x.at(16, 32));
    k.activate(Activation::identity, c.view(0, 4), a.view(0, 4));
    k.activate(Activation::identity, c.view(4, 4), a.view(4, 4));
    k.finish();
    auto sc = stream(b.finish(), Engine::scalar);
    expect(sc, {WAIT, ACT, WAIT, ACT, END}, "scalar");
    assert_int_equal(sc[0].arg, 1);
    assert_int_equal(sc[2].arg, 2);
}

void misuse(void **) {
    ProgramBuilder b("misuse");
    Tile a = b.sbuf("a", DType::fp32, 8);
    Kernel k(b);
    k.memset(Engine::vector, a.tap(), 0.0f);
    k.finish();
    bool threw = false;
    try {
        k.finish();
    } catch (const std::logic_error &) {
        threw = true;
    }
    assert_true(threw);
    threw = false;
    try {
        k.memset(Engine::vector, a.tap(), 1.0f);
    } catch (const std::logic_error &) {
        threw = true;
    }
    assert_true(threw);
}

// DMA_GATHER reads its indices from SBUF: a gather after the IOTA that
// writes them waits for it; indices not one int32 per destination
// partition are refused.
void gather_waits(void **) {
    ProgramBuilder b("gather");
    auto t = b.argument("t", DType::fp32, {300, 8}, Direction::in);
    Tile idx = b.sbuf("idx", DType::int32, 1), rows = b.sbuf("rows", DType::fp32, 8);
    Kernel k(b);
    k.iota(idx.tap(), 0, 2, 0); // idx[p] = 2p
    k.dma_gather(rows.tap(), t.at(0, 32), idx.tap(), 300);
    bool threw = false;
    try {
        k.dma_gather(rows.tap(), t.at(0, 32), idx.partitions(0, 64).tap(), 300);
    } catch (const Error &e) {
        threw = e.code() == errc::invalid_argument;
    }
    assert_true(threw);
    k.finish();
    Program p = b.finish();
    expect(stream(p, Engine::vector), {NEURON_OP_IOTA, SIG, END}, "vector");
    expect(stream(p, Engine::sync), {WAIT, NEURON_OP_DMA_GATHER, END}, "sync");
}

} // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(raw_and_disjoint), cmocka_unit_test(partitions_disjoint),
        cmocka_unit_test(war_and_waw),      cmocka_unit_test(implied_waits),
        cmocka_unit_test(counts),           cmocka_unit_test(misuse),
        cmocka_unit_test(gather_waits),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
