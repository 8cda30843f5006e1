// SPDX-License-Identifier: MIT
// The examples' numerics on the simulator device (libneuron-sim.so): each
// example's program runs through libneuron as the example programs run it
// on neuron.ko (load, upload, submit, wait, read back), in-process on the
// device model, and the output is checked against the example's CPU
// reference and documented tolerance.
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
#include "common/run.hpp"
#include "common/transformer_block.hpp"
#include "device_state.hpp"
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

// One core is enough for one job at a time; the examples need the default
// SBUF and 256 MiB of device memory.
constexpr const char *sim_device = "sim:cores=1";

// One job of the case on the simulator, through the path the example
// programs take on a device (nex::run_on_device), with the core's counters
// before and after.
struct ModelRun {
    std::vector<std::byte> output;
    double ms = 0;
    uint64_t instructions = 0;
    uint64_t flops = 0;
};

uint64_t counter(const Device &d, const std::string &name) {
    return std::strtoull(d.state()->os->read_line(name).c_str(), nullptr, 10);
}

ModelRun run_on_model(const nex::Case &c) {
    const Device dev = Device::open(sim_device);
    uint64_t instructions = counter(dev, "core0/instructions"), flops = counter(dev, "core0/flops");
    nex::DeviceRunOptions o;
    o.device = sim_device;
    nex::DeviceRun r = nex::run_on_device(c, o);
    ModelRun m;
    m.output = std::move(r.output);
    m.ms = r.job_ms.at(0);
    m.instructions = counter(dev, "core0/instructions") - instructions;
    m.flops = counter(dev, "core0/flops") - flops;
    return m;
}

void run_case(const nex::Case &c) {
    size_t pairs = 0;
    std::string race = model::unordered_conflict(c.program, &pairs);
    if (!race.empty())
        fail_msg("%s", race.c_str());
    assert_true(pairs > 0);
    ModelRun m = run_on_model(c); // a failed job throws its neuron::Error
    nex::ErrorStats s = nex::check(c, m.output);
    print_message("%s\n  %s\n  simulator: %.0f ms on the host, %llu instructions, %.1f MFLOP; "
                  "CPU reference %.0f ms\n  %s\n",
                  c.title.c_str(), nex::describe_program(c).c_str(), m.ms,
                  static_cast<unsigned long long>(m.instructions),
                  static_cast<double>(m.flops) / 1e6, c.reference_ms,
                  nex::describe(s, c.tolerance).c_str());
    // Every matmul ran (the device counts 2 M N K per MATMUL).
    assert_true(m.flops >= c.flops);
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

// The model's cycles for one job of the case (the simulator runs the same
// model; its job record is not exposed through libneuron).
uint64_t model_cycles(const nex::Case &c) {
    std::map<std::string, std::vector<std::byte>> inputs(c.inputs.begin(), c.inputs.end());
    model::Run r = model::run(c.program, inputs);
    if (r.result.status != EXM_STATUS_OK)
        fail_msg("%s: job status 0x%x on the model", c.title.c_str(), r.result.status);
    return r.result.cycles;
}

// The compiled program of the same layer, same data, same check; the
// model's cycle counts of both are printed side by side.
void test_linear_gelu_compiled(void **) {
    for (DType dt : {DType::fp32, DType::bf16})
        for (uint64_t seed = 1; seed <= 2; seed++) {
            nex::Case hand = nex::linear_gelu_case(dt, seed),
                      comp = nex::compiled_linear_gelu_case(dt, seed);
            run_case(comp);
            uint64_t h = model_cycles(hand), c = model_cycles(comp);
            print_message("%s: %llu cycles hand-written, %llu compiled (%.2fx)\n", to_string(dt),
                          static_cast<unsigned long long>(h), static_cast<unsigned long long>(c),
                          static_cast<double>(c) / static_cast<double>(h));
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
