// SPDX-License-Identifier: MIT
#include <neuron/compiler/text.hpp>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "op_record.hpp"

namespace neuron::compiler {

ParseError::ParseError(unsigned line, unsigned column, const std::string &message)
    : std::runtime_error(message), line_(line), column_(column) {}

namespace {

// One line of the text, consumed left to right.
class Cursor {
  public:
    Cursor(std::string_view line, unsigned lineno, const std::string &source)
        : s_(line), line_(lineno), source_(source) {}

    [[noreturn]] void fail(const std::string &why, size_t at) const {
        throw ParseError(line_, static_cast<unsigned>(at + 1),
                         fmt::format("{}:{}:{}: {}", source_, line_, at + 1, why));
    }
    [[noreturn]] void fail(const std::string &why) const { fail(why, pos_); }

    void skip() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r'))
            pos_++;
        if (pos_ < s_.size() && s_[pos_] == '#')
            pos_ = s_.size();
    }
    bool done() {
        skip();
        return pos_ >= s_.size();
    }
    size_t pos() const { return pos_; }
    bool peek(char c) {
        skip();
        return pos_ < s_.size() && s_[pos_] == c;
    }
    bool accept(char c) {
        if (!peek(c))
            return false;
        pos_++;
        return true;
    }
    void expect(char c, const char *what) {
        if (!accept(c))
            fail(fmt::format("expected '{}' {}, found {}", c, what, found()));
    }
    std::string found() {
        skip();
        if (pos_ >= s_.size())
            return "the end of the line";
        return fmt::format("'{}'", s_.substr(pos_, std::min<size_t>(12, s_.size() - pos_)));
    }
    bool at_ident() {
        skip();
        return pos_ < s_.size() &&
               (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_');
    }
    std::string ident(const char *what) {
        if (!at_ident())
            fail(fmt::format("expected {}, found {}", what, found()));
        size_t b = pos_;
        while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) ||
                                    s_[pos_] == '_' || s_[pos_] == '.'))
            pos_++;
        return std::string(s_.substr(b, pos_ - b));
    }
    bool at_number() {
        skip();
        if (pos_ >= s_.size())
            return false;
        char c = s_[pos_];
        return std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.';
    }
    double number(const char *what) {
        if (!at_number())
            fail(fmt::format("expected {}, found {}", what, found()));
        std::string tok;
        size_t b = pos_;
        while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) ||
                                    s_[pos_] == '-' || s_[pos_] == '+' || s_[pos_] == '.'))
            pos_++;
        tok = std::string(s_.substr(b, pos_ - b));
        char *end = nullptr;
        errno = 0;
        double v = std::strtod(tok.c_str(), &end);
        if (end != tok.c_str() + tok.size() || tok.empty())
            fail(fmt::format("'{}' is not a number ({})", tok, what), b);
        return v;
    }
    int64_t integer(const char *what) {
        size_t b = (skip(), pos_);
        double v = number(what);
        if (v != static_cast<double>(static_cast<int64_t>(v)))
            fail(fmt::format("{} must be an integer", what), b);
        return static_cast<int64_t>(v);
    }
    std::vector<int64_t> int_list(const char *what) {
        std::vector<int64_t> v;
        expect('[', what);
        if (accept(']'))
            return v;
        do
            v.push_back(integer(what));
        while (accept(','));
        expect(']', fmt::format("to close the {}", what).c_str());
        return v;
    }

  private:
    std::string_view s_;
    size_t pos_ = 0;
    unsigned line_;
    const std::string &source_;
};

Type parse_type(Cursor &c) {
    size_t at = (c.skip(), c.pos());
    std::string dt = c.ident("a dtype (fp32, bf16, fp16, int32)");
    auto t = dtype_from_string(dt);
    if (!t)
        c.fail(fmt::format("unknown dtype '{}' (fp32, bf16, fp16, int32)", dt), at);
    Type ty{*t, {}};
    ty.shape = c.int_list("shape");
    return ty;
}

// The shortest text that reads back as the same float.
std::string fmt_float(float v) {
    return fmt::format("{}", v);
}

} // namespace

