// SPDX-License-Identifier: MIT
// Compute: matmul GFLOP/s of one emulated core through a submitted program,
// next to its limits. The device is a model running inside QEMU on the
// host CPU, so what bounds it is measured on the host, outside the guest
// (which runs under TCG and could not time native code): the model's own
// throughput and a single-thread OpenBLAS sgemm, both from
// neuron-model-bench --json, read here through --host-figures.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <deque>
#include <fstream>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <neuron/compiler/compile.hpp>
#include <neuron/compiler/reference.hpp>
#include <neuron/neuron.hpp>

#include "bench.hpp"
#include "common/numerics.hpp"
#include "device_graph.hpp"
#include "neuron_isa.h"

namespace nbench {

namespace {

constexpr uint32_t partitions = 128;
/// Free size of one output tile: the most a MATMUL writes into a PSUM bank.
constexpr uint32_t tile_columns = 512;
constexpr uint32_t bank_elems = NEURON_PSUM_BANK_SIZE / 4;

/// C[M, N] = A^T B with A [K, M] and B [K, N]; M and K multiples of 128,
/// N a multiple of 512 (whole tiles, as neuron-model-bench requires).
struct MatmulShape {
    uint32_t m, n, k;
    double flops() const { return 2.0 * m * n * k; }
    uint32_t k_blocks() const { return k / partitions; }
    uint32_t output_tiles() const { return (m / partitions) * (n / tile_columns); }
    /// Output tiles still in PSUM when the loop ends (one per bank, the last ones).
    uint32_t kept_tiles() const { return std::min<uint32_t>(output_tiles(), NEURON_PSUM_BANKS); }
    std::string label() const { return fmt::format("{}x{}x{}", m, n, k); }
};

/// The shapes of neuron-model-bench, so that every row has its host figures.
std::vector<MatmulShape> shapes(const Options &o) {
    if (o.quick)
        return {{128, 512, 128}};
    return {{128, 512, 128}, {512, 512, 512}, {1024, 1024, 1024}};
}

const neuron::DType dtypes[] = {neuron::DType::fp32, neuron::DType::bf16};

std::string row_label(const MatmulShape &s, neuron::DType dt) {
    return fmt::format("{} {}", s.label(), neuron::to_string(dt));
}

// ---- host figures ----

/// neuron-model-bench's figures for one shape and dtype.
struct HostFigure {
    Stats model;
    Stats sgemm;
};

class HostFigures {
  public:
    /// Throws std::runtime_error if @p path cannot be read or is not such a file:
    /// it was asked for, so a silent row of "-" would hide the mistake.
    explicit HostFigures(const std::string &path) : path_(path) {
        std::ifstream in(path);
        if (!in)
            throw std::runtime_error(fmt::format("cannot read host figures {}", path));
        try {
            const auto doc = nlohmann::json::parse(in);
            for (const auto &e : doc.at("matmul"))
                figures_[{e.at("m").get<uint32_t>(), e.at("n").get<uint32_t>(),
                          e.at("k").get<uint32_t>(), e.at("dtype").get<std::string>()}] =
                    HostFigure{stats(e.at("model_gflops")), stats(e.at("sgemm_gflops"))};
        } catch (const nlohmann::json::exception &e) {
            throw std::runtime_error(
                fmt::format("{}: not the JSON of neuron-model-bench: {}", path, e.what()));
        }
    }

    const std::string &path() const { return path_; }

    std::optional<HostFigure> find(const MatmulShape &s, neuron::DType dt) const {
        auto it = figures_.find({s.m, s.n, s.k, neuron::to_string(dt)});
        if (it == figures_.end())
            return std::nullopt;
        return it->second;
    }

