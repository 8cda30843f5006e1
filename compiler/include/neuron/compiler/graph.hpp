// SPDX-License-Identifier: MIT
// The tensor-graph IR of the compiler: typed, shaped values, each produced
// by one node (a graph input, a constant or an operator), in topological
// order, and the graph's outputs. docs/compiler.md describes the operators
// and the text form (neuron/compiler/text.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <neuron/program.hpp>

namespace neuron::compiler {

enum class Op : uint8_t {
    input,
    constant,
    matmul,
    add,
    sub,
    mul,
    div,
    relu,
    gelu,
    gelu_tanh,
    silu,
    sigmoid,
    tanh,
    exp,
    softmax,
    layer_norm,
    rms_norm,
    reshape,
    transpose,
    slice,
    concat,
    split,
    attention,
    neg,
    log,
    erf,
    sqrt,
    rsqrt,
    reciprocal,
    abs,
    maximum,
    minimum,
    eq,
    ne,
    lt,
    le,
    gt,
    ge,
    cast,
    where,
    sum,
    mean,
    amax,
    amin,
    argmax,
    argmin,
    softmax_backward,
    log_softmax_backward,
    log_softmax,
    dropout,
    dropout_mask,
    index_add,
    index_select,
};

/// The operator's name in the text form ("matmul", "gelu_tanh", ...).
const char *to_string(Op op) noexcept;
std::optional<Op> op_from_string(std::string_view name) noexcept;
std::optional<DType> dtype_from_string(std::string_view name) noexcept;

/// add, sub, mul, div, maximum, minimum, the comparisons, where: the
/// operators that take a literal operand.
bool is_binary(Op op) noexcept;
bool is_activation(Op op) noexcept; ///< relu ... exp
/// reshape, transpose, slice, concat, split: the result's elements are
/// the operands', moved.
bool is_data_movement(Op op) noexcept;

using Shape = std::vector<int64_t>;

struct Type {
    DType dtype = DType::fp32;
    Shape shape;
    int64_t elements() const;
    bool operator==(const Type &) const = default;
};

/// "fp32[1, 128, 768]".
std::string to_string(const Type &t);

/// How a constant's values are given: listed, or drawn from the
/// deterministic generator (uniform in [-scale, scale), xorshift64 seeded
/// with seed), so that graphs with large weights stay small files.
struct ConstantInit {
    std::vector<float> values; ///< when seed is not set; already rounded to the dtype
    std::optional<uint64_t> seed;
    float scale = 1.0f;
    bool operator==(const ConstantInit &) const = default;
};

struct Node {
    Op op = Op::input;
    std::string name;
    Type type;
    std::vector<uint32_t> operands; ///< indices of earlier nodes

    // Attributes; which ones an operator uses is in docs/compiler.md.
    std::optional<float> scalar; ///< binary op with a literal operand (fp32)
    bool scalar_first = false;   ///< the literal is the left operand
    bool transpose_a = false, transpose_b = false;
    float eps = 0;
    /// reshape: the shape; transpose: the permutation; split: the sizes of
    /// all the pieces; the reductions: the reduced axes
    std::vector<int64_t> dims;
    /// slice, and a piece of a split: [start, end) of the axis
    int64_t axis = 0, start = 0, end = 0;
    /// softmax, attention: over the last two axes [.., Q, K], element
    /// (q, k) takes part only when k <= q (a causal mask); the others are 0
    bool causal = false;
    float scale = 0;   ///< attention: the factor of the scores
    ConstantInit init; ///< constants
    /// the reductions (sum, mean, amax, amin, argmax, argmin): the reduced
    /// axes are in dims (sorted, non-negative); keepdim: they stay as 1s
    bool keepdim = false;
    /// dropout, dropout_mask: the probability that an element is dropped
    float p = 0;

    bool operator==(const Node &) const = default;
};

/// A problem with a graph: the node (if any) and why.
class GraphError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

/// Attributes of an operator node, as add() takes them.
struct Attrs {
    std::optional<float> scalar;
    bool scalar_first = false;
    bool transpose_a = false, transpose_b = false;
    std::optional<float> eps;
    std::vector<int64_t> dims;
    std::optional<int64_t> axis; ///< softmax: -1 (the only one); slice, concat, split: 0
    int64_t start = 0, end = 0;
    bool causal = false;        ///< softmax, attention
    std::optional<float> scale; ///< attention: 1/sqrt(the queries' last axis) if not given
    std::optional<DType> dtype; ///< cast: the result's
    bool keepdim = false;       ///< the reductions: the reduced axes stay, of size 1
    std::optional<float> p;     ///< dropout, dropout_mask: the drop probability
};

class Graph {
  public:
    explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

    const std::string &name() const { return name_; }
    void set_name(std::string n) { name_ = std::move(n); }

    uint32_t input(const std::string &name, Type type);
    uint32_t constant(const std::string &name, Type type, ConstantInit init);
    /// An operator node; its type is inferred from the operands, and a
    /// GraphError names the node, the operand types and the reason when
    /// they do not fit the operator.
    uint32_t add(Op op, const std::string &name, std::vector<uint32_t> operands,
                 const Attrs &attrs = {});
    /// split(x, axis, sizes): @p operand cut along the axis (attrs.axis, 0
    /// by default) into pieces of attrs.dims elements, or, without sizes,
    /// into names.size() equal pieces; one node per piece, named @p names
    /// in order, each the slice of its piece. Throws GraphError naming the
    /// pieces, the operand's type and why when they do not fit.
    std::vector<uint32_t> split(const std::vector<std::string> &names, uint32_t operand,
                                const Attrs &attrs = {});
    void mark_output(uint32_t node);
    /// Turns input @p node into a constant of @p init's values, in place
    /// (a weight bound to a graph after it was parsed); throws GraphError
    /// when the node is not an input or the values do not fit its type.
    void make_constant(uint32_t node, ConstantInit init);

    /// This graph with every operator the compiler decomposes replaced by
    /// the operators it is made of, the same nodes under the same names
    /// otherwise; what compile() lowers and evaluate_bounded() bounds.
    /// attention(q, k, v[, mask]) named o: o.scores = matmul(q, k,
    /// transpose_b=true), o.scaled = mul(o.scores, scale) (unless scale is
    /// 1), o.masked = add(o.scaled, mask), o.probs = softmax(..., causal),
    /// o = matmul(o.probs, v).
    Graph decomposed() const;

    const std::vector<Node> &nodes() const { return nodes_; }
    const Node &node(uint32_t i) const { return nodes_.at(i); }
    const std::vector<uint32_t> &outputs() const { return outputs_; }
    std::optional<uint32_t> find(std::string_view name) const;

    bool operator==(const Graph &) const = default;

  private:
    uint32_t push(Node n);
    std::string name_;
    std::vector<Node> nodes_;
    std::vector<uint32_t> outputs_;
};

/// Node @p n of @p g as errors name it: "'h' (matmul of x: fp32[200, 96],
/// w1: fp32[96, 300] -> fp32[200, 300])".
std::string describe(const Graph &g, const Node &n);

/// The values of a constant, generated if it has a seed.
std::vector<float> constant_values(const Node &constant);

/// @p x rounded to @p t as the device stores it (round to nearest even;
/// int32: nearest even with saturation).
float round_to(DType t, float x);
/// fp32 values stored as @p t, little endian, and back.
std::vector<std::byte> pack(DType t, const std::vector<float> &v);
std::vector<float> unpack(DType t, const std::byte *bytes, size_t elements);

} // namespace neuron::compiler
