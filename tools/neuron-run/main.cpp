// SPDX-License-Identifier: MIT
// neuron-run: runs a program container (neuron-cc -o x.nprog) on a device
// with inputs from files or a seed, writes its outputs, and with --check
// compares them with the compiler's double-precision reference of the
// graph. tools/man/neuron-run.1.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <neuron/compiler/reference.hpp>
#include <neuron/compiler/text.hpp>
#include <neuron/neuron.hpp>

#include "neuron_tools/cli.hpp"
#include "npy.hpp"

namespace {

namespace nc = neuron::compiler;
namespace fs = std::filesystem;
using neuron::tools::Exit;

std::string type_of(const neuron::ArgumentInfo &a) {
    std::string dims;
    for (uint32_t d : a.shape)
        dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    return fmt::format("{}[{}]", neuron::to_string(a.dtype), dims);
}

std::vector<std::byte> read_file(const fs::path &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f)
        throw std::runtime_error(
            fmt::format("{}: cannot open it: {}", path.string(), std::strerror(errno)));
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(bytes.size());
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
}

void write_file(const fs::path &path, const std::vector<std::byte> &bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
    if (!f)
        throw std::runtime_error(
            fmt::format("{}: cannot write it: {}", path.string(), std::strerror(errno)));
}

/// An input's bytes in the argument's dtype from @p path: a .npy file of
/// the argument's shape (its dtype, or fp32 for bf16, rounded), else raw
/// little-endian values of the argument's dtype, exactly its size.
std::vector<std::byte> load_input(const neuron::ArgumentInfo &a, const fs::path &path) {
    std::vector<std::byte> bytes = read_file(path);
    const std::string what = fmt::format("input '{}' ({}, {} bytes)", a.name, type_of(a), a.size);
    if (path.extension() != ".npy") {
        if (bytes.size() != a.size)
            throw std::runtime_error(
                fmt::format("{}: {} has {} bytes; a raw file holds the input's {} little-endian "
                            "values, exactly {} bytes (or give a .npy file)",
                            what, path.string(), bytes.size(), neuron::to_string(a.dtype), a.size));
        return bytes;
    }
    nrun::Npy n;
    try {
        n = nrun::parse_npy(bytes);
    } catch (const std::exception &e) {
        throw std::runtime_error(fmt::format("{}: {}: {}", what, path.string(), e.what()));
    }
    std::vector<uint64_t> want(a.shape.begin(), a.shape.end());
    if (n.shape != want)
        throw std::runtime_error(fmt::format("{}: {} holds an array of shape {}, not the input's",
                                             what, path.string(), nrun::shape_string(n.shape)));
    const bool bf16_from_f4 = a.dtype == neuron::DType::bf16 && n.descr == "<f4";
    if (n.descr != nrun::descr_of(a.dtype) && !bf16_from_f4)
        throw std::runtime_error(
            fmt::format("{}: {} holds dtype '{}', the input wants '{}'{}", what, path.string(),
                        n.descr, nrun::descr_of(a.dtype),
                        a.dtype == neuron::DType::bf16 ? " (or '<f4', rounded to bf16)" : ""));
    if (bf16_from_f4) {
        std::vector<float> v(n.data.size() / 4);
        std::memcpy(v.data(), n.data.data(), n.data.size());
        return nc::pack(neuron::DType::bf16, v);
    }
    return n.data;
}

/// The graph's inputs and outputs are the program's arguments: same names,
/// directions, dtypes and shapes; else the check would compare unrelated
/// data.
void match_graph(const nc::Graph &g, const neuron::Program &p, const std::string &ir) {
    auto check = [&](const nc::Node &n, neuron::Direction dir) {
        const neuron::ArgumentInfo *a = p.find_argument(n.name);
        if (!a || a->direction != dir)
            throw std::runtime_error(fmt::format(
                "{}: the graph's {} '{}' ({}) is not an {} argument of program '{}'", ir,
                dir == neuron::Direction::in ? "input" : "output", n.name, nc::to_string(n.type),
                dir == neuron::Direction::in ? "input" : "output", p.name()));
        std::vector<int64_t> shape(a->shape.begin(), a->shape.end());
        if (a->dtype != n.type.dtype || shape != n.type.shape)
            throw std::runtime_error(fmt::format("{}: '{}' is {} in the graph, {} in the program",
                                                 ir, n.name, nc::to_string(n.type), type_of(*a)));
    };
    size_t ins = 0, outs = 0;
    for (const nc::Node &n : g.nodes())
        if (n.op == nc::Op::input) {
            check(n, neuron::Direction::in);
            ins++;
        }
    for (uint32_t o : g.outputs()) {
        check(g.node(o), neuron::Direction::out);
        outs++;
    }
    size_t p_ins = 0, p_outs = 0;
    for (const auto &a : p.arguments()) {
        p_ins += a.direction == neuron::Direction::in;
        p_outs += a.direction == neuron::Direction::out;
    }
    if (ins != p_ins || outs != p_outs)
        throw std::runtime_error(fmt::format("{}: the graph has {} inputs and {} outputs, program "
                                             "'{}' {} and {}",
                                             ir, ins, outs, p.name(), p_ins, p_outs));
}

