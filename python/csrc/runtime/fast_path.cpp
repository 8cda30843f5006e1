// SPDX-License-Identifier: MIT
#include "fast_path.hpp"

#include <atomic>
#include <bit>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "eager.hpp"

namespace neuron::torch_bridge {

namespace {

bool names_tensors(const c10::TypePtr &type) {
    if (type->kind() == c10::TypeKind::TensorType)
        return true;
    for (const c10::TypePtr &t : type->containedTypes())
        if (names_tensors(t))
            return true;
    return false;
}

/// How a call of an operator may be repeated from its signature.
enum class Form {
    none,       ///< it may not
    functional, ///< it writes no argument and returns new tensors
    in_place,   ///< its functional form's kernel, copied into `self`
};

/// The form of @p schema's calls. The Python dispatcher orders a call's
/// tensors as its positional arguments, then its keywords: an operator
/// taking tensors by keyword has none.
Form form_of(const c10::FunctionSchema &schema) {
    const std::vector<c10::Argument> &arguments = schema.arguments();
    const std::vector<c10::Argument> &returns = schema.returns();
    if (returns.empty() || arguments.empty())
        return Form::none;
    for (size_t i = 0; i < arguments.size(); i++)
        if ((i > 0 && arguments[i].alias_info()) ||
            (arguments[i].kwarg_only() && names_tensors(arguments[i].type())))
            return Form::none;
    if (const c10::AliasInfo *self = arguments[0].alias_info()) {
        const bool writes_self = self->isWrite() && arguments[0].name() == "self" &&
                                 schema.name().ends_with('_') && returns.size() == 1 &&
                                 returns[0].alias_info();
        return writes_self ? Form::in_place : Form::none;
    }
    for (const c10::Argument &r : returns)
        if (r.alias_info() || r.type()->kind() != c10::TypeKind::TensorType)
            return Form::none;
    return Form::functional;
}

/// A kernel the Python dispatcher ran for one signature.
struct Kept {
    c10::intrusive_ptr<EagerKernel> kernel;
    std::string name; ///< the operator it counts as having run
    std::atomic<int64_t> runs{0};
};

struct KeptKernels {
    std::shared_mutex mutex; ///< protects by_key
    std::unordered_map<std::string, std::unique_ptr<Kept>> by_key;
};

KeptKernels &kept_kernels() {
    static KeptKernels k;
    return k;
}

/// The bytes of a call's signature, and its tensors.
class Signature {
  public:
    explicit Signature(const c10::FunctionSchema &schema) {
        bytes_.append(schema.name()).push_back('.');
        bytes_.append(schema.overload_name()).push_back('\0');
    }

    /// Adds @p v; false when the signature cannot hold it (then the call
    /// goes to the Python dispatcher).
    bool add(const c10::IValue &v) {
        if (v.isTensor())
            return add_tensor(v.toTensor());
        if (v.isNone()) {
            tag('N');
        } else if (v.isInt()) {
            tag('i');
            put(v.toInt());
        } else if (v.isDouble()) {
            tag('d');
            put(std::bit_cast<uint64_t>(v.toDouble()));
        } else if (v.isBool()) {
            tag('b');
            put(v.toBool());
        } else if (v.isString()) {
            const std::string &s = v.toStringRef();
            tag('s');
            put(s.size());
            bytes_.append(s);
        } else if (v.isIntList()) {
            const c10::List<int64_t> l = v.toIntList();
            tag('l');
            put(l.size());
            for (int64_t x : l)
                put(x);
        } else if (v.isDevice()) {
            tag('D');
            put(v.toDevice().type());
            put(v.toDevice().index());
        } else {
            return false;
        }
        return true;
    }

    const std::string &bytes() const { return bytes_; }
    std::vector<at::Tensor> &tensors() { return tensors_; }

  private:
    // The device kernels take dense, contiguous, non-empty tensors of at
    // least one dimension on one index; the dispatcher adapts the others.
    bool add_tensor(const at::Tensor &t) {
        if (!t.defined() || !t.device().is_privateuseone() || t.dim() == 0 || t.numel() == 0 ||
            t.layout() != at::kStrided || !t.is_contiguous() || t.is_conj() || t.is_neg())
            return false;
        if (!tensors_.empty() && tensors_.front().device() != t.device())
            return false;
        tag('T');
        put(t.scalar_type());
        put(t.dim());
        for (int64_t s : t.sizes())
            put(s);
        tensors_.push_back(t);
        return true;
    }