  private:
    static Stats stats(const nlohmann::json &j) {
        return Stats{j.at("median").get<double>(), j.at("min").get<double>(),
                     j.at("max").get<double>(), j.at("runs").get<unsigned>()};
    }
    std::string path_;
    std::map<std::tuple<uint32_t, uint32_t, uint32_t, std::string>, HostFigure> figures_;
};

// ---- the device program ----

/// Instructions a job of build_matmul() executes: each LOOP pass counts
/// its body again, a SEM_WAIT counts once.
uint64_t executed_instructions(const MatmulShape &s, uint32_t reps) {
    const uint64_t sync = 2ull * s.k_blocks() + 1 + 1 + s.kept_tiles() + 1;
    const uint64_t tensor =
        1 + uint64_t{reps} * (uint64_t{s.output_tiles()} * s.k_blocks() + 1) + 2;
    const uint64_t vector = 1 + s.kept_tiles() + 2;
    return sync + tensor + vector;
}

/// The program neuron-model-bench runs in the model, plus the store of C:
///
///   Sync    DMA_LOAD A as K/128 tiles [128, M] and B as K/128 tiles
///           [128, N] into SBUF, once; SEM_SIGNAL loaded;
///   Tensor  SEM_WAIT loaded; each [128, 512] output tile accumulates K/128
///           MATMULs in PSUM bank (tile % 8); LOOP over all tiles @p reps
///           times; SEM_SIGNAL computed;
///   Vector  SEM_WAIT computed; COPY the tiles left in the banks to SBUF;
///           SEM_SIGNAL staged;
///   Sync    SEM_WAIT staged; DMA_STORE them into C.
///
/// Only the matmul loop grows with @p reps, so a long job times the tensor
/// engine; the stored tiles let the result be checked.
neuron::Program build_matmul(const MatmulShape &s, neuron::DType dt, uint32_t reps) {
    using namespace neuron;
    const uint32_t es = dtype_size(dt), kb_count = s.k_blocks(), kept = s.kept_tiles();
    const uint32_t first_kept = s.output_tiles() - kept, n_tiles = s.n / tile_columns;

    ProgramBuilder b(fmt::format("bench_matmul_{}_{}", s.label(), to_string(dt)));
    const ArgRef a_arg = b.argument("a", dt, {s.k, s.m}, Direction::in);
    const ArgRef b_arg = b.argument("b", dt, {s.k, s.n}, Direction::in);
    const ArgRef c_arg = b.argument("c", DType::fp32, {s.m, s.n}, Direction::out);
    const Tile a_sb = b.sbuf("a", dt, kb_count * s.m); // [k % 128, kb * M + m]
    const Tile b_sb = b.sbuf("b", dt, kb_count * s.n); // [k % 128, kb * N + n]
    const Tile c_sb = b.sbuf("c", DType::fp32, kept * tile_columns);
    const Tile acc = b.psum("acc", DType::fp32, NEURON_PSUM_BANKS * bank_elems);
    const Semaphore loaded = b.semaphore("loaded"), computed = b.semaphore("computed"),
                    staged = b.semaphore("staged");
    auto bank = [&](uint32_t tile) {
        return acc.view((tile % NEURON_PSUM_BANKS) * bank_elems, tile_columns);
    };
    auto tile_origin = [&](uint32_t tile) {
        return std::pair{tile / n_tiles * partitions, tile % n_tiles * tile_columns};
    };

    for (uint32_t kb = 0; kb < kb_count; kb++) {
        b.sync().dma_load(a_sb.view(kb * s.m, s.m),
                          a_arg.at(uint64_t{kb} * partitions * s.m * es, s.m * es));
        b.sync().dma_load(b_sb.view(kb * s.n, s.n),
                          b_arg.at(uint64_t{kb} * partitions * s.n * es, s.n * es));
    }
    b.sync().signal(loaded);

    b.tensor().wait(loaded);
    const Label top = b.tensor().here();
    for (uint32_t tile = 0; tile < s.output_tiles(); tile++) {
        const auto [m0, n0] = tile_origin(tile);
        for (uint32_t kb = 0; kb < kb_count; kb++)
            b.tensor().matmul(bank(tile), a_sb.view(kb * s.m + m0, partitions),
                              b_sb.view(kb * s.n + n0, tile_columns), kb > 0);
    }
    b.tensor().loop(top, reps).signal(computed).end();

    b.vector().wait(computed);
    for (uint32_t i = 0; i < kept; i++)
        b.vector().copy(c_sb.view(i * tile_columns, tile_columns), bank(first_kept + i));
    b.vector().signal(staged).end();

    b.sync().wait(staged);
    for (uint32_t i = 0; i < kept; i++) {
        const auto [m0, n0] = tile_origin(first_kept + i);
        b.sync().dma_store(c_arg.at((uint64_t{m0} * s.n + n0) * 4, s.n * 4),
                           c_sb.view(i * tile_columns, tile_columns));
    }
    b.sync().end();

    // A budget just above what the job needs: a program that loops wrongly
    // faults at once instead of spinning until the driver's job timeout.
    b.set_insn_limit(executed_instructions(s, reps) + 64);
    return b.finish();
}

// ---- operands and the check of C ----

/// A and B as fp32 values; each dtype's run stores them rounded to it.
struct Operands {
    std::vector<float> a; ///< [K, M]
    std::vector<float> b; ///< [K, N]
};

Operands make_operands(const MatmulShape &s) {
    nex::Rng rng(0x6d61746d756c ^ (uint64_t{s.m} << 32 | uint64_t{s.n} << 16 | s.k));
    Operands o;
    o.a.resize(size_t{s.k} * s.m);
    o.b.resize(size_t{s.k} * s.n);
    for (auto &v : o.a)
        v = rng.uniform(1.0f);
    for (auto &v : o.b)
        v = rng.uniform(1.0f);
    return o;
}

/// Compares sampled elements of the stored tiles of C with a double
/// reference from the same (rounded) inputs, within hw/isa.md's MATMUL
/// bound |err| <= 1e-5 sum_k |a b| + 1e-6. Throws std::runtime_error.
void check_result(const MatmulShape &s, neuron::DType dt, const Operands &in,
                  std::span<const float> c) {
    const auto a = nex::rounded(dt, in.a), b = nex::rounded(dt, in.b);
    const uint32_t n_tiles = s.n / tile_columns, first_kept = s.output_tiles() - s.kept_tiles();
    nex::Rng pick(7);
    constexpr unsigned samples_per_tile = 256;
    for (uint32_t tile = first_kept; tile < s.output_tiles(); tile++) {
        for (unsigned i = 0; i < samples_per_tile; i++) {
            const size_t m = tile / n_tiles * partitions + pick.next() % partitions;
            const size_t n = tile % n_tiles * tile_columns + pick.next() % tile_columns;
            double ref = 0, magnitude = 0;
            for (size_t k = 0; k < s.k; k++) {
                const double p = double{a[k * s.m + m]} * double{b[k * s.n + n]};
                ref += p;
                magnitude += std::fabs(p);
            }
            const double got = c[m * s.n + n];
            if (!(std::fabs(got - ref) <= 1e-5 * magnitude + 1e-6))
                throw std::runtime_error(
                    fmt::format("matmul {} {}: C[{}][{}] is {} on the device, {} in the reference",
                                s.label(), neuron::to_string(dt), m, n, got, ref));
        }
    }
}

// ---- the device run ----

/// One shape and dtype on one core: the operands uploaded once into device
/// buffers, the program loaded for a repetition count, jobs timed from
/// submit to the fence.
class DeviceMatmul {
  public:
    DeviceMatmul(const neuron::Device &device, const MatmulShape &shape, neuron::DType dtype,
                 const Operands &in)
        : device_(device), queue_(device.queue(0)), shape_(shape), dtype_(dtype),
          a_(upload(nex::pack(dtype, in.a))), b_(upload(nex::pack(dtype, in.b))),
          c_(device.allocate(c_bytes(), region())) {}