std::string index_string(size_t f, const std::vector<uint32_t> &shape) {
    std::vector<size_t> idx(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
        idx[d] = f % shape[d];
        f /= shape[d];
    }
    std::string s;
    for (size_t i : idx)
        s += (s.empty() ? "" : ", ") + std::to_string(i);
    return "[" + s + "]";
}

/// Compares every output with the graph's reference; prints one line per
/// output and the worst elements of each that is beyond its bound.
/// Returns whether all are within.
bool check_outputs(const nc::Graph &g, const neuron::Program &p,
                   const std::map<std::string, std::vector<std::byte>> &inputs,
                   const std::map<std::string, std::vector<std::byte>> &outputs,
                   std::ostream &out) {
    std::map<std::string, std::vector<float>> in;
    for (const nc::Node &n : g.nodes())
        if (n.op == nc::Op::input) {
            const auto &b = inputs.at(n.name);
            in[n.name] = nc::unpack(n.type.dtype, b.data(), static_cast<size_t>(n.type.elements()));
        }
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<nc::Expected> ref = nc::evaluate_bounded(g, in);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out << fmt::format("check: the graph's double-precision reference in {:.0f} ms\n", ms);
    bool ok = true;
    for (uint32_t o : g.outputs()) {
        const nc::Node &n = g.node(o);
        const neuron::ArgumentInfo &a = *p.find_argument(n.name);
        const auto &bytes = outputs.at(n.name);
        const std::vector<float> got =
            nc::unpack(n.type.dtype, bytes.data(), static_cast<size_t>(n.type.elements()));
        const nc::Expected &e = ref[o];
        // The bound carried through the graph, unless it is wider than the
        // values (a deep graph: every operator's worst case, aligned, adds
        // up); then the own bound of the operator that computed the values
        // at the reference's operands, which leaves out the errors of the
        // operators before it.
        const nc::OutputBound ob = nc::output_bound(g, o, ref);
        std::string kind = "the bound carried through the graph";
        if (ob.own) {
            const bool itself = ob.computed_by.size() == 1 && ob.computed_by[0] == o;
            std::vector<std::string> by;
            for (uint32_t c : ob.computed_by)
                by.push_back(fmt::format("'{}' ({})", g.node(c).name, nc::to_string(g.node(c).op)));
            kind =
                fmt::format("{} (carried through the graph it reaches {:.3g}, wider than the "
                            "values, up to {:.3g})",
                            itself       ? "the output operator's own bound"
                            : by.empty() ? "the bound of the inputs it moves"
                                         : fmt::format("the own bound of {}, moved to the output",
                                                       fmt::join(by, ", ")),
                            ob.carried, ob.largest);
        }
        const nc::Comparison c = nc::compare(got, e.value, ob.bound, 5);
        out << fmt::format("{} {}: {} elements, max |device - reference| {:.3g}, at most {:.3g} "
                           "of {}: {}\n",
                           n.name, type_of(a), got.size(), c.max_error, c.worst_ratio, kind,
                           c.beyond ? fmt::format("{} beyond the bound", c.beyond) : "within");
        if (!c.beyond)
            continue;
        ok = false;
        for (const size_t f : c.worst_beyond) {
            const double d = std::fabs(got[f] - e.value[f]);
            out << fmt::format("  {}{}: device {:.9g}, reference {:.9g}, |difference| {:.3g}, "
                               "bound {:.3g} ({:.3g}x)\n",
                               n.name, index_string(f, a.shape), got[f], e.value[f], d, ob.bound[f],
                               std::isnan(d) ? INFINITY : d / ob.bound[f]);
        }
    }
    return ok;
}

