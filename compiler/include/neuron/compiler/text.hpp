// SPDX-License-Identifier: MIT
// The text form of the IR (docs/compiler.md, "Text form"): one statement
// per line, readable, diffable, and printed so that parsing it gives the
// same graph back.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include <neuron/compiler/graph.hpp>

namespace neuron::compiler {

/// A problem in IR text: where (line and column, 1-based), what and why.
class ParseError : public std::runtime_error {
  public:
    ParseError(unsigned line, unsigned column, const std::string &message);
    unsigned line() const { return line_; }
    unsigned column() const { return column_; }

  private:
    unsigned line_, column_;
};

/// Parses IR text; @p source names it in errors ("<file>:12:5: ...").
Graph parse(std::string_view text, const std::string &source = "<text>");
Graph load(const std::filesystem::path &path);
/// The canonical text of @p g: parse(print(g)) == g.
std::string print(const Graph &g);

} // namespace neuron::compiler
