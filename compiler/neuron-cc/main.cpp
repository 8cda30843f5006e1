// SPDX-License-Identifier: MIT
// neuron-cc: compiles a graph in the IR's text form into a program
// container (docs/program-format.md) that the device runs.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <neuron/compiler/compile.hpp>
#include <neuron/compiler/text.hpp>

#include "neuron_tools/cli.hpp"

using namespace neuron::compiler;

static int command_line_main(int argc, char **argv) {
    CLI::App app{"Compile a tensor graph (IR text, docs/compiler.md) into a neuron program "
                 "container.",
                 "neuron-cc"};
    std::string input, output;
    bool dump = false, dump_plan = false, disasm = false, times = false, no_fuse = false;
    app.add_option("input", input, "IR file ('-' reads standard input)")->required();
    app.add_option("-o,--output", output,
                   "write the program container here (default: INPUT.nprog, INPUT without "
                   "its .nir, unless only printing)");
    app.add_flag("--dump", dump, "print the graph in canonical text form");
    app.add_flag("--dump-plan", dump_plan, "print the fusion groups and the SBUF layout");
    app.add_flag("--disassemble", disasm, "print the compiled program's listing");
    app.add_flag("--time-passes", times, "print the time of every pass");
    app.add_flag("--no-fuse", no_fuse, "compile every operator on its own");
    std::string isa =
        fmt::format("{}.{}", neuron::isa_version() >> 16, neuron::isa_version() & 0xffff);
    app.add_option("--isa", isa, "the target device's ISA version MAJOR.MINOR")
        ->capture_default_str();
    uint32_t sbuf_bytes = CompileOptions{}.limits.sbuf_bytes;
    neuron::tools::positive(
        app.add_option("--sbuf-bytes", sbuf_bytes,
                       "SBUF bytes per partition of the target core; matmul weights that do not "
                       "fit are streamed from device memory, rows computed in chunks")
            ->capture_default_str());
    app.footer("Exit status: 0 ok, 1 the graph does not compile or the file cannot be "
               "written, 2 usage error. " +
               neuron::tools::man_page_footer("neuron-cc"));
    if (auto status = neuron::tools::parse_command_line(app, argc, argv, std::cout, std::cerr))
        return *status;
    const bool only_printing = dump || dump_plan || disasm || times;
    if (output.empty() && !only_printing) {
        if (input == "-")
            return neuron::tools::usage_error(
                app, "reading standard input: name the program container with -o FILE.nprog",
                std::cerr);
        std::filesystem::path p(input);
        if (p.extension() == ".nir")
            p.replace_extension(".nprog");
        else
            p += ".nprog";
        output = p.string();
    }
    unsigned isa_major = 0, isa_minor = 0;
    if (char end; std::sscanf(isa.c_str(), "%u.%u%c", &isa_major, &isa_minor, &end) != 2 ||
                  isa_major > 0xffff || isa_minor > 0xffff) {
        return neuron::tools::usage_error(
            app, fmt::format("--isa '{}': expected MAJOR.MINOR, e.g. 1.0", isa), std::cerr);
    }
    try {
        Graph g;
        if (input == "-") {
            std::string text, line;
            char buf[4096];
            size_t n;
            while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0)
                text.append(buf, n);
            g = parse(text, "<stdin>");
        } else {
            g = load(input);
        }
        if (dump)
            std::fputs(print(g).c_str(), stdout);
        if (output.empty() && !dump_plan && !disasm && !times)
            return 0; // --dump only
        CompileOptions opt;
        opt.fuse = !no_fuse;
        opt.isa_version = isa_major << 16 | isa_minor;
        opt.limits.sbuf_bytes = sbuf_bytes;
        Compiled c = compile(g, opt);
        if (dump_plan)
            std::fputs(c.plan.c_str(), stdout);
        if (disasm)
            std::fputs(neuron::disassemble(c.program).c_str(), stdout);
        if (times) {
            double total = 0;
            for (const PassTime &t : c.times) {
                std::printf("%-9s %9.3f ms\n", t.pass.c_str(), t.ms);
                total += t.ms;
            }
            std::printf("%-9s %9.3f ms\n", "total", total);
        }
        if (!output.empty()) {
            c.program.save(output);
            if (!only_printing)
                std::fprintf(stderr, "neuron-cc: wrote %s (%zu bytes)\n", output.c_str(),
                             c.program.bytes().size());
        }
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "neuron-cc: %s\n", e.what());
        return 1;
    }
}

int main(int argc, char **argv) {
    return neuron::tools::output_checked("neuron-cc", command_line_main(argc, argv));
}
