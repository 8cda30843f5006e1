// SPDX-License-Identifier: MIT
// The example models compiled (examples/common/transformer_block.hpp): the
// pre-norm transformer block and the BERT-base-sized encoder layer, built
// as graphs, compiled, run through the device model on the host and
// checked against the examples' own CPU references in double precision
// (written without the compiler); the block's every node also against the
// compiler's reference within hw/isa.md's bounds.
#include <map>
#include <string>
#include <vector>

#include <neuron/compiler/compile.hpp>

#include "common/transformer_block.hpp"
#include "harness.hpp"
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

// One job of the case on the model; its output checked against the case's
// reference and tolerance. Returns the job's cycles.
uint64_t run_checked(const nex::Case &c) {
    size_t pairs = 0;
    std::string race = model::unordered_conflict(c.program, &pairs);
    if (!race.empty())
        fail_msg("%s: %s", c.title.c_str(), race.c_str());
    std::map<std::string, std::vector<std::byte>> inputs(c.inputs.begin(), c.inputs.end());
    model::Run r = model::run(c.program, inputs);
    if (r.result.status != EXM_STATUS_OK)
        fail_msg("%s: job status 0x%x on the model", c.title.c_str(), r.result.status);
    nex::ErrorStats e = nex::check(c, r.outputs.at(c.output));
    print_message("%s\n  %s\n  model: %llu cycles, %.0f ms on the host; CPU reference %.0f ms\n"
                  "  %s\n",
                  c.title.c_str(), nex::describe_program(c).c_str(),
                  static_cast<unsigned long long>(r.result.cycles), r.ms, c.reference_ms,
                  nex::describe(e, c.tolerance).c_str());
    if (!e.ok())
        fail_msg("%s: %zu elements beyond the tolerance", c.title.c_str(), e.failures);
    return r.result.cycles;
}

// The compiled block with the hand-written one's data, reference and
// tolerance, for two seeds; the model's cycles of both side by side.
void transformer_block(void **) {
    for (uint64_t seed = 1; seed <= 2; seed++) {
        const uint64_t comp = run_checked(nex::compiled_transformer_block_case(seed));
        nex::Case hand = nex::transformer_block_case(seed);
        std::map<std::string, std::vector<std::byte>> inputs(hand.inputs.begin(),
                                                             hand.inputs.end());
        const uint64_t h = model::run(hand.program, inputs).result.cycles;
        print_message("transformer block: %llu cycles hand-written, %llu compiled (%.2fx)\n",
                      static_cast<unsigned long long>(h), static_cast<unsigned long long>(comp),
                      static_cast<double>(comp) / static_cast<double>(h));
    }
    // Other shapes: 77 tokens (a partial tile), 3 heads of 128, 200 tokens
    // (two row tiles, one partial), d_ff not a multiple of 128.
    run_checked(nex::compiled_transformer_block_case(3, {77, 384, 3, 512}));
    run_checked(nex::compiled_transformer_block_case(4, {200, 128, 2, 300}));
}

// Every node of the block's graph against the compiler's reference from
// its operands as the device produced them: hw/isa.md's bound per operator.
void transformer_block_nodes(void **) {
    const nex::TransformerShape s;
    nex::Rng rng(5);
    const nex::TransformerParams p = nex::transformer_params(s, rng);
    const compiler::Graph g = harness::all_outputs(nex::transformer_block_graph(s, p));
    const auto in = harness::make_inputs(g, 5);
    const auto o = harness::run(g, in);
    print_message("%zu elements checked\n", harness::check_nodes(g, in, o, g.name()));
}

// The BERT-base-sized layer, post-norm, end to end.
void encoder_768(void **) {
    run_checked(nex::encoder_768_case(1));
}

} // namespace

int main(int argc, char **argv) {
    const CMUnitTest block[] = {cmocka_unit_test(transformer_block),
                                cmocka_unit_test(transformer_block_nodes)};
    const CMUnitTest encoder[] = {cmocka_unit_test(encoder_768)};
    if (argc > 1 && std::string(argv[1]) == "encoder")
        return cmocka_run_group_tests(encoder, nullptr, nullptr);
    return cmocka_run_group_tests(block, nullptr, nullptr);
}