    /// Loads the program with the loop run @p reps times (replacing the last).
    void load(uint32_t reps) {
        program_.reset();
        program_.emplace(device_.load(build_matmul(shape_, dtype_, reps)));
        reps_ = reps;
    }
    uint32_t reps() const { return reps_; }

    /// Seconds from submit to the fence signalled, for the loaded program.
    double run_seconds() const {
        neuron::Arguments args;
        args.bind("a", a_.range(0, a_bytes()))
            .bind("b", b_.range(0, b_bytes()))
            .bind("c", c_.range(0, c_bytes()));
        const auto limit = std::chrono::duration<double>(job_timeout_s() + 5.0);
        const double t0 = now_s();
        const neuron::Fence done = queue_.submit(*program_, args);
        // A job past the timeout is reset and its fence fails (wait_for
        // throws); the extra margin only guards against a lost interrupt.
        if (!done.wait_for(std::chrono::duration_cast<std::chrono::nanoseconds>(limit)))
            throw std::runtime_error(fmt::format("{} did not finish", done.label()));
        return now_s() - t0;
    }

    double gflops_once() const { return shape_.flops() * reps_ / run_seconds() * 1e-9; }

    /// FLOPs per cycle of the model's clock (hw/isa.md §7) of one profiled job.
    double flops_per_cycle() const {
        neuron::Arguments args;
        args.bind("a", a_.range(0, a_bytes()))
            .bind("b", b_.range(0, b_bytes()))
            .bind("c", c_.range(0, c_bytes()));
        const neuron::Profile prof(device_, 1);
        queue_.submit(*program_, args, prof).wait();
        return shape_.flops() * reps_ / static_cast<double>(prof.read().cycles);
    }

