// SPDX-License-Identifier: MIT
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "bench.hpp"

namespace nbench {

Table::Table(std::string id, std::string title, std::string row_heading)
    : id_(std::move(id)), title_(std::move(title)), row_heading_(std::move(row_heading)) {}

Table &Table::column(const std::string &name, const std::string &unit) {
    columns_.push_back(Column{name, unit, {}, {}});
    return *this;
}

Table &Table::ratio(const std::string &name, const std::string &numerator,
                    const std::string &denominator) {
    find_column(numerator);
    find_column(denominator);
    columns_.push_back(Column{name, {}, numerator, denominator});
    return *this;
}

Table &Table::note(std::string text) {
    notes_.push_back(std::move(text));
    return *this;
}

const Table::Column &Table::find_column(const std::string &name) const {
    for (const auto &c : columns_)
        if (c.name == name)
            return c;
    throw std::logic_error(fmt::format("table {}: no column '{}'", id_, name));
}

void Table::set(const std::string &row, const std::string &column, const Stats &s) {
    if (find_column(column).is_ratio())
        throw std::logic_error(fmt::format("table {}: '{}' is a ratio column", id_, column));
    if (std::find(rows_.begin(), rows_.end(), row) == rows_.end())
        rows_.push_back(row);
    cells_[{row, column}] = s;
}

void Table::set(const std::string &row, const std::string &column, const Rounds &rounds,
                const std::string &why_not) {
    if (auto it = rounds.find(column); it != rounds.end())
        set(row, column, Stats::of(it->second));
    else
        skip(row, column, why_not);
}

void Table::set_ratio_by_round(const std::string &row, const std::string &column,
                               const Rounds &rounds, const std::string &numerator,
                               const std::string &denominator, const std::string &why_not) {
    auto num = rounds.find(numerator), den = rounds.find(denominator);
    if (num == rounds.end() || den == rounds.end()) {
        skip(row, column, why_not);
        return;
    }
    std::vector<double> ratios;
    for (size_t i = 0; i < std::min(num->second.size(), den->second.size()); i++)
        if (den->second[i] != 0)
            ratios.push_back(num->second[i] / den->second[i]);
    set(row, column, Stats::of(std::move(ratios)));
}

void Table::skip(const std::string &row, const std::string &column, std::string reason) {
    find_column(column);
    if (std::find(rows_.begin(), rows_.end(), row) == rows_.end())
        rows_.push_back(row);
    skipped_[{row, column}] = std::move(reason);
}

std::optional<Stats> Table::get(const std::string &row, const std::string &column) const {
    auto it = cells_.find({row, column});
    if (it == cells_.end())
        return std::nullopt;
    return it->second;
}

std::optional<double> Table::ratio_value(const std::string &row, const Column &c) const {
    auto num = get(row, c.numerator), den = get(row, c.denominator);
    if (!num || !den || den->median == 0)
        return std::nullopt;
    return num->median / den->median;
}

namespace {

/// Three significant digits, without exponent for the ranges benchmarks see.
std::string number(double v) {
    const double a = std::fabs(v);
    if (a >= 100 || a == 0)
        return fmt::format("{:.0f}", v);
    if (a >= 10)
        return fmt::format("{:.1f}", v);
    if (a >= 1)
        return fmt::format("{:.2f}", v);
    if (a >= 0.01)
        return fmt::format("{:.3f}", v);
    return fmt::format("{:.2e}", v);
}

nlohmann::json stats_json(const Stats &s) {
    return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"runs", s.runs}};
}

} // namespace

std::string Table::render() const {
    // Measured cells read "median [min-max]"; ratio cells "x0.42".
    std::vector<std::string> heads{row_heading_};
    for (const auto &c : columns_)
        heads.push_back(c.is_ratio() ? c.name : fmt::format("{} ({})", c.name, c.unit));
    std::vector<std::vector<std::string>> lines{heads};
    for (const auto &row : rows_) {
        std::vector<std::string> cells{row};
        for (const auto &c : columns_) {
            if (c.is_ratio()) {
                auto v = ratio_value(row, c);
                cells.push_back(v ? fmt::format("x{}", number(*v)) : "-");
            } else if (auto s = get(row, c.name)) {
                cells.push_back(
                    fmt::format("{} [{}-{}]", number(s->median), number(s->min), number(s->max)));
            } else {
                cells.push_back("-");
            }
        }
        lines.push_back(std::move(cells));
    }
    std::vector<size_t> width(heads.size(), 0);
    for (const auto &l : lines)
        for (size_t i = 0; i < l.size(); i++)
            width[i] = std::max(width[i], l[i].size());
    std::string out = fmt::format("{}\n", title_);
    for (const auto &l : lines) {
        std::string text;
        for (size_t i = 0; i < l.size(); i++)
            text += i == 0 ? fmt::format("{:<{}}", l[i], width[i])
                           : fmt::format("  {:>{}}", l[i], width[i]);
        out += "  " + text + "\n";
    }
    for (const auto &[cell, reason] : skipped_)
        out += fmt::format("  - {} / {}: {}\n", cell.first, cell.second, reason);
    for (const auto &n : notes_)
        out += fmt::format("  {}\n", n);
    return out;
}

nlohmann::json Table::to_json() const {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto &row : rows_) {
        nlohmann::json cells = nlohmann::json::object();
        for (const auto &c : columns_) {
            if (c.is_ratio()) {
                if (auto v = ratio_value(row, c))
                    cells[c.name] = {{"ratio", *v}, {"of", {c.numerator, c.denominator}}};
            } else if (auto s = get(row, c.name)) {
                cells[c.name] = stats_json(*s);
                cells[c.name]["unit"] = c.unit;
            } else if (auto it = skipped_.find({row, c.name}); it != skipped_.end()) {
                cells[c.name] = {{"skipped", it->second}};
            }
        }
        rows.push_back({{"row", row}, {"cells", cells}});
    }
    return {{"title", title_}, {"row_heading", row_heading_}, {"rows", rows}, {"notes", notes_}};
}

Table &Report::table(const std::string &id, const std::string &title,
                     const std::string &row_heading) {
    if (Table *t = find(id))
        return *t;
    return tables_.emplace_back(id, title, row_heading);
}

Table *Report::find(const std::string &id) {
    for (auto &t : tables_)
        if (t.id() == id)
            return &t;
    return nullptr;
}

size_t Report::skipped() const {
    size_t n = 0;
    for (const auto &t : tables_)
        n += t.skipped();
    return n;
}

std::string Report::render() const {
    std::string out;
    for (const auto &t : tables_)
        out += t.render() + "\n";
    return out;
}

nlohmann::json Report::to_json() const {
    nlohmann::json tables = nlohmann::json::object();
    for (const auto &t : tables_)
        tables[t.id()] = t.to_json();
    return {{"context", context_}, {"tables", tables}};
}

} // namespace nbench
