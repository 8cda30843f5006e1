// SPDX-License-Identifier: MIT
// The examples' numerics without a device: the program image that
// libneuron's loader uploads (Program::device_image()) runs through the
// device model's interpreter with the bindings the loader and the driver
// would give it (arguments by slot, the constant data on the constants'
// slot, the image after them), and the output is checked against the
// example's CPU reference and documented tolerance.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <neuron/neuron.hpp>

#include "common/example.hpp"
#include "common/linear_gelu.hpp"
#include "common/transformer_block.hpp"
#include "model_program.hpp"
#include "sync_check.hpp"

// cmocka last: it defines macros that clash with the standard library.
#include <csetjmp>
#include <cstdarg>
#include <cstddef>
extern "C" {
#include <cmocka.h>
}

using namespace neuron;

namespace {

struct ModelRun {
    exm_result result{};
    std::vector<std::byte> output;
    double ms = 0;
};

ModelRun run_on_model(const nex::Case &c) {
    std::map<std::string, std::vector<std::byte>> inputs(c.inputs.begin(), c.inputs.end());
    model::Run r = model::run(c.program, inputs);
    ModelRun m;
    m.result = r.result;
    m.ms = r.ms;
    auto it = r.outputs.find(c.output);
    if (it == r.outputs.end())
        fail_msg("%s: no output '%s'", c.title.c_str(), c.output.c_str());
    m.output = it->second;
    return m;
}

void run_case(const nex::Case &c) {
    size_t pairs = 0;
    std::string race = model::unordered_conflict(c.program, &pairs);
    if (!race.empty())
        fail_msg("%s", race.c_str());
    assert_true(pairs > 0);
    ModelRun m = run_on_model(c);
    if (m.result.status != EXM_STATUS_OK)
        fail_msg("%s: job status 0x%x, info %u, engine %u", c.title.c_str(), m.result.status,
                 m.result.info, m.result.fault_engine);
    nex::ErrorStats s = nex::check(c, m.output);
    print_message("%s\n  %s\n  model: %.0f ms on the host, %llu cycles, %llu instructions, "
                  "%.1f MFLOP; CPU reference %.0f ms\n  %s\n",
                  c.title.c_str(), nex::describe_program(c).c_str(), m.ms,
                  static_cast<unsigned long long>(m.result.cycles),
                  static_cast<unsigned long long>(m.result.instructions),
                  static_cast<double>(m.result.flops) / 1e6, c.reference_ms,
                  nex::describe(s, c.tolerance).c_str());
    // Every matmul ran (the device counts 2 M N K per MATMUL).
    assert_true(m.result.flops >= c.flops);
    if (!s.ok())
        fail_msg("%s: %zu elements beyond the tolerance", c.title.c_str(), s.failures);
}

// The shapes the example programs run, with a few seeds: the tolerance
// holds for other data than the default.
void test_linear_gelu_fp32(void **) {
    for (uint64_t seed = 1; seed <= 3; seed++)
        run_case(nex::linear_gelu_case(DType::fp32, seed));
}

void test_linear_gelu_bf16(void **) {
    for (uint64_t seed = 1; seed <= 3; seed++)
        run_case(nex::linear_gelu_case(DType::bf16, seed));
}

// The compiled program of the same layer, same data, same check; the
// model's cycle counts of both are printed side by side.
void test_linear_gelu_compiled(void **) {
    for (DType dt : {DType::fp32, DType::bf16})
        for (uint64_t seed = 1; seed <= 2; seed++) {
            nex::Case hand = nex::linear_gelu_case(dt, seed),
                      comp = nex::compiled_linear_gelu_case(dt, seed);
            run_case(comp);
            ModelRun h = run_on_model(hand), c = run_on_model(comp);
            print_message("%s: %llu cycles hand-written, %llu compiled (%.2fx)\n", to_string(dt),
                          static_cast<unsigned long long>(h.result.cycles),
                          static_cast<unsigned long long>(c.result.cycles),
                          static_cast<double>(c.result.cycles) /
                              static_cast<double>(h.result.cycles));
        }
    // Partial token tiles and more output blocks than PSUM banks.
    run_case(nex::compiled_linear_gelu_case(DType::fp32, 7, {100, 256, 1280}));
}

void test_transformer_block_fp32(void **) {
    for (uint64_t seed = 1; seed <= 3; seed++)
        run_case(nex::transformer_block_case(seed));
}

// Other shapes exercise the general paths (partial token counts, more than
// eight PSUM banks' worth of output blocks, several heads per partition
// group) at a fraction of the cost.
void test_linear_gelu_shapes(void **) {
    run_case(nex::linear_gelu_case(DType::fp32, 7, {100, 256, 1280}));
    run_case(nex::linear_gelu_case(DType::bf16, 8, {1, 128, 128}));
}

void test_transformer_block_shapes(void **) {
    run_case(nex::transformer_block_case(3, {64, 128, 4, 256}));
    run_case(nex::transformer_block_case(4, {128, 384, 3, 512}));
}

// A result that is off by more than the tolerance is reported as such.
void test_check_detects_errors(void **) {
    nex::Case c = nex::linear_gelu_case(DType::fp32, 5, {16, 128, 128});
    ModelRun m = run_on_model(c);
    assert_int_equal(m.result.status, EXM_STATUS_OK);
    assert_true(nex::check(c, m.output).ok());
    auto y = nex::unpack(DType::fp32, m.output);
    y[77] += 1e-3f;
    auto s = nex::compare(y, c.reference, c.tolerance);
    assert_int_equal(s.failures, 1);
    assert_int_equal(s.worst_index, 77);
}

// The synchronisation check passes a program whose semaphores Kernel
// derived and catches the same work without them.
void test_sync_check(void **) {
    ProgramBuilder b("sync");
    auto x = b.argument("x", DType::fp32, {128, 8}, Direction::in);
    auto y = b.argument("y", DType::fp32, {128, 8}, Direction::out);
    Tile a = b.sbuf("a", DType::fp32, 8), c = b.sbuf("c", DType::fp32, 8);
    Kernel k(b);
    k.dma_load(a.tap(), x.at(0, 32));
    k.activate(Activation::identity, c.tap(), a.tap());
    k.dma_store(y.at(0, 32), c.tap());
    k.finish();
    size_t pairs = 0;
    assert_string_equal(model::unordered_conflict(b.finish(), &pairs).c_str(), "");
    assert_int_equal(pairs, 2);

    ProgramBuilder r("race");
    auto rx = r.argument("x", DType::fp32, {128, 8}, Direction::in);
    auto ry = r.argument("y", DType::fp32, {128, 8}, Direction::out);
    Tile ra = r.sbuf("a", DType::fp32, 8), rc = r.sbuf("c", DType::fp32, 8);
    r.sync().dma_load(ra.tap(), rx.at(0, 32)).dma_store(ry.at(0, 32), rc.tap());
    r.scalar().activate(Activation::identity, rc.tap(), ra.tap());
    std::string race = model::unordered_conflict(r.finish());
    assert_true(race.find("scalar instruction 0") != std::string::npos);
}

} // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(test_sync_check),
        cmocka_unit_test(test_check_detects_errors),
        cmocka_unit_test(test_linear_gelu_fp32),
        cmocka_unit_test(test_linear_gelu_bf16),
        cmocka_unit_test(test_linear_gelu_shapes),
        cmocka_unit_test(test_linear_gelu_compiled),
        cmocka_unit_test(test_transformer_block_fp32),
        cmocka_unit_test(test_transformer_block_shapes),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
