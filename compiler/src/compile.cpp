// SPDX-License-Identifier: MIT
// compile(): the passes in order, each handing its result to the next:
// decomposed graph -> check -> fusion plan -> folded constants -> memory
// plan -> program.
#include <neuron/compiler/compile.hpp>

#include <chrono>
#include <optional>

#include "passes/check.hpp"
#include "passes/emit.hpp"
#include "passes/fold.hpp"
#include "passes/fuse.hpp"
#include "passes/memory.hpp"

namespace neuron::compiler {

namespace {

// Runs @p pass, adding its time to @p times under @p name.
template <class Pass> auto timed(std::vector<PassTime> &times, const char *name, Pass &&pass) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    auto result = pass();
    times.push_back({name, std::chrono::duration<double, std::milli>(Clock::now() - t0).count()});
    return result;
}

} // namespace

Compiled compile(const Graph &g, const CompileOptions &options) {
    using namespace lower;
    std::vector<PassTime> times;
    const Graph lowered = timed(times, "decompose", [&] { return g.decomposed(); });
    const Usage usage = timed(times, "check", [&] { return check(lowered, options); });
    const FusionPlan fusion =
        timed(times, "fuse", [&] { return lower::fuse(lowered, usage, options.fuse); });
    const Folded folded = timed(times, "fold", [&] { return fold(lowered, usage); });
    MemoryPlan memory = timed(times, "memory",
                              [&] { return plan_memory(lowered, usage, fusion, folded, options); });
    std::string plan = plan_text(lowered, fusion, memory);
    std::optional<Emitter> emitter;
    const Kernel::Stats stats = timed(times, "emit", [&] {
        emitter.emplace(lowered, options, usage, std::move(memory), folded);
        return emit(*emitter, fusion);
    });
    Program program = timed(times, "build", [&] { return emitter->build(); });
    return Compiled{std::move(program), std::move(times), std::move(plan), stats};
}

} // namespace neuron::compiler
