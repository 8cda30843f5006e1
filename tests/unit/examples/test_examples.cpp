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
#include <string>
#include <vector>

#include <neuron/neuron.hpp>

#include "common/example.hpp"
#include "common/linear_gelu.hpp"
#include "common/run.hpp"
#include "common/transformer_block.hpp"
#include "device_state.hpp"

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

constexpr uint8_t op_end = 0x01, op_signal = 0x04, op_wait = 0x05, op_load = 0x10, op_store = 0x11,
                  op_act = 0x30, op_tt = 0x31;

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

// An independent check of the streams' synchronisation, from the program
// alone: every pair of instructions on different engines that touch the
// same SBUF/PSUM bytes (at least one writing) must be ordered by semaphore
// waits. The model runs the streams in one fixed interleaving, so a
// missing wait could go unnoticed by the numerics; this cannot.
struct Touch {
    uint8_t space;
    uint32_t p0, p1;
    uint64_t b0, b1;
    bool write;
};

Touch touch(const std::byte *tap, bool write) {
    uint8_t space = static_cast<uint8_t>(tap[0]), dt = static_cast<uint8_t>(tap[1]);
    uint32_t ps = static_cast<uint8_t>(tap[2]), pc = static_cast<uint8_t>(tap[3]), off;
    uint16_t c[2], st[2];
    std::memcpy(&off, tap + 4, 4);
    std::memcpy(c, tap + 8, 4);
    std::memcpy(st, tap + 12, 4);
    uint64_t es = dtype_size(static_cast<DType>(dt));
    uint64_t last = uint64_t{c[1] - 1u} * st[1] + uint64_t{c[0] - 1u} * st[0];
    return Touch{space, ps, ps + pc, off, off + (last + 1) * es, write};
}

// Returns "" when every conflict is ordered, else the first unordered pair.
std::string unordered_conflict(const Program &p) {
    struct Ins {
        uint8_t opcode, func;
        uint32_t arg;
        std::vector<Touch> touches;
        std::array<int64_t, 4> clock{-1, -1, -1, -1}; // instructions known done, per engine
    };
    std::array<std::vector<Ins>, 4> st;
    for (unsigned e = 0; e < 4; e++) {
        auto code = p.stream(static_cast<Engine>(e + 1));
        for (size_t i = 0; i + 64 <= code.size(); i += 64) {
            const std::byte *b = &code[i];
            Ins in;
            in.opcode = static_cast<uint8_t>(b[0]);
            in.func = static_cast<uint8_t>(b[2]);
            std::memcpy(&in.arg, b + 4, 4);
            auto has = [&](int k) { return b[8 + 16 * k] != std::byte{0}; };
            switch (in.opcode) {
            case op_load:
                in.touches.push_back(touch(b + 8, true));
                break;
            case op_store:
                in.touches.push_back(touch(b + 8, false));
                break;
            case 0x20: // MATMUL (accumulating also reads op[0]: a write covers it)
            case 0x21:
            case 0x30:
            case 0x31:
            case 0x32:
            case 0x33:
            case 0x34:
            case 0x35:
                in.touches.push_back(touch(b + 8, true));
                for (int k = 1; k < 3; k++)
                    if (has(k))
                        in.touches.push_back(touch(b + 8 + 16 * k, false));
                break;
            default:
                break;
            }
            st[e].push_back(std::move(in));
        }
    }
    // Who signals each semaphore, and where its n-th signal is.
    std::array<std::vector<std::pair<unsigned, size_t>>, 16> signals;
    for (unsigned e = 0; e < 4; e++)
        for (size_t i = 0; i < st[e].size(); i++)
            if (st[e][i].opcode == op_signal) {
                assert_int_equal(st[e][i].arg, 1);
                signals[st[e][i].func].emplace_back(e, i);
            }
    for (const auto &v : signals)
        for (const auto &sg : v)
            assert_int_equal(sg.first, v.front().first); // one signaller per semaphore
    // Run the streams abstractly: a wait passes once its signal has run.
    std::array<size_t, 4> pc{};
    std::array<std::array<int64_t, 4>, 4> known{};
    for (auto &k : known)
        k.fill(-1);
    for (bool progress = true; progress;) {
        progress = false;
        for (unsigned e = 0; e < 4; e++) {
            while (pc[e] < st[e].size()) {
                Ins &in = st[e][pc[e]];
                if (in.opcode == op_wait) {
                    auto &v = signals[in.func];
                    assert_true(in.arg >= 1 && in.arg <= v.size());
                    auto [f, j] = v[in.arg - 1];
                    if (pc[f] <= j)
                        break; // not signalled yet
                    for (unsigned g = 0; g < 4; g++)
                        known[e][g] = std::max(known[e][g], st[f][j].clock[g]);
                }
                known[e][e] = static_cast<int64_t>(pc[e]);
                in.clock = known[e];
                pc[e]++;
                progress = true;
            }
        }
    }
    for (unsigned e = 0; e < 4; e++)
        assert_int_equal(pc[e], st[e].size()); // no deadlock
    // Every conflicting pair across engines is ordered.
    size_t pairs = 0;
    for (unsigned e = 0; e < 4; e++)
        for (unsigned f = e + 1; f < 4; f++)
            for (size_t i = 0; i < st[e].size(); i++)
                for (size_t j = 0; j < st[f].size(); j++) {
                    bool conflict = false;
                    for (const Touch &a : st[e][i].touches)
                        for (const Touch &b : st[f][j].touches)
                            conflict |= a.space == b.space && (a.write || b.write) && a.p0 < b.p1 &&
                                        b.p0 < a.p1 && a.b0 < b.b1 && b.b0 < a.b1;
                    if (!conflict)
                        continue;
                    pairs++;
                    bool ordered = st[f][j].clock[e] >= static_cast<int64_t>(i) ||
                                   st[e][i].clock[f] >= static_cast<int64_t>(j);
                    if (!ordered)
                        return std::string(p.name()) + ": " +
                               to_string(static_cast<Engine>(e + 1)) + " instruction " +
                               std::to_string(i) + " and " + to_string(static_cast<Engine>(f + 1)) +
                               " instruction " + std::to_string(j) +
                               " touch the same bytes without a semaphore between them";
                }
    assert_true(pairs > 0);
    return {};
}