    void tag(char c) { bytes_.push_back(c); }

    template <typename T> void put(const T &v) {
        char b[sizeof(T)];
        std::memcpy(b, &v, sizeof(T));
        bytes_.append(b, sizeof(T));
    }

    std::string bytes_;
    std::vector<at::Tensor> tensors_;
};

/// Whether @p kernel computes what a call of @p form with @p signature's
/// tensors returns (or, in place, writes into its first tensor).
bool fits(const EagerKernel &kernel, Form form, const c10::FunctionSchema &schema,
          const std::vector<at::Tensor> &tensors) {
    if (form == Form::functional)
        return kernel.output_names().size() == schema.returns().size();
    const std::vector<at::Tensor> meta = kernel.output_meta();
    return meta.size() == 1 && meta[0].sizes() == tensors.front().sizes();
}

void eager_boxed(const c10::OperatorHandle &op, c10::DispatchKeySet, torch::jit::Stack *stack) {
    const c10::FunctionSchema &schema = op.schema();
    const size_t n = schema.arguments().size();
    const Form form = form_of(schema);
    std::optional<Signature> signature;
    if (form != Form::none) {
        signature.emplace(schema);
        for (const c10::IValue &v : torch::jit::last(*stack, n)) {
            if (!signature->add(v)) {
                signature.reset();
                break;
            }
        }
        // In place, `self` is the first tensor (the device's own).
        if (signature && (signature->tensors().empty() ||
                          (form == Form::in_place && !torch::jit::peek(*stack, 0, n).isTensor())))
            signature.reset();
    }
    if (signature) {
        Kept *kept = nullptr;
        {
            KeptKernels &k = kept_kernels();
            std::shared_lock lock(k.mutex);
            auto it = k.by_key.find(signature->bytes());
            if (it != k.by_key.end())
                kept = it->second.get();
        }
        if (kept) {
            std::vector<at::Tensor> &tensors = signature->tensors();
            std::vector<at::Tensor> outputs = kept->kernel->run(tensors);
            torch::jit::drop(*stack, n);
            if (form == Form::in_place) {
                tensors.front().copy_(outputs.front());
                torch::jit::push(*stack, tensors.front());
            } else {
                for (at::Tensor &o : outputs)
                    torch::jit::push(*stack, std::move(o));
            }
            kept->runs.fetch_add(1, std::memory_order_relaxed);
            return;
        }
    }
    auto [kernel, counted_as] = run_in_python(op, stack);
    if (!kernel || !signature || !fits(*kernel, form, schema, signature->tensors()))
        return;
    auto kept = std::make_unique<Kept>();
    kept->kernel = std::move(kernel);
    kept->name = std::move(counted_as);
    KeptKernels &k = kept_kernels();
    std::unique_lock lock(k.mutex);
    k.by_key.try_emplace(signature->bytes(), std::move(kept));
}

} // namespace

void claim_operator(const std::string &name) {
    constexpr std::string_view ns = "aten::";
    TORCH_CHECK(name.starts_with(ns), "neuron: only aten operators are claimed, not '", name, "'");
    static torch::Library library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1,
                                  __FILE__, __LINE__);
    library.impl(name.substr(ns.size()).c_str(),
                 torch::CppFunction::makeFromBoxedFunction<&eager_boxed>());
}

std::vector<std::pair<std::string, int64_t>> kept_kernel_runs() {
    std::map<std::string, int64_t> by_name;
    KeptKernels &k = kept_kernels();
    std::shared_lock lock(k.mutex);
    for (const auto &[_, kept] : k.by_key) {
        const int64_t runs = kept->runs.load(std::memory_order_relaxed);
        if (runs)
            by_name[kept->name] += runs;
    }
    return {by_name.begin(), by_name.end()};
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
    m.fallback(torch::CppFunction::makeFromBoxedFunction<&eager_boxed>());
}

} // namespace neuron::torch_bridge
