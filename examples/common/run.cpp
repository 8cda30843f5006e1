// SPDX-License-Identifier: MIT
#include "common/run.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

#include <fmt/format.h>
#include <neuron/neuron.hpp>

namespace nex {

using namespace neuron;
using clk = std::chrono::steady_clock;

namespace {
double ms_since(clk::time_point t0) {
    return std::chrono::duration<double, std::milli>(clk::now() - t0).count();
}
} // namespace

DeviceRun run_on_device(const Case &c, const DeviceRunOptions &o) {
    DeviceRun r;
    Device dev = o.device.empty() ? Device::open_first() : Device::open(o.device);
    r.device = dev.path();
    const Region region = dev.info().device_memory_size ? Region::device : Region::host;

    auto t0 = clk::now();
    LoadedProgram lp = dev.load(c.program);
    r.load_ms = ms_since(t0);

    t0 = clk::now();
    std::vector<Buffer> inputs;
    Arguments args;
    for (const auto &[name, bytes] : c.inputs) {
        if (bytes.size() != argument_size(c.program, name))
            throw Error(errc::invalid_argument,
                        fmt::format("input '{}' has {} bytes, the program's argument {}", name,
                                    bytes.size(), argument_size(c.program, name)));
        inputs.push_back(dev.allocate(bytes.size(), region));
        inputs.back().write(0, bytes);
    }
    for (size_t i = 0; i < c.inputs.size(); i++)
        args.bind(c.inputs[i].first, inputs[i].range(0, c.inputs[i].second.size()));
    const uint64_t out_size = argument_size(c.program, c.output);
    Buffer out = dev.allocate(out_size, region);
    // Garbage, not BO_CREATE's zeros: every byte of the output must be written.
    out.write(0, std::vector<std::byte>(out_size, std::byte{0xa5}));
    args.bind(c.output, out.range(0, out_size));
    r.upload_ms = ms_since(t0);

    Queue q = dev.queue(o.core);
    const auto timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(o.timeout_s));
    for (unsigned it = 0; it < std::max(1u, o.iterations); it++) {
        t0 = clk::now();
        Fence f = q.submit(lp, args);
        if (!f.wait_for(timeout))
            throw Error(errc::timeout,
                        fmt::format("{} did not finish within {} s", f.label(), o.timeout_s));
        r.job_ms.push_back(ms_since(t0));
        if (it == 0) {
            auto rb = clk::now();
            r.output.resize(out_size);
            out.read(0, r.output);
            r.readback_ms = ms_since(rb);
        }
    }
    return r;
}

namespace {

void usage(std::FILE *f, const std::string &name, const std::string &summary,
           const std::vector<DType> &dtypes) {
    std::string dts;
    for (DType t : dtypes)
        dts += (dts.empty() ? "" : "|") + std::string(to_string(t));
    std::fprintf(f,
                 "usage: %s [--dtype %s] [--device SPEC] [--core N] [--iterations N]\n"
                 "       %*s [--seed N] [--save FILE] [--disassemble]\n"
                 "%s\n"
                 "Runs the program on a neuron device and checks it against a CPU reference\n"
                 "in double precision. Exit status: 0 within the documented tolerance,\n"
                 "1 beyond it, 2 on any error.\n"
                 "  --device SPEC   device index, node (/dev/accel/accel0) or PCI address\n"
                 "  --save FILE     also write the program container (.nprog) to FILE\n"
                 "  --disassemble   print the program and exit without running it\n",
                 name.c_str(), dts.c_str(), static_cast<int>(name.size()), "", summary.c_str());
}

} // namespace

int example_main(int argc, char **argv, const std::string &name, const std::string &summary,
                 const std::vector<DType> &dtypes,
                 const std::function<Case(DType, uint64_t)> &make) {
    DType dt = dtypes.front();
    DeviceRunOptions o;
    uint64_t seed = 1;
    std::string save;
    bool disasm = false;
    try {
        for (int i = 1; i < argc; i++) {
            std::string_view a = argv[i];
            auto value = [&]() -> std::string {
                if (i + 1 >= argc)
                    throw std::invalid_argument(fmt::format("{} needs a value", a));
                return argv[++i];
            };
            if (a == "--help" || a == "-h") {
                usage(stdout, name, summary, dtypes);
                return 0;
            } else if (a == "--dtype") {
                std::string v = value();
                auto it = std::find_if(dtypes.begin(), dtypes.end(),
                                       [&](DType t) { return v == to_string(t); });
                if (it == dtypes.end())
                    throw std::invalid_argument(fmt::format("--dtype {}: not supported", v));
                dt = *it;
            } else if (a == "--device") {
                o.device = value();
            } else if (a == "--core") {
                o.core = static_cast<unsigned>(std::stoul(value()));
            } else if (a == "--iterations") {
                o.iterations = static_cast<unsigned>(std::stoul(value()));
            } else if (a == "--seed") {
                seed = std::stoull(value());
            } else if (a == "--save") {
                save = value();
            } else if (a == "--disassemble") {
                disasm = true;
            } else {
                throw std::invalid_argument(fmt::format("unknown option '{}'", a));
            }
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
        usage(stderr, name, summary, dtypes);
        return 2;
    }

    try {
        auto t0 = clk::now();
        Case c = make(dt, seed);
        double build_ms = ms_since(t0) - c.reference_ms;
        if (disasm) {
            std::fputs(disassemble(c.program).c_str(), stdout);
            return 0;
        }
        if (!save.empty())
            c.program.save(save);
        fmt::print("{}: {}\n", name, c.title);
        fmt::print("program: {}\n", describe_program(c));
        fmt::print("host: program built in {:.1f} ms, CPU reference in {:.1f} ms\n", build_ms,
                   c.reference_ms);
        std::fflush(stdout);

        DeviceRun r = run_on_device(c, o);
        double best = *std::min_element(r.job_ms.begin(), r.job_ms.end());
        double sum = 0;
        for (double v : r.job_ms)
            sum += v;
        fmt::print("device: {} core {}: load {:.1f} ms, upload {:.1f} ms, job {:.1f} ms "
                   "(best of {}; mean {:.1f} ms), read back {:.1f} ms, {:.3f} GFLOP/s\n",
                   r.device, o.core, r.load_ms, r.upload_ms, best, r.job_ms.size(),
                   sum / static_cast<double>(r.job_ms.size()), r.readback_ms,
                   static_cast<double>(c.flops) / (best * 1e6));
        ErrorStats s = check(c, r.output);
        fmt::print("result: {}\n", describe(s, c.tolerance));
        fmt::print("{}\n", s.ok() ? "PASS" : "FAIL: beyond the documented tolerance");
        return s.ok() ? 0 : 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
        return 2;
    }
}

} // namespace nex
