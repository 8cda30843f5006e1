// SPDX-License-Identifier: MIT
#include "neuron_tools/cli.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <neuron/error.hpp>

#include "neuron_tools/device.hpp"
#include "neuron_tools/sysfs.hpp"
#include "neuron_tools/version.hpp"

namespace neuron::tools {

namespace {

// Edits from @p a to @p b: insertions, deletions, substitutions and swaps
// of two neighbours ("viwe" is one edit from "view").
size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); i++)
        d[i][0] = i;
    for (size_t j = 0; j <= b.size(); j++)
        d[0][j] = j;
    for (size_t i = 1; i <= a.size(); i++)
        for (size_t j = 1; j <= b.size(); j++) {
            d[i][j] = std::min(
                {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

// The long options and the subcommands of @p app.
void names_of(const CLI::App &app, std::vector<std::string> &options,
              std::vector<std::string> &commands) {
    for (const CLI::Option *o : app.get_options())
        for (const std::string &l : o->get_lnames())
            options.push_back("--" + l);
    for (const CLI::App *c : app.get_subcommands([](const CLI::App *) { return true; }))
        commands.push_back(c->get_name());
}

// The app whose options were being parsed: the last subcommand given.
const CLI::App &innermost(const CLI::App &app) {
    const CLI::App *a = &app;
    while (!a->get_subcommands().empty())
        a = a->get_subcommands().back();
    return *a;
}

// What was wrong with the command line. Words left over come first: an
// unknown option (or command) is the mistake to fix, whatever CLI11 found
// missing because of it; a close one gets a "did you mean".
std::string explain(const CLI::App &app, const CLI::ParseError &e) {
    const CLI::App &in = innermost(app);
    std::vector<std::string> options, commands;
    names_of(in, options, commands);
    if (&in != &app) // the tool's own options are valid after a command too
        names_of(app, options, commands);
    for (const std::string &word : in.remaining()) {
        if (word.size() < 2 || word[0] != '-' ||
            word.find_first_not_of("0123456789.-") == std::string::npos)
            continue; // not an option: "-", a negative number
        std::string name = word.substr(0, word.find('='));
        std::string hint;
        if (name.rfind("--", 0) == 0)
            if (auto m = closest_match(name, options); !m.empty())
                hint = fmt::format(" (did you mean {}?)", m);
        return fmt::format("unknown option {}{}", name, hint);
    }
    std::string list;
    for (const std::string &c : commands)
        list += (list.empty() ? "" : ", ") + c;
    if (&in == &app && !commands.empty() && !app.remaining().empty()) {
        const std::string word = app.remaining().front();
        auto m = closest_match(word, commands);
        return fmt::format("'{}' is not a command{}; the commands are {}", word,
                           m.empty() ? "" : fmt::format(" (did you mean {}?)", m), list);
    }
    // CLI11's own wording, in the tools' words.
    const std::string_view what = e.what();
    if (dynamic_cast<const CLI::ExtrasError *>(&e)) {
        std::string words;
        for (const std::string &w : in.remaining())
            words += fmt::format("{}'{}'", words.empty() ? "" : " ", w);
        return fmt::format("unexpected argument{} {}", in.remaining().size() > 1 ? "s" : "", words);
    }
    if (dynamic_cast<const CLI::RequiredError *>(&e)) {
        if (what.starts_with("A subcommand"))
            return fmt::format("a command is required: {}", list);
        // "input is required": a positional argument, named as --help shows it.
        const std::string name(what.substr(0, what.find(' ')));
        const CLI::Option *o = in.get_option_no_throw(name);
        if (o && o->get_positional())
            return fmt::format("missing {}: {}", name, o->get_description());
    }
    if (dynamic_cast<const CLI::ArgumentMismatch *>(&e) && what.ends_with(" missing"))
        return fmt::format("{} needs a value", what.substr(0, what.find(':')));
    // "Could not convert: --count = abc"
    if (constexpr std::string_view prefix = "Could not convert: ";
        dynamic_cast<const CLI::ConversionError *>(&e) && what.starts_with(prefix)) {
        std::string_view rest = what.substr(prefix.size());
        if (auto eq = rest.find(" = "); eq != std::string_view::npos) {
            const std::string name(rest.substr(0, eq));
            const CLI::Option *o = in.get_option_no_throw(name);
            if (!o && &in != &app)
                o = app.get_option_no_throw(name);
            const std::string type = o ? o->get_type_name() : "";
            std::string expected = type.starts_with("UINT")    ? "a whole number, 0 or more"
                                   : type.starts_with("INT")   ? "a whole number"
                                   : type.starts_with("FLOAT") ? "a number"
                                                               : "a value of its kind";
            return fmt::format("{} '{}': expected {}", name, rest.substr(eq + 3), expected);
        }
    }
    return std::string(what);
}

// A number, all of @p text.
std::optional<double> number(const std::string &text) {
    try {
        size_t end = 0;
        double v = std::stod(text, &end);
        if (end == text.size())
            return v;
    } catch (const std::logic_error &) {
    }
    return std::nullopt;
}

} // namespace

std::string closest_match(std::string_view word, const std::vector<std::string> &candidates) {
    auto lower = [](std::string_view w) {
        std::string l(w);
        std::transform(l.begin(), l.end(), l.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        return l;
    };
    const std::string folded = lower(word);
    std::string best;
    size_t best_d = SIZE_MAX;
    for (const std::string &c : candidates) {
        if (c == word)
            return {}; // not a misspelling
        size_t d = edit_distance(folded, lower(c));
        if (d < best_d) {
            best_d = d;
            best = c;
        }
    }
    // A misspelling: at most two edits, and fewer than a third of the word
    // (--JSON for --json is none).
    if (best_d > 2 || best_d * 3 > word.size())
        return {};
    return best;
}

std::optional<int> parse_command_line(CLI::App &app, int argc, const char *const *argv,
                                      std::ostream &out, std::ostream &err) {
    app.set_version_flag("-V,--version", app.get_name() + " " + NEURON_TOOLS_VERSION,
                         "Print the version and exit");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &) {
        out << app.help();
        return exit_ok;
    } catch (const CLI::CallForAllHelp &) {
        out << app.help("", CLI::AppFormatMode::All);
        return exit_ok;
    } catch (const CLI::CallForVersion &e) {
        out << e.what() << "\n";
        return exit_ok;
    } catch (const CLI::ParseError &e) {
        return usage_error(app, explain(app, e), err);
    }
    return std::nullopt;
}

int usage_error(const CLI::App &app, std::string_view what, std::ostream &err) {
    err << app.get_name() << ": " << what << "\nRun " << app.get_name()
        << " --help for the options.\n";
    return exit_usage;
}

CLI::Option *in_range(CLI::Option *option, double lo, double hi) {
    return option->check(CLI::Validator(
        [lo, hi](std::string &text) -> std::string {
            auto v = number(text);
            if (v && *v >= lo && *v <= hi)
                return {};
            return fmt::format("'{}' is not a number from {} to {}", text, lo, hi);
        },
        fmt::format("{}..{}", lo, hi)));
}

CLI::Option *positive(CLI::Option *option) {
    return option->check(CLI::Validator(
        [](std::string &text) -> std::string {
            auto v = number(text);
            if (v && *v > 0)
                return {};
            return fmt::format("'{}' is not a number above 0", text);
        },
        "POSITIVE"));
}

CLI::Option *one_of(CLI::Option *option, std::vector<std::string> choices) {
    std::string list;
    for (const std::string &c : choices)
        list += (list.empty() ? "" : ", ") + c;
    return option->check(CLI::Validator(
        [choices = std::move(choices), list](std::string &text) -> std::string {
            if (std::find(choices.begin(), choices.end(), text) != choices.end())
                return {};
            auto m = closest_match(text, choices);
            return fmt::format("'{}' is not one of {}{}", text, list,
                               m.empty() ? "" : fmt::format(" (did you mean {}?)", m));
        },
        ""));
}

CLI::Option *add_device_option(CLI::App &app, std::string &value, std::string_view what) {
    return app.add_option("-d,--device", value,
                          fmt::format("{}: an index (0), a device node (/dev/accel/accel0), a "
                                      "PCI address (0000:00:03.0) or the simulator (sim, "
                                      "sim:cores=4,mem=1G). Default: $NEURON_DEVICE",
                                      what));
}

std::optional<int> select_device(const CLI::App &app, const std::string &value,
                                 neuron::DeviceSelector &sel, std::ostream &err) {
    try {
        sel = neuron::DeviceSelector::from(app.count("--device") ? std::optional(value)
                                                                 : std::nullopt);
    } catch (const neuron::Error &e) {
        return usage_error(app, e.what(), err);
    }
    return std::nullopt;
}

std::string man_page_footer(std::string_view tool) {
    std::string see = fmt::format("See {}(1).", tool);
    // Run from the build tree: man does not look there.
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    const std::string build = NEURON_TOOLS_BUILD_DIR;
    if (!ec && exe.rfind(build + "/", 0) == 0 &&
        std::filesystem::exists(fmt::format("{}/share/man/man1/{}.1", build, tool), ec))
        see += fmt::format(" From the build tree: MANPATH={}/share/man: man {}", build, tool);
    return see;
}

int no_devices(const Driver &driver, const neuron::DeviceSelector &sel, std::ostream &err) {
    err << "neuron: ";
    if (!sel.source.empty())
        err << sel.source << ": ";
    if (!driver.loaded) {
        err << "driver not loaded: run modprobe neuron, or use the simulator: "
               "-d sim (NEURON_DEVICE=sim)\n";
        return exit_no_driver;
    }
    err << "no devices: the driver is loaded but no device is bound to it "
           "(check lspci -d 1d0f: and the kernel log); or use the simulator: -d sim "
           "(NEURON_DEVICE=sim)\n";
    return exit_no_devices;
}

int output_checked(std::string_view tool, int status) {
    errno = 0;
    std::cout.flush();
    int e = errno;
    if (std::fflush(stdout) != 0 && !e)
        e = errno;
    if (!std::cout.fail() && !std::ferror(stdout))
        return status;
    std::cerr << tool << ": standard output: cannot write it"
              << (e ? fmt::format(": {}", std::strerror(e)) : std::string()) << "\n";
    return status == exit_ok ? exit_error : status;
}

int tool_main(std::string_view tool, ToolRun run, int argc, char **argv) {
    try {
        return output_checked(tool, run(argc, argv, std::cout, std::cerr, Roots::from_env()));
    } catch (const std::exception &e) {
        std::cerr << tool << ": " << e.what() << "\n";
        return exit_error;
    }
}

} // namespace neuron::tools