    /// Fills C with NaN, so that a tile the program failed to store cannot pass.
    void poison_result() const {
        std::vector<std::byte> nan(c_bytes(), std::byte{0xff});
        c_.write(0, nan);
    }

    std::vector<float> result() const {
        std::vector<float> c(size_t{shape_.m} * shape_.n);
        c_.read(0, std::as_writable_bytes(std::span(c)));
        return c;
    }

  private:
    neuron::Region region() const {
        return device_.info().device_memory_size ? neuron::Region::device : neuron::Region::host;
    }
    uint64_t a_bytes() const { return uint64_t{shape_.k} * shape_.m * neuron::dtype_size(dtype_); }
    uint64_t b_bytes() const { return uint64_t{shape_.k} * shape_.n * neuron::dtype_size(dtype_); }
    uint64_t c_bytes() const { return uint64_t{shape_.m} * shape_.n * 4; }

    neuron::Buffer upload(const std::vector<std::byte> &bytes) const {
        neuron::Buffer buf = device_.allocate(bytes.size(), region());
        buf.write(0, bytes);
        return buf;
    }

    neuron::Device device_;
    neuron::Queue queue_;
    MatmulShape shape_;
    neuron::DType dtype_;
    neuron::Buffer a_, b_, c_;
    std::optional<neuron::LoadedProgram> program_;
    uint32_t reps_ = 0;
};

/// How long one timed job should run: long against the submit round trip
/// (a few ms under TCG), short against the driver's job timeout.
double target_job_seconds(const Options &o) {
    return std::min(o.quick ? 0.05 : 0.3, job_timeout_s() / 10);
}

/// Picks the repetition count for a job of about @p target seconds: the
/// count doubles (x8 while far off) until a job takes a quarter of the
/// target, so its fixed costs (submit, loading A and B, storing C) weigh
/// little in the estimate, then scales. Each step keeps the faster of two
/// jobs: the first job on a fresh device or buffer pays one-time costs
/// (several times a short job under TCG) that would stop the doubling early.
uint32_t calibrate(DeviceMatmul &run, double target) {
    uint32_t reps = 1;
    for (;;) {
        run.load(reps);
        const double t = std::min(run.run_seconds(), run.run_seconds());
        if (t >= target / 4 || reps >= (1u << 24))
            return static_cast<uint32_t>(std::clamp(reps * target / t, 1.0, 4e9));
        reps *= t < target / 64 ? 8 : 2;
    }
}

/// The device column, shape by shape from the smallest.
class DeviceColumn {
  public:
    DeviceColumn(const Options &o, const neuron::Device &dev) : o_(o), dev_(dev) {}

    void measure(const MatmulShape &s, neuron::DType dt, const Operands &in, Table &t) {
        const std::string row = row_label(s, dt);
        if (dt == neuron::DType::bf16 && !dev_.info().has(neuron::cap_bf16)) {
            t.skip(row, "device", "the device has no bf16");
            return;
        }
        // Calibration starts with one pass over the tiles, which the driver
        // must not time out: judge it by the slowest rate seen so far.
        if (slowest_gflops_) {
            const double one_pass_s = s.flops() / (*slowest_gflops_ * 1e9);
            if (one_pass_s > job_timeout_s() / 4) {
                t.skip(row, "device",
                       fmt::format("one pass would take ~{:.1f} s, near the {:.1f} s job timeout",
                                   one_pass_s, job_timeout_s()));
                return;
            }
        }
        DeviceMatmul run(dev_, s, dt, in);
        run.load(calibrate(run, target_job_seconds(o_)));
        run.poison_result();
        // The calibration's jobs already warmed the device, queue and buffers.
        const Stats st = repeat_runs(
            o_.repeat, [&] { return run.gflops_once(); }, false);
        // Every job computes the same C: one check covers all of them.
        check_result(s, dt, in, run.result());
        t.set(row, "device", st);
        slowest_gflops_ = std::min(slowest_gflops_.value_or(st.min), st.min);
        reps_.push_back(fmt::format("{} {}", row, run.reps()));
    }