int run(int argc, const char *const *argv, std::ostream &out, std::ostream &err,
        const neuron::tools::Roots &) {
    CLI::App app{"Run a program container (neuron-cc -o FILE.nprog) on a neuron device: bind its "
                 "inputs from files (.npy, or raw little-endian values) or a seed, write its "
                 "outputs, and with --check compare them with the graph's double-precision "
                 "reference.",
                 "neuron-run"};
    std::string program_path, device, out_dir, graph_path;
    std::vector<std::string> input_specs;
    std::optional<uint64_t> seed;
    unsigned core = 0, iterations = 1;
    double timeout_s = 120;
    bool raw = false;
    app.add_option("program", program_path, "the program container (.nprog)")->required();
    app.add_option("-i,--input", input_specs,
                   "NAME=FILE: input NAME from FILE (.npy, or raw little-endian values of the "
                   "input's dtype); repeat for each input");
    app.add_option("--seed", seed,
                   "generate the inputs not given with -i, uniform in [-1, 1), from this seed");
    app.add_option("-o,--output-dir", out_dir,
                   "write every output to DIR/NAME.npy (bf16 widened to fp32)");
    app.add_flag("--raw", raw,
                 "with -o: write DIR/NAME.bin, raw little-endian values of the "
                 "output's dtype, instead");
    app.add_option("--check", graph_path,
                   "the IR file the program was compiled from: compare every output with its "
                   "double-precision reference within hw/isa.md's bounds");
    neuron::tools::add_device_option(app, device, "The device to run on, instead of the first");
    app.add_option("--core", core, "the core to run on (0)");
    neuron::tools::positive(
        app.add_option("--iterations", iterations, "jobs to run (1); the outputs are the first's"));
    neuron::tools::positive(
        app.add_option("--timeout", timeout_s, "seconds each job may take (120)"));
    app.footer("Exit status: 0 ok, 1 error, 2 usage error, 6 an output beyond its bound "
               "(--check). " +
               neuron::tools::man_page_footer("neuron-run"));
    if (auto rc = neuron::tools::parse_command_line(app, argc, argv, out, err))
        return *rc;
    neuron::DeviceSelector selector;
    if (auto rc = neuron::tools::select_device(app, device, selector, err))
        return *rc;
    if (raw && out_dir.empty())
        return neuron::tools::usage_error(app, "--raw needs -o DIR", err);
    if (fs::path(program_path).extension() == ".nir")
        return neuron::tools::usage_error(
            app,
            fmt::format("{}: an IR file, not a program container: compile it first "
                        "(neuron-cc {} -o {}), then run the .nprog",
                        program_path, program_path,
                        fs::path(program_path).replace_extension(".nprog").string()),
            err);

    const neuron::Program program = neuron::Program::load_file(program_path);
    std::map<std::string, fs::path> files;
    for (const std::string &spec : input_specs) {
        const size_t eq = spec.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
            return neuron::tools::usage_error(app, fmt::format("-i '{}': expected NAME=FILE", spec),
                                              err);
        const std::string name = spec.substr(0, eq);
        const neuron::ArgumentInfo *a = program.find_argument(name);
        if (!a || a->direction != neuron::Direction::in) {
            std::string names;
            for (const auto &x : program.arguments())
                if (x.direction == neuron::Direction::in)
                    names += (names.empty() ? "" : ", ") + x.name;
            err << fmt::format("neuron-run: -i {}: program '{}' has no input '{}' (its inputs: "
                               "{})\n",
                               spec, program.name(), name, names);
            return neuron::tools::exit_usage;
        }
        files[name] = spec.substr(eq + 1);
    }

    // Where the outputs go, before the run: a -o that cannot be one fails now.
    if (!out_dir.empty()) {
        std::error_code ec;
        fs::create_directories(out_dir, ec);
        if (ec || !fs::is_directory(out_dir))
            throw std::runtime_error(fmt::format("-o {}: cannot create the directory: {}", out_dir,
                                                 ec ? ec.message() : std::strerror(ENOTDIR)));
    }

    std::optional<nc::Graph> graph;
    if (!graph_path.empty()) {
        graph = nc::load(graph_path);
        match_graph(*graph, program, graph_path);
    }

    // The inputs, in the program's order; what each is, said once the
    // device opened (no lines before a "no device" error).
    std::map<std::string, std::vector<std::byte>> inputs;
    std::string input_lines;
    uint64_t position = 0;
    for (const auto &a : program.arguments()) {
        if (a.direction != neuron::Direction::in)
            continue;
        if (auto it = files.find(a.name); it != files.end()) {
            inputs[a.name] = load_input(a, it->second);
            input_lines +=
                fmt::format("input {} {}: {}\n", a.name, type_of(a), it->second.string());
        } else if (seed) {
            nc::Type t{a.dtype, std::vector<int64_t>(a.shape.begin(), a.shape.end())};
            inputs[a.name] = nc::pack(a.dtype, nc::seeded_values(t, *seed + position));
            input_lines += fmt::format("input {} {}: generated, seed {}\n", a.name, type_of(a),
                                       *seed + position);
        } else {
            err << fmt::format("neuron-run: input '{}' ({}, {} bytes) is not given: name a file "
                               "with -i {}=FILE, or generate it with --seed N\n",
                               a.name, type_of(a), a.size, a.name);
            return neuron::tools::exit_usage;
        }
        position++;
    }

    neuron::Device dev = neuron::open_selected(selector);
    out << input_lines;
    const auto region =
        dev.info().device_memory_size ? neuron::Region::device : neuron::Region::host;
    const neuron::LoadedProgram lp = dev.load(program);
    std::deque<neuron::Buffer> buffers; // the bindings point at them
    std::map<std::string, size_t> output_buffer;
    neuron::Arguments args;
    for (const auto &a : program.arguments()) {
        if (a.direction == neuron::Direction::in) {
            buffers.push_back(dev.allocate(a.size, region));
            buffers.back().write(0, inputs.at(a.name));
        } else if (a.direction == neuron::Direction::out) {
            buffers.push_back(dev.allocate(a.size, region));
            // not BO_CREATE's zeros: an output element the program does
            // not write shows as a NaN pattern
            buffers.back().write(0, std::vector<std::byte>(a.size, std::byte{0xff}));
            output_buffer[a.name] = buffers.size() - 1;
        } else {
            continue;
        }
        args.bind(a.name, buffers.back().range(0, a.size));
    }
    const neuron::Queue q = dev.queue(core);
    const auto timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(timeout_s));
    std::vector<double> job_ms;
    std::map<std::string, std::vector<std::byte>> outputs;
    for (unsigned it = 0; it < iterations; it++) {
        const auto t0 = std::chrono::steady_clock::now();
        const neuron::Fence f = q.submit(lp, args);
        if (!f.wait_for(timeout))
            throw std::runtime_error(
                fmt::format("{} did not finish within {} s", f.label(), timeout_s));
        job_ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
        if (it == 0)
            for (const auto &[name, i] : output_buffer) {
                std::vector<std::byte> b(program.find_argument(name)->size);
                buffers[i].read(0, b);
                outputs[name] = std::move(b);
            }
    }
    std::sort(job_ms.begin(), job_ms.end());
    out << fmt::format("ran '{}' on {} core {}: {} job{}, {:.3f} ms (fastest), {:.3f} ms "
                       "(median), submit to fence\n",
                       program.name(), dev.path(), core, iterations, iterations == 1 ? "" : "s",
                       job_ms.front(), job_ms[job_ms.size() / 2]);

    if (!out_dir.empty()) {
        for (const auto &[name, bytes] : outputs) {
            const neuron::ArgumentInfo &a = *program.find_argument(name);
            const fs::path path = fs::path(out_dir) / (name + (raw ? ".bin" : ".npy"));
            if (raw) {
                write_file(path, bytes);
            } else if (a.dtype == neuron::DType::bf16) {
                const std::vector<float> v = nc::unpack(a.dtype, bytes.data(), a.size / 2);
                std::vector<std::byte> f4(v.size() * 4);
                std::memcpy(f4.data(), v.data(), f4.size());
                write_file(path, nrun::encode_npy("<f4", a.shape, f4));
            } else {
                write_file(path, nrun::encode_npy(nrun::descr_of(a.dtype), a.shape, bytes));
            }
            out << fmt::format("output {} {}: {}\n", name, type_of(a), path.string());
        }
    }
    if (graph && !check_outputs(*graph, program, inputs, outputs, out)) {
        out << "FAIL: an output differs from the reference beyond its bound\n";
        return neuron::tools::exit_mismatch;
    }
    if (graph)
        out << "PASS: every output within its bound\n";
    return neuron::tools::exit_ok;
}

} // namespace

int main(int argc, char **argv) {
    return neuron::tools::tool_main("neuron-run", run, argc, argv);
}