void run_case(const nex::Case &c) {
    std::string race = unordered_conflict(c.program);
    if (!race.empty())
        fail_msg("%s", race.c_str());
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

// Kernel derives the semaphores from what each instruction touches.
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

void test_kernel_sync(void **) {
    ProgramBuilder b("sync");
    auto x = b.argument("x", DType::fp32, {128, 8}, Direction::in);
    auto y = b.argument("y", DType::fp32, {128, 8}, Direction::out);
    Tile a = b.sbuf("a", DType::fp32, 8), c = b.sbuf("c", DType::fp32, 8);
    Tile d = b.sbuf("d", DType::fp32, 8);
    nex::Kernel k(b);
    k.dma_load(a.view(0, 4), x.at(0, 32));                            // sync 0
    k.activate(Activation::identity, c.tap(), a.view(0, 4, 1, 2, 0)); // RAW: waits sync 0
    k.activate(Activation::relu, d.view(4, 4), a.view(4, 4));         // a[4..8) untouched: no wait
    k.dma_store(y.at(0, 32), c.tap());                                // RAW: waits scalar 0
    k.tensor_tensor(AluOp::add, c.tap(), d.tap(), d.tap());           // WAR on c (store), RAW on d
    k.activate(Activation::exp, a.view(0, 4), c.view(0, 4));          // RAW on c (vector)
    k.finish();
    Program p = b.finish();
    auto sync = stream(p, Engine::sync), scalar = stream(p, Engine::scalar);
    auto vector = stream(p, Engine::vector);
    expect(sync, {op_load, op_signal, op_wait, op_store, op_signal, op_end}, "sync");
    expect(scalar, {op_wait, op_act, op_signal, op_act, op_signal, op_wait, op_act, op_end},
           "scalar");
    // Vector waits for the store (which already waited for scalar 0) and
    // for scalar's second activation: one wait per engine, highest count.
    expect(vector, {op_wait, op_wait, op_tt, op_signal, op_end}, "vector");
    // The last scalar activation waits for vector's add, which covers the
    // load and store through vector's own waits: one wait, on vector.
    const auto &w = scalar[5];
    assert_int_equal(w.arg, 1);
    auto syms = p.symbols();
    for (const auto &sym : syms)
        if (sym.kind == format::symbol_semaphore && sym.offset == w.func)
            assert_string_equal(sym.name.c_str(), "vector_done");
    assert_string_equal(unordered_conflict(p).c_str(), "");

    // The same work without the semaphores is caught.
    ProgramBuilder r("race");
    auto rx = r.argument("x", DType::fp32, {128, 8}, Direction::in);
    auto ry = r.argument("y", DType::fp32, {128, 8}, Direction::out);
    Tile ra = r.sbuf("a", DType::fp32, 8), rc = r.sbuf("c", DType::fp32, 8);
    r.sync().dma_load(ra.tap(), rx.at(0, 32)).dma_store(ry.at(0, 32), rc.tap());
    r.scalar().activate(Activation::identity, rc.tap(), ra.tap());
    std::string race = unordered_conflict(r.finish());
    assert_true(race.find("scalar instruction 0") != std::string::npos);
}

} // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(test_kernel_sync),
        cmocka_unit_test(test_check_detects_errors),
        cmocka_unit_test(test_linear_gelu_fp32),
        cmocka_unit_test(test_linear_gelu_bf16),
        cmocka_unit_test(test_linear_gelu_shapes),
        cmocka_unit_test(test_transformer_block_fp32),
        cmocka_unit_test(test_transformer_block_shapes),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