    /// "R per job: ..." for the table's notes; empty if nothing ran.
    std::string describe_reps() const {
        if (reps_.empty())
            return {};
        std::string list;
        for (const auto &e : reps_)
            list += (list.empty() ? "" : ", ") + e;
        return fmt::format("R per job (calibrated to ~{:.2g} s): {}.", target_job_seconds(o_),
                           list);
    }

  private:
    const Options &o_;
    neuron::Device dev_;
    std::optional<double> slowest_gflops_;
    std::vector<std::string> reps_;
};

// ---- compiled matmul-bound graphs ----

/// A graph of the compiler that is one large matmul: y = x w (+ b, GELU)
/// with x [M, K] an input and w [K, N], b [N] constants.
struct CompiledGraph {
    std::string name;
    bool bias_gelu = false;
};

neuron::compiler::Graph matmul_graph(const MatmulShape &s, neuron::DType dt, bool bias_gelu) {
    namespace nc = neuron::compiler;
    nc::Graph g(bias_gelu ? "bench_linear_bias_gelu" : "bench_linear");
    const int64_t m = s.m, n = s.n, k = s.k;
    const uint32_t x = g.input("x", {dt, {m, k}});
    const uint32_t w = g.constant("w", {dt, {k, n}}, {{}, 1, 1 / std::sqrt(float(k))});
    uint32_t y = g.add(nc::Op::matmul, "h", {x, w});
    if (bias_gelu) {
        const uint32_t b = g.constant("b", {dt, {n}}, {{}, 2, 0.5f});
        y = g.add(nc::Op::add, "z", {y, b});
        y = g.add(nc::Op::gelu, "y", {y});
    }
    g.mark_output(y);
    return g;
}

/// Jobs in flight of the queued compiled figure: the next job is ready
/// when the device finishes one, as with a runtime that double-buffers.
constexpr unsigned queued_depth = 2;

/// Compiled matmul-bound graphs next to the compute table's device matmul
/// of the same shape and dtype, the two measured in alternation.
void run_compiled(const Options &o, const neuron::Device &dev, Report &r) {
    Table &t =
        r.table("compute-compiled", "Compiled matmul-bound graphs next to the device's matmul rate",
                "graph, M x N x K, dtype");
    t.column("matmul (device)", "GFLOP/s")
        .column("compiled, queued", "GFLOP/s")
        .column("compiled, one at a time", "GFLOP/s");
    t.column("queued/matmul", "x").column("one at a time/matmul", "x");
    const bool profiles = dev.info().has(neuron::cap_profile);
    if (profiles)
        t.column("on the model's clock", "x");
    t.note(fmt::format(
        "matmul (device): the compute table's program (A and B resident in SBUF, the MATMUL "
        "loop calibrated to a long job); compiled: jobs of the graph compiled by "
        "neuron::compiler (x [M, K] an input in device memory, w [K, N] and b program "
        "constants: every job loads x and w, transposes x, runs the MATMULs, evacuates PSUM and "
        "stores y), GFLOP/s = 2MNK J / (the J jobs' first submit -> last fence). Queued: the "
        "device's rate on the compiled program, up to {} jobs in flight (each submitted once "
        "the one {} earlier has finished, before the previous one's fence is waited for, as a "
        "runtime that double-buffers does), so the device does not wait for the submission "
        "round trip; one at a time: each job "
        "submitted after the previous one's fence, the round trip included. The three figures "
        "alternate round by round (one warm-up round, then the rounds of --repeat); the ratios "
        "are taken round by round. The compiled output is checked once against the compiler's "
        "reference. On the model's clock: queued/matmul from the cycles of one profiled job of "
        "each (hw/isa.md §7: the engines run in parallel there, while the simulator device runs "
        "them one after the other on one host thread).",
        queued_depth, queued_depth));
    const std::vector<MatmulShape> graph_shapes =
        o.quick ? std::vector<MatmulShape>{{128, 512, 128}}
                : std::vector<MatmulShape>{{512, 512, 512}, {1024, 1024, 1024}};
    const std::vector<CompiledGraph> graphs = {{"Linear", false}, {"Linear+bias+GELU", true}};
    std::vector<std::string> job_counts;
    for (const MatmulShape &s : graph_shapes) {
        const Operands in = make_operands(s);
        for (neuron::DType dt : dtypes) {
            if (dt == neuron::DType::bf16 && !dev.info().has(neuron::cap_bf16))
                continue;
            DeviceMatmul mm(dev, s, dt, in);
            mm.load(calibrate(mm, target_job_seconds(o)));
            for (const CompiledGraph &cg : graphs) {
                const std::string row =
                    fmt::format("{} {} {}", cg.name, s.label(), neuron::to_string(dt));
                const DeviceGraph graph(dev, matmul_graph(s, dt, cg.bias_gelu), 5);
                graph.check();
                // As many jobs per figure as make about the matmul's job.
                const double one = std::min(graph.run_seconds(), graph.run_seconds());
                const unsigned jobs =
                    static_cast<unsigned>(std::clamp(target_job_seconds(o) / one, 1.0, 256.0));
                job_counts.push_back(fmt::format("{} {}", row, jobs));
                auto compiled_at = [&](unsigned depth) {
                    return [&graph, &s, jobs, depth] {
                        return s.flops() * graph.runs_per_second(jobs, depth) * 1e-9;
                    };
                };
                const Rounds rounds = interleaved_rounds(
                    o.repeat, {{"matmul (device)", [&] { return mm.gflops_once(); }},
                               {"compiled, queued", compiled_at(queued_depth)},
                               {"compiled, one at a time", compiled_at(1)}});
                for (const char *c :
                     {"matmul (device)", "compiled, queued", "compiled, one at a time"})
                    t.set(row, c, rounds, "");
                t.set_ratio_by_round(row, "queued/matmul", rounds, "compiled, queued",
                                     "matmul (device)", "");
                t.set_ratio_by_round(row, "one at a time/matmul", rounds, "compiled, one at a time",
                                     "matmul (device)", "");
                if (profiles) {
                    const double c =
                        s.flops() / static_cast<double>(graph.cycles(dev)) / mm.flops_per_cycle();
                    t.set(row, "on the model's clock", Stats{c, c, c, 1});
                }
            }
        }
    }
    std::string list;
    for (const auto &e : job_counts)
        list += (list.empty() ? "" : ", ") + e;
    if (!list.empty())
        t.note(fmt::format("compiled jobs per figure (their sum ~{:.2g} s, as a matmul job): {}.",
                           target_job_seconds(o), list));
}

} // namespace

void run_compute(const Options &o, Report &r) {
    Table &t = r.table("compute", "Matmul on one core (C = A^T B, fp32 accumulation)",
                       "M x N x K, inputs");
    t.column("device", "GFLOP/s")
        .column("model (host)", "GFLOP/s")
        .column("sgemm (host)", "GFLOP/s")
        .ratio("device/model", "device", "model (host)")
        .ratio("device/sgemm", "device", "sgemm (host)");
    t.note("device: one job on core 0 loads A and B into SBUF, then loops the tiled MATMULs "
           "(K/128 per [128, 512] PSUM tile) R times; GFLOP/s = 2MNK R / (submit -> fence); "
           "C is checked against a double reference.");
    t.note("model (host), sgemm (host): neuron-model-bench on the host outside the VM, the "
           "same program on the model alone, and OpenBLAS sgemm on 1 thread (fp32 for both "
           "dtypes): what bounds the emulated core.");

    std::optional<HostFigures> host;
    if (!o.host_figures.empty())
        host.emplace(o.host_figures);

    const char *const no_device_reason = o.no_device ? "--no-device" : "no neuron device";
    std::optional<DeviceColumn> device;
    if (auto dev = open_device(o))
        device.emplace(o, *dev);

    for (const MatmulShape &s : shapes(o)) {
        const Operands in = make_operands(s);
        for (neuron::DType dt : dtypes) {
            const std::string row = row_label(s, dt);
            if (device)
                device->measure(s, dt, in, t);
            else
                t.skip(row, "device", no_device_reason);

            if (!host) {
                for (const char *c : {"model (host)", "sgemm (host)"})
                    t.skip(row, c, "no host figures (run through scripts/bench)");
            } else if (auto f = host->find(s, dt)) {
                t.set(row, "model (host)", f->model);
                t.set(row, "sgemm (host)", f->sgemm);
            } else {
                for (const char *c : {"model (host)", "sgemm (host)"})
                    t.skip(row, c, fmt::format("not in {}", host->path()));
            }
        }
    }
    if (device && !device->describe_reps().empty())
        t.note(device->describe_reps());
    if (auto dev = open_device(o)) {
        run_compiled(o, *dev, r);
        run_compute_split(o, *dev, r);
    }
}

} // namespace nbench
