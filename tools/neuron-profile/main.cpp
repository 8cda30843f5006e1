// SPDX-License-Identifier: MIT
// neuron-profile: profile the jobs of any program, summarize them, export
// them to the Trace Event format. docs/profiling.md.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <neuron/error.hpp>
#include <neuron/profile.hpp>

#include "neuron_tools/cli.hpp"
#include "profile.hpp"

extern char **environ;

namespace {

// Runs @p argv with $NEURON_PROFILE set to @p out; returns its exit status.
int capture(const std::filesystem::path &out, uint64_t records,
            const std::vector<std::string> &argv) {
    const auto path = std::filesystem::absolute(out);
    {
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        if (!f)
            throw neuron::Error(
                neuron::errc::io_error,
                fmt::format("{}: cannot create it: {}", path.string(), std::strerror(errno)));
    }
    // The profiled processes append to it, and it is read back: a file.
    if (!std::filesystem::is_regular_file(path))
        throw neuron::Error(
            neuron::errc::invalid_argument,
            fmt::format("{}: not a regular file: name a .ntrace file to write", path.string()));
    ::setenv(neuron::ntrace::env_file, path.c_str(), 1);
    if (records)
        ::setenv(neuron::ntrace::env_records, std::to_string(records).c_str(), 1);
    std::vector<char *> args;
    for (const auto &a : argv)
        args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    if (int e = ::posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ)) {
        std::error_code ec;
        std::filesystem::remove(path, ec); // nothing was profiled
        std::fprintf(stderr, "neuron-profile: cannot run %s: %s\n", argv[0].c_str(),
                     std::strerror(e));
        // The shells' statuses: 127 not found, 126 found but not runnable.
        return e == ENOENT ? neuron::tools::exit_command_not_found : 126;
    }
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    // A run without jobs still leaves a valid (empty) file.
    if (std::filesystem::file_size(path) == 0) {
        std::ofstream f(path, std::ios::binary);
        auto h = neuron::ntrace::encode_header();
        f.write(reinterpret_cast<const char *>(h.data()), static_cast<std::streamsize>(h.size()));
    }
    auto jobs = neuron::ntrace::read(path);
    size_t truncated = 0;
    for (const auto &j : jobs)
        truncated += neuron::parse_trace(j.trace).truncated();
    std::fprintf(stderr, "neuron-profile: %zu profiled job%s of '%s' in %s%s (exit status %d)\n",
                 jobs.size(), jobs.size() == 1 ? "" : "s", argv[0].c_str(), out.c_str(),
                 truncated ? fmt::format(", {} truncated", truncated).c_str() : "", rc);
    if (jobs.empty())
        std::fprintf(stderr, "neuron-profile: the command submitted no job through libneuron "
                             "(or its device cannot profile)\n");
    return rc;
}

} // namespace

static int command_line_main(int argc, char **argv) {
    CLI::App app{"Where a program's device time goes, engine by engine: profile its jobs, "
                 "summarize them, export them.",
                 "neuron-profile"};
    app.require_subcommand(1);
    app.footer("Exit status: capture: the command's (127 not found, 126 not runnable); view "
               "and export: 0 ok, 1 error; 2 usage error. " +
               neuron::tools::man_page_footer("neuron-profile"));

    std::string out;
    uint64_t records = 0;
    std::vector<std::string> command;
    auto *cap = app.add_subcommand(
        "capture", "run COMMAND with every job it submits profiled ($NEURON_PROFILE), into a "
                   ".ntrace file");
    cap->add_option("-o,--output", out, "the .ntrace file to write")->required();
    cap->add_option("--records", records,
                    "instructions each job's trace has room for (default 65536)");
    cap->add_option("command", command, "the command to run (after --)")->required();

    std::string file;
    size_t top = 10, stalls = 5;
    auto *view = app.add_subcommand("view", "summarize a .ntrace file in the terminal");
    view->add_option("file", file, "the .ntrace file")->required();
    view->add_option("--top", top, "instructions to list per job (10)");
    view->add_option("--stalls", stalls, "semaphore waits to list per job (5)");

    std::string format = "chrome";
    size_t job = 1;
    auto *exp = app.add_subcommand(
        "export", "write a .ntrace file as a Trace Event JSON, or a job's timeline as SVG, on "
                  "stdout");
    exp->add_option("file", file, "the .ntrace file")->required();
    neuron::tools::one_of(exp->add_option("--format", format,
                                          "the output format: chrome (Trace Event format, "
                                          "every job) or svg (a picture of one job's timeline)"),
                          {"chrome", "svg"});
    neuron::tools::positive(
        exp->add_option("--job", job, "svg: the job to draw, 1 = the first (1)"));

    if (auto status = neuron::tools::parse_command_line(app, argc, argv, std::cout, std::cerr))
        return *status;
    try {
        if (*cap)
            return capture(out, records, command);
        auto jobs = neuron::ntrace::read(file);
        if (*view) {
            std::vector<nprof::JobSummary> s;
            for (size_t i = 0; i < jobs.size(); i++)
                s.push_back(nprof::summarize(jobs[i], i, top, stalls));
            std::cout << nprof::render_view(s);
            return 0;
        }
        if (format == "svg") {
            std::cout << nprof::export_svg(jobs, job - 1);
            return 0;
        }
        std::cout << nprof::export_chrome(jobs).dump() << "\n";
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "neuron-profile: %s\n", e.what());
        return 1;
    }
}

int main(int argc, char **argv) {
    return neuron::tools::output_checked("neuron-profile", command_line_main(argc, argv));
}
