// SPDX-License-Identifier: MIT
// What the operator tools' command lines share: exit statuses, --help and
// --version, usage errors, main()'s last-resort handler and the messages for
// a machine without the driver or a device.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <neuron/device.hpp>

namespace CLI {
class App;
class Option;
} // namespace CLI

namespace neuron::tools {

struct Driver;
struct Roots;

/// Exit statuses, the same in every tool (documented in each man page).
enum Exit : int {
    exit_ok = 0,
    exit_error = 1,      ///< unexpected failure, or cannot serve
    exit_usage = 2,      ///< bad command line
    exit_no_driver = 3,  ///< the neuron module is not loaded
    exit_no_devices = 4, ///< the module is loaded but has no device
    exit_no_access = 5,  ///< listed, but some node cannot be opened by this user
    exit_mismatch = 6,   ///< neuron-run --check: an output beyond its reference's bound
};

/// The command not found (neuron-profile capture), as the shells say it.
inline constexpr int exit_command_not_found = 127;

/// Adds -V,--version to @p app and parses the command line (docs/tools.md,
/// "Command lines"). Returns the status to exit with now (--help or
/// --version printed to @p out, a usage error to @p err, with a "did you
/// mean" for a misspelt option or command), or nothing when the tool goes
/// on. @p man_page, when given, ends --help: "See TOOL(1)" and where the
/// page is when man would not find it.
std::optional<int> parse_command_line(CLI::App &app, int argc, const char *const *argv,
                                      std::ostream &out, std::ostream &err);

/// Prints "TOOL: @p what" and where the options are; returns exit_usage.
int usage_error(const CLI::App &app, std::string_view what, std::ostream &err);

/// The closest of @p candidates to @p word when close enough to be a
/// misspelling of it (letter case aside); empty otherwise.
std::string closest_match(std::string_view word, const std::vector<std::string> &candidates);

/// Checks that @p option's value is a number from @p lo to @p hi: anything
/// else is a usage error that says so ("--interval: 'abc' is not a number
/// from 0.05 to 3600"). Returns @p option.
CLI::Option *in_range(CLI::Option *option, double lo, double hi);

/// Checks that @p option's value is a number above zero. Returns @p option.
CLI::Option *positive(CLI::Option *option);

/// Checks that @p option's value is one of @p choices: anything else is a
/// usage error listing them, with a "did you mean" for a misspelling.
/// Returns @p option.
CLI::Option *one_of(CLI::Option *option, std::vector<std::string> choices);

/// Adds -d,--device SELECTOR, the same in every tool: an index, a device
/// node, a PCI address or sim[:OPTIONS] (neuron::DeviceSelector).
CLI::Option *add_device_option(CLI::App &app, std::string &value, std::string_view what);

/// The device selector of -d (when given) or $NEURON_DEVICE. A selector that
/// does not parse is a usage error naming its source: its status is returned.
std::optional<int> select_device(const CLI::App &app, const std::string &value,
                                 neuron::DeviceSelector &sel, std::ostream &err);

/// "See TOOL(1)." and, when the page is not where man looks (a build tree),
/// the MANPATH that finds it: the footer of every tool's --help.
std::string man_page_footer(std::string_view tool);

/// Prints why no device is there, from the driver's state, and what to do,
/// naming the device asked for (@p sel's source) when one was; returns
/// exit_no_driver or exit_no_devices.
int no_devices(const Driver &driver, const neuron::DeviceSelector &sel, std::ostream &err);

using ToolRun = int (*)(int argc, const char *const *argv, std::ostream &out, std::ostream &err,
                        const Roots &roots);

/// A tool's exit status once standard output is flushed: @p status, or,
/// when what it wrote there could not be written (a full disk), exit_error
/// (if @p status was exit_ok) after "TOOL: standard output: cannot write
/// it: REASON" on standard error.
int output_checked(std::string_view tool, int status);

/// main() of a tool: runs @p run on the real roots and output_checked();
/// an exception that got this far is printed with the tool's name and
/// exits with exit_error.
int tool_main(std::string_view tool, ToolRun run, int argc, char **argv);

} // namespace neuron::tools
