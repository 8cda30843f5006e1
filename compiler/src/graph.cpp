// SPDX-License-Identifier: MIT
#include <neuron/compiler/graph.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "shape.hpp"

namespace neuron::compiler {

namespace {

int64_t product(const Shape &s) {
    int64_t n = 1;
    for (int64_t d : s)
        n *= d;
    return n;
}

uint16_t to_half(float f) {
    uint32_t u = std::bit_cast<uint32_t>(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    if (std::isnan(f))
        return static_cast<uint16_t>(sign | 0x7e00u);
    float a = std::fabs(f);
    if (a >= 65520.0f)
        return static_cast<uint16_t>(sign | 0x7c00u);
    if (a < 6.103515625e-05f) { // subnormal: multiples of 2^-24, nearest even
        float q = std::nearbyint(a * 16777216.0f);
        return static_cast<uint16_t>(sign | static_cast<uint32_t>(q));
    }
    uint32_t m = u & 0x7fffffffu;
    uint32_t lsb = (m >> 13) & 1u;
    m += 0xfffu + lsb;
    return static_cast<uint16_t>(sign | ((m >> 13) - (112u << 10)));
}

float from_half(uint16_t h) {
    uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v;
    if (e == 0)
        v = std::ldexp(static_cast<float>(m), -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = std::ldexp(static_cast<float>(m | 0x400), static_cast<int>(e) - 25);
    return sign ? -v : v;
}

uint16_t to_bf16(float x) {
    uint32_t u = std::bit_cast<uint32_t>(x);
    if (std::isnan(x))
        return static_cast<uint16_t>((u >> 16) | 0x40);
    uint32_t lsb = (u >> 16) & 1u;
    return static_cast<uint16_t>((u + 0x7fffu + lsb) >> 16);
}

} // namespace

std::optional<DType> dtype_from_string(std::string_view name) noexcept {
    for (DType t : {DType::fp32, DType::bf16, DType::fp16, DType::int32, DType::u8})
        if (name == neuron::to_string(t))
            return t;
    return std::nullopt;
}

bool is_binary(Op op) noexcept {
    return op == Op::add || op == Op::sub || op == Op::mul || op == Op::div ||
           (op >= Op::maximum && op <= Op::ge) || op == Op::where;
}

bool is_activation(Op op) noexcept {
    return op >= Op::relu && op <= Op::exp;
}

bool is_data_movement(Op op) noexcept {
    return op == Op::reshape || op == Op::transpose || op == Op::slice || op == Op::concat ||
           op == Op::split;
}

int64_t Type::elements() const {
    return product(shape);
}

std::string to_string(const Type &t) {
    return fmt::format("{}{}", neuron::to_string(t.dtype), shape_text(t.shape));
}

float round_to(DType t, float x) {
    switch (t) {
    case DType::fp32:
        return x;
    case DType::bf16:
        return std::bit_cast<float>(static_cast<uint32_t>(to_bf16(x)) << 16);
    case DType::fp16:
        return from_half(to_half(x));
    case DType::int32:
        if (std::isnan(x))
            return 0;
        return static_cast<float>(
            std::clamp(static_cast<double>(std::nearbyint(x)), -2147483648.0, 2147483647.0));
    case DType::u8:
        if (std::isnan(x))
            return 0;
        return std::clamp(std::nearbyint(x), 0.0f, 255.0f);
    }
    return x;
}

std::vector<std::byte> pack(DType t, const std::vector<float> &v) {
    const size_t es = dtype_size(t);
    std::vector<std::byte> out(v.size() * es);
    for (size_t i = 0; i < v.size(); i++) {
        std::byte *p = out.data() + i * es;
        if (t == DType::fp32) {
            std::memcpy(p, &v[i], 4);
        } else if (t == DType::bf16) {
            uint16_t h = to_bf16(v[i]);
            std::memcpy(p, &h, 2);
        } else if (t == DType::fp16) {
            uint16_t h = to_half(v[i]);
            std::memcpy(p, &h, 2);
        } else if (t == DType::u8) {
            *p = static_cast<std::byte>(round_to(DType::u8, v[i]));
        } else {
            auto n = static_cast<int32_t>(round_to(DType::int32, v[i]));
            std::memcpy(p, &n, 4);
        }
    }
    return out;
}

std::vector<float> unpack(DType t, const std::byte *bytes, size_t elements) {
    const size_t es = dtype_size(t);
    std::vector<float> out(elements);
    for (size_t i = 0; i < elements; i++) {
        const std::byte *p = bytes + i * es;
        if (t == DType::fp32) {
            std::memcpy(&out[i], p, 4);
        } else if (t == DType::bf16 || t == DType::fp16) {
            uint16_t h;
            std::memcpy(&h, p, 2);
            out[i] = t == DType::bf16 ? std::bit_cast<float>(static_cast<uint32_t>(h) << 16)
                                      : from_half(h);
        } else if (t == DType::u8) {
            out[i] = static_cast<float>(std::to_integer<uint8_t>(*p));
        } else {
            int32_t n;
            std::memcpy(&n, p, 4);
            out[i] = static_cast<float>(n);
        }
    }
    return out;
}

std::vector<float> constant_values(const Node &c) {
    if (!c.init.seed)
        return c.init.values;
    // xorshift64, as the examples' generator.
    uint64_t s = *c.init.seed ? *c.init.seed : 0x9e3779b97f4a7c15ull;
    std::vector<float> v(static_cast<size_t>(c.type.elements()));
    for (auto &x : v) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        auto r = static_cast<uint32_t>(s >> 16);
        x = round_to(c.type.dtype, (static_cast<float>(r) / 2147483648.0f - 1.0f) * c.init.scale);
    }
    return v;
}

std::optional<uint32_t> Graph::find(std::string_view name) const {
    for (uint32_t i = 0; i < nodes_.size(); i++)
        if (nodes_[i].name == name)
            return i;
    return std::nullopt;
}

uint32_t Graph::push(Node n) {
    if (n.name.empty())
        throw GraphError(fmt::format("a {} node needs a name", to_string(n.op)));
    if (find(n.name))
        throw GraphError(fmt::format("'{}' is defined twice", n.name));
    if (n.type.shape.empty())
        throw GraphError(
            fmt::format("'{}': rank-0 values are not supported (use shape [1])", n.name));
    for (int64_t d : n.type.shape)
        if (d < 1)
            throw GraphError(fmt::format("'{}': dimension {} in shape {} (sizes must be >= 1)",
                                         n.name, d, shape_text(n.type.shape)));
    nodes_.push_back(std::move(n));
    return static_cast<uint32_t>(nodes_.size() - 1);
}

uint32_t Graph::input(const std::string &name, Type type) {
    Node n;
    n.op = Op::input;
    n.name = name;
    n.type = std::move(type);
    return push(std::move(n));
}

namespace {

// @p init for a constant named @p name of type @p t: its values rounded
// to the dtype, as many as the type has.
ConstantInit checked_init(const std::string &name, const Type &t, ConstantInit init) {
    if (!init.seed) {
        if (static_cast<int64_t>(init.values.size()) != t.elements())
            throw GraphError(fmt::format("constant '{}' of type {} has {} values, needs {}", name,
                                         to_string(t), init.values.size(), t.elements()));
        for (auto &v : init.values)
            v = round_to(t.dtype, v);
    }
    return init;
}

} // namespace

uint32_t Graph::constant(const std::string &name, Type type, ConstantInit init) {
    Node n;
    n.op = Op::constant;
    n.name = name;
    n.type = std::move(type);
    n.init = checked_init(name, n.type, std::move(init));
    return push(std::move(n));
}

void Graph::make_constant(uint32_t node, ConstantInit init) {
    if (node >= nodes_.size() || nodes_[node].op != Op::input)
        throw GraphError(fmt::format("make_constant: node {} is not an input", node));
    Node &n = nodes_[node];
    n.init = checked_init(n.name, n.type, std::move(init));
    n.op = Op::constant;
}

void Graph::mark_output(uint32_t node) {
    if (node >= nodes_.size())
        throw GraphError(fmt::format("output: no node {}", node));
    for (uint32_t o : outputs_)
        if (o == node)
            throw GraphError(fmt::format("'{}' is an output twice", nodes_[node].name));
    outputs_.push_back(node);
}

std::vector<uint32_t> Graph::split(const std::vector<std::string> &names, uint32_t operand,
                                   const Attrs &a) {
    if (operand >= nodes_.size())
        throw GraphError(fmt::format("'{}': operand {} is not defined before it",
                                     fmt::join(names, ", "), operand));
    const Type xt = nodes_[operand].type; // push() below moves the nodes
    auto fail = [&](const std::string &why) {
        return GraphError(fmt::format("'{}' (split) of {}: {}: {}", fmt::join(names, ", "),
                                      nodes_[operand].name, to_string(xt), why));
    };
    if (names.empty())
        throw fail("no names for the pieces");
    for (size_t i = 0; i < names.size(); i++) {
        if (names[i].empty())
            throw fail(fmt::format("piece {} has no name", i));
        if (find(names[i]) ||
            std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), names[i]) !=
                names.begin() + static_cast<std::ptrdiff_t>(i))
            throw fail(fmt::format("'{}' is defined twice", names[i]));
    }
    if (a.eps || a.scalar || a.causal || a.transpose_a || a.transpose_b || a.start || a.end)
        throw fail("split takes axis= and sizes= only");
    const Shape &xs = xt.shape;
    const int64_t rank = static_cast<int64_t>(xs.size()), ax0 = a.axis.value_or(0);
    if (ax0 < -rank || ax0 >= rank)
        throw fail(fmt::format("axis {} out of range for rank {}", ax0, rank));
    const int64_t ax = ax0 < 0 ? ax0 + rank : ax0, d = xs[static_cast<size_t>(ax)];
    const int64_t pieces = static_cast<int64_t>(names.size());
    Shape sizes = a.dims;
    if (sizes.empty()) {
        if (d % pieces)
            throw fail(fmt::format("axis {} has {} elements, which do not split into {} equal "
                                   "pieces (give their sizes=[...])",
                                   ax, d, pieces));
        sizes.assign(names.size(), d / pieces);
    }
    if (sizes.size() != names.size())
        throw fail(
            fmt::format("{} names for {} sizes {}", names.size(), sizes.size(), shape_text(sizes)));
    int64_t total = 0;
    for (int64_t n : sizes) {
        if (n < 1)
            throw fail(fmt::format("a size of {} in {} (every piece has at least one element)", n,
                                   shape_text(sizes)));
        total += n;
    }
    if (total != d)
        throw fail(fmt::format("the sizes {} add up to {}, but axis {} has {} elements",
                               shape_text(sizes), total, ax, d));
    std::vector<uint32_t> ids;
    int64_t start = 0;
    for (size_t i = 0; i < names.size(); i++) {
        Node n;
        n.op = Op::split;
        n.name = names[i];
        n.operands = {operand};
        n.dims = sizes;
        n.axis = ax;
        n.start = start;
        n.end = start + sizes[i];
        n.type = xt;
        n.type.shape[static_cast<size_t>(ax)] = sizes[i];
        start = n.end;
        ids.push_back(push(std::move(n)));
    }
    return ids;
}

std::string describe(const Graph &g, const Node &n) {
    std::vector<std::string> ts;
    for (uint32_t o : n.operands)
        ts.push_back(fmt::format("{}: {}", g.node(o).name, to_string(g.node(o).type)));
    return fmt::format("'{}' ({} of {} -> {})", n.name, to_string(n.op),
                       ts.empty() ? "nothing" : fmt::format("{}", fmt::join(ts, ", ")),
                       to_string(n.type));
}

} // namespace neuron::compiler