Graph parse(std::string_view text, const std::string &source) {
    Graph g;
    bool named = false;
    unsigned lineno = 0;
    size_t b = 0;
    while (b <= text.size()) {
        size_t e = text.find('\n', b);
        if (e == std::string_view::npos)
            e = text.size();
        std::string_view line = text.substr(b, e - b);
        b = e + 1;
        lineno++;
        Cursor c(line, lineno, source);
        if (c.done())
            continue;
        size_t at = c.pos();
        std::string word = c.ident("a statement (graph, input, const, output or a value name)");
        auto guard = [&](auto &&f) {
            try {
                f();
            } catch (const GraphError &err) {
                c.fail(err.what(), at);
            }
        };
        if (word == "graph") {
            if (named)
                c.fail("a second 'graph' statement", at);
            g.set_name(c.ident("the graph's name"));
            named = true;
        } else if (word == "input") {
            std::string name = c.ident("the input's name");
            c.expect(':', "after the input's name");
            Type t = parse_type(c);
            guard([&] { g.input(name, t); });
        } else if (word == "const") {
            std::string name = c.ident("the constant's name");
            c.expect(':', "after the constant's name");
            Type t = parse_type(c);
            c.expect('=', "before the constant's values");
            ConstantInit init;
            if (c.accept('[')) {
                if (!c.accept(']')) {
                    do
                        init.values.push_back(static_cast<float>(c.number("a value")));
                    while (c.accept(','));
                    c.expect(']', "to close the values");
                }
            } else {
                size_t fat = (c.skip(), c.pos());
                std::string f = c.ident("'[' or uniform(seed=..., scale=...)");
                if (f != "uniform")
                    c.fail(fmt::format("unknown initializer '{}' (a list or uniform)", f), fat);
                c.expect('(', "after uniform");
                bool have_seed = false;
                do {
                    size_t kat = (c.skip(), c.pos());
                    std::string k = c.ident("seed or scale");
                    c.expect('=', "after the key");
                    if (k == "seed") {
                        int64_t s = c.integer("the seed");
                        if (s < 0)
                            c.fail("the seed is >= 0", kat);
                        init.seed = static_cast<uint64_t>(s);
                        have_seed = true;
                    } else if (k == "scale") {
                        init.scale = static_cast<float>(c.number("the scale"));
                    } else {
                        c.fail(fmt::format("uniform has no argument '{}'", k), kat);
                    }
                } while (c.accept(','));
                c.expect(')', "to close uniform(");
                if (!have_seed)
                    c.fail("uniform needs seed=", fat);
            }
            guard([&] { g.constant(name, t, init); });
        } else if (word == "output") {
            do {
                size_t oat = (c.skip(), c.pos());
                std::string name = c.ident("an output's name");
                auto n = g.find(name);
                if (!n)
                    c.fail(fmt::format("output '{}' is not defined", name), oat);
                guard([&] { g.mark_output(*n); });
            } while (c.accept(','));
        } else {
            // NAME [: TYPE][, NAME [: TYPE]...] = OP(OPERANDS, KEY=VALUE...);
            // several names for the pieces of a split
            std::vector<std::string> names{word};
            std::vector<std::optional<Type>> declared(1);
            if (c.accept(':'))
                declared[0] = parse_type(c);
            while (c.accept(',')) {
                names.push_back(c.ident("the name of a value"));
                declared.emplace_back();
                if (c.accept(':'))
                    declared.back() = parse_type(c);
            }
            c.expect('=', "after the value's name");
            size_t opat = (c.skip(), c.pos());
            std::string opname = c.ident("an operator");
            auto op = op_from_string(opname);
            if (!op)
                c.fail(fmt::format("unknown operator '{}'", opname), opat);
            if (names.size() > 1 && *op != Op::split)
                c.fail(fmt::format("{} values for {}, which makes one (split makes several)",
                                   names.size(), opname),
                       at);
            c.expect('(', "after the operator");
            std::vector<uint32_t> operands;
            Attrs a;
            bool literal = false;
            if (!c.accept(')')) {
                do {
                    size_t aat = (c.skip(), c.pos());
                    if (c.at_number()) {
                        if (!is_binary(*op))
                            c.fail(fmt::format("{} takes no literal operands", opname), aat);
                        if (literal)
                            c.fail("only one operand may be a literal", aat);
                        a.scalar = static_cast<float>(c.number("a literal"));
                        a.scalar_first = operands.empty();
                        literal = true;
                        continue;
                    }
                    std::string id = c.ident("an operand or key=value");
                    if (c.accept('=')) {
                        if (id == "transpose_a" || id == "transpose_b" || id == "causal" ||
                            id == "keepdim") {
                            size_t vat = (c.skip(), c.pos());
                            std::string v = c.ident("true or false");
                            if (v != "true" && v != "false")
                                c.fail("expected true or false", vat);
                            (id == "transpose_a"   ? a.transpose_a
                             : id == "transpose_b" ? a.transpose_b
                             : id == "causal"      ? a.causal
                                                   : a.keepdim) = v == "true";
                        } else if (id == "eps") {
                            a.eps = static_cast<float>(c.number("eps"));
                        } else if (id == "scale") {
                            a.scale = static_cast<float>(c.number("the scale"));
                        } else if (id == "p") {
                            a.p = static_cast<float>(c.number("the probability"));
                        } else if (id == "dtype") {
                            size_t vat = (c.skip(), c.pos());
                            const std::string v = c.ident("a dtype");
                            if (!(a.dtype = dtype_from_string(v)))
                                c.fail(fmt::format("unknown dtype '{}'", v), vat);
                        } else if (id == "shape" || id == "perm" || id == "sizes" || id == "dims") {
                            if ((id == "sizes") != (*op == Op::split))
                                c.fail(fmt::format("{} has no attribute '{}'", opname, id), aat);
                            a.dims = c.int_list(id.c_str());
                        } else if (id == "axis") {
                            a.axis = c.integer("the axis");
                        } else if (id == "start") {
                            a.start = c.integer("start");
                        } else if (id == "end") {
                            a.end = c.integer("end");
                        } else {
                            c.fail(fmt::format("unknown attribute '{}'", id), aat);
                        }
                        continue;
                    }
                    auto n = g.find(id);
                    if (!n)
                        c.fail(
                            fmt::format("'{}' is not defined (values are defined before use)", id),
                            aat);
                    operands.push_back(*n);
                } while (c.accept(','));
                c.expect(')', "to close the operands");
            }
            if (literal && a.scalar_first && operands.empty())
                a.scalar_first = false;
            guard([&] {
                std::vector<uint32_t> ids;
                if (*op == Op::split) {
                    if (operands.size() != 1)
                        throw GraphError(fmt::format("'{}' (split): takes 1 operand, not {}",
                                                     fmt::join(names, ", "), operands.size()));
                    ids = g.split(names, operands[0], a);
                } else {
                    ids = {g.add(*op, word, operands, a)};
                }
                for (size_t i = 0; i < ids.size(); i++)
                    if (declared[i] && g.node(ids[i]).type != *declared[i])
                        throw GraphError(fmt::format("'{}' is declared {} but {} gives {}",
                                                     names[i], to_string(*declared[i]), opname,
                                                     to_string(g.node(ids[i]).type)));
            });
        }
        if (!c.done())
            c.fail(fmt::format("unexpected {} after the statement", c.found()));
    }
    return g;
}

