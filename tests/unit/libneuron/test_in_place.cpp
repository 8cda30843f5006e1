// SPDX-License-Identifier: MIT
// in_place_slots(): which outputs a program may write into an input's
// memory, from the order of its Sync stream's reads and writes.
#include <algorithm>

#include "testutil.hpp"

using namespace neuron;

namespace {

using Pairs = std::vector<std::pair<uint32_t, uint32_t>>;

bool has(const Pairs &pairs, const ArgRef &out, const ArgRef &in) {
    return std::find(pairs.begin(), pairs.end(), std::make_pair(out.slot, in.slot)) != pairs.end();
}

constexpr uint32_t rows = 512, cols = 8, pitch = cols * 4, tiles = rows / 128;

// y = relu(x) tile by tile: tile t of x is read before tile t of y is
// written and never after; w, read whole before any write, is safe too.
void tiled(void **) {
    ProgramBuilder b("tiled");
    auto x = b.argument("x", DType::fp32, {rows, cols}, Direction::in);
    auto w = b.argument("w", DType::fp32, {128, cols}, Direction::in);
    auto y = b.argument("y", DType::fp32, {rows, cols}, Direction::out);
    Tile a = b.sbuf("a", DType::fp32, cols), c = b.sbuf("c", DType::fp32, cols);
    Tile d = b.sbuf("d", DType::fp32, cols);
    Kernel k(b);
    k.dma_load(d.tap(), w.at(0, pitch));
    for (uint32_t t = 0; t < tiles; t++) {
        k.dma_load(a.tap(), x.at(uint64_t{t} * 128 * pitch, pitch));
        k.tensor_tensor(AluOp::add, c.tap(), a.tap(), d.tap());
        k.dma_store(y.at(uint64_t{t} * 128 * pitch, pitch), c.tap());
    }
    k.finish();
    Pairs pairs = in_place_slots(b.finish());
    assert_true(has(pairs, y, x));
    assert_true(has(pairs, y, w));
    assert_int_equal(pairs.size(), 2);
}

// Two passes over x: the second reads tile 0 after tile 0 of y was
// written, so y must not be x's memory; z, written only after the last
// read of x, may.
void second_pass(void **) {
    ProgramBuilder b("passes");
    auto x = b.argument("x", DType::fp32, {rows, cols}, Direction::in);
    auto y = b.argument("y", DType::fp32, {rows, cols}, Direction::out);
    auto z = b.argument("z", DType::fp32, {rows, cols}, Direction::out);
    Tile a = b.sbuf("a", DType::fp32, cols), c = b.sbuf("c", DType::fp32, cols);
    Kernel k(b);
    for (uint32_t pass = 0; pass < 2; pass++)
        for (uint32_t t = 0; t < tiles; t++) {
            k.dma_load(a.tap(), x.at(uint64_t{t} * 128 * pitch, pitch));
            k.activate(Activation::relu, c.tap(), a.tap());
            k.dma_store((pass ? z : y).at(uint64_t{t} * 128 * pitch, pitch), c.tap());
        }
    k.finish();
    Pairs pairs = in_place_slots(b.finish());
    assert_false(has(pairs, y, x));
    assert_true(has(pairs, z, x));
}

// A read that only touches bytes after the written ones is no conflict;
// one byte of overlap is.
void adjacent_and_overlapping(void **) {
    for (uint32_t shift : {0u, 4u}) {
        ProgramBuilder b("edges");
        auto x = b.argument("x", DType::fp32, {rows, cols}, Direction::in);
        auto y = b.argument("y", DType::fp32, {rows, cols}, Direction::out);
        Tile a = b.sbuf("a", DType::fp32, cols);
        Kernel k(b);
        k.dma_load(a.tap(), x.at(0, pitch));
        k.dma_store(y.at(0, pitch), a.tap());
        // The next 128 rows, or from the last element of the first 128 on.
        k.dma_load(a.tap(), x.at(128 * pitch - shift, pitch));
        k.finish();
        assert_int_equal(has(in_place_slots(b.finish()), y, x), shift == 0);
    }
}

// Rows by index may be any rows: a gather of x after a write of y
// conflicts wherever the write was.
void gather_after_write(void **) {
    ProgramBuilder b("gather");
    auto x = b.argument("x", DType::fp32, {rows, cols}, Direction::in);
    auto y = b.argument("y", DType::fp32, {rows, cols}, Direction::out);
    Tile idx = b.sbuf("idx", DType::int32, 1), a = b.sbuf("a", DType::fp32, cols);
    Kernel k(b);
    k.iota(idx.tap(), 0, 1, 0);
    k.dma_load(a.tap(), x.at(128 * pitch, pitch));
    k.dma_store(y.at(3 * 128 * pitch, pitch), a.tap());
    k.dma_gather(a.tap(), x.at(0, pitch), idx.tap(), 128);
    k.finish();
    assert_false(has(in_place_slots(b.finish()), y, x));
}

// A loop runs its DMAs again, after writes the walk saw later: no pair.
void loop_allows_none(void **) {
    ProgramBuilder b("loop");
    auto x = b.argument("x", DType::fp32, {128, cols}, Direction::in);
    auto y = b.argument("y", DType::fp32, {128, cols}, Direction::out);
    Tile a = b.sbuf("a", DType::fp32, cols);
    StreamBuilder &s = b.sync();
    Label top = s.here();
    s.dma_load(a.tap(), x.at(0, pitch));
    s.dma_store(y.at(0, pitch), a.tap());
    s.loop(top, 2);
    assert_true(in_place_slots(b.finish()).empty());
}

} // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(tiled),
        cmocka_unit_test(second_pass),
        cmocka_unit_test(adjacent_and_overlapping),
        cmocka_unit_test(gather_after_write),
        cmocka_unit_test(loop_allows_none),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