Graph load(const std::filesystem::path &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f)
        throw std::runtime_error(
            fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
    std::stringstream ss;
    ss << f.rdbuf();
    return parse(ss.str(), path.string());
}

std::string print(const Graph &g) {
    std::string out = fmt::format("graph {}\n", g.name());
    for (const Node &n : g.nodes()) {
        if (n.op == Op::input) {
            out += fmt::format("input {}: {}\n", n.name, to_string(n.type));
            continue;
        }
        if (n.op == Op::constant) {
            if (n.init.seed) {
                out += fmt::format("const {}: {} = uniform(seed={}, scale={})\n", n.name,
                                   to_string(n.type), *n.init.seed, fmt_float(n.init.scale));
            } else {
                std::vector<std::string> v;
                for (float x : n.init.values)
                    v.push_back(fmt_float(x));
                out += fmt::format("const {}: {} = [{}]\n", n.name, to_string(n.type),
                                   fmt::join(v, ", "));
            }
            continue;
        }
        // The pieces of a split: one statement, at the first piece.
        std::vector<std::string> results{fmt::format("{}: {}", n.name, to_string(n.type))};
        if (n.op == Op::split) {
            if (n.start != 0)
                continue;
            const auto first = static_cast<size_t>(&n - g.nodes().data());
            for (size_t k = 1; k < n.dims.size(); k++) {
                const Node &piece = g.node(static_cast<uint32_t>(first + k));
                results.push_back(fmt::format("{}: {}", piece.name, to_string(piece.type)));
            }
        }
        std::vector<std::string> args;
        for (uint32_t o : n.operands)
            args.push_back(g.node(o).name);
        if (n.scalar)
            args.insert(n.scalar_first ? args.begin() : args.end(), fmt_float(*n.scalar));
        if (n.transpose_a)
            args.push_back("transpose_a=true");
        if (n.transpose_b)
            args.push_back("transpose_b=true");
        if (const auto own = lower::op_record(n.op).text_attributes) {
            const std::vector<std::string> attributes = own(n);
            args.insert(args.end(), attributes.begin(), attributes.end());
        }
        if (n.causal)
            args.push_back("causal=true");
        out += fmt::format("{} = {}({})\n", fmt::join(results, ", "), to_string(n.op),
                           fmt::join(args, ", "));
    }
    if (!g.outputs().empty()) {
        std::vector<std::string> o;
        for (uint32_t i : g.outputs())
            o.push_back(g.node(i).name);
        out += fmt::format("output {}\n", fmt::join(o, ", "));
    }
    return out;
}

} // namespace neuron::compiler
