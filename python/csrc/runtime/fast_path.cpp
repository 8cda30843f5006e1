// SPDX-License-Identifier: MIT
#include "fast_path.hpp"

#include <algorithm>
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
    in_place,   ///< its functional form's kernel, run into `self` (or copied)
    out,        ///< its functional form's kernel, run into its `out=` tensors (or copied)
};

bool writes(const c10::Argument &a) {
    return a.alias_info() && a.alias_info()->isWrite();
}

/// Whether @p schema's written arguments are keyword-only tensors at its
/// end (`out=`), each returned in their order, and it aliases nothing else.
bool is_out_form(const c10::FunctionSchema &schema) {
    const std::vector<c10::Argument> &arguments = schema.arguments();
    const std::vector<c10::Argument> &returns = schema.returns();
    const size_t n = returns.size();
    if (schema.name().ends_with('_') || arguments.size() <= n)
        return false;
    for (size_t i = 0; i < arguments.size(); i++) {
        const bool out = i >= arguments.size() - n;
        if (out != writes(arguments[i]) || (!out && arguments[i].alias_info()))
            return false;
    }
    for (size_t i = 0; i < n; i++) {
        const c10::Argument &out = arguments[arguments.size() - n + i];
        if (!out.kwarg_only() || out.type()->kind() != c10::TypeKind::TensorType ||
            !returns[i].alias_info() ||
            returns[i].alias_info()->beforeSets() != out.alias_info()->beforeSets())
            return false;
    }
    return true;
}

/// The form of @p schema's calls. The Python dispatcher orders a call's
/// tensors as its positional arguments, then its keywords: an operator
/// taking tensors by keyword other than `out=` has none.
Form form_of(const c10::FunctionSchema &schema) {
    const std::vector<c10::Argument> &arguments = schema.arguments();
    const std::vector<c10::Argument> &returns = schema.returns();
    if (returns.empty() || arguments.empty())
        return Form::none;
    const bool out = is_out_form(schema);
    for (size_t i = 0; i < arguments.size(); i++)
        if (arguments[i].kwarg_only() && names_tensors(arguments[i].type()) &&
            !(out && writes(arguments[i])))
            return Form::none;
    if (out)
        return Form::out;
    for (size_t i = 1; i < arguments.size(); i++)
        if (arguments[i].alias_info())
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

/// A kernel the Python dispatcher ran for one signature, or for every
/// call that differs from it only in its floating-point numbers.
struct Kept {
    c10::intrusive_ptr<EagerKernel> kernel;
    std::string name;               ///< the operator it counts as having run
    bool numbers_as_inputs = false; ///< it takes the numbers after the tensors
    std::atomic<int64_t> runs{0};
};

struct KeptKernels {
    std::shared_mutex mutex; ///< protects by_key and by_family
    std::unordered_map<std::string, std::unique_ptr<Kept>> by_key;
    std::unordered_map<std::string, std::unique_ptr<Kept>> by_family; ///< numbers as inputs
};

KeptKernels &kept_kernels() {
    static KeptKernels k;
    return k;
}

/// The bytes of a call's signature, its tensors and its floating-point
/// numbers; and its family's bytes, the same without the numbers' values.
class Signature {
  public:
    /// With @p out_form, the written tensors are the `out=` ones.
    Signature(const c10::FunctionSchema &schema, bool out_form) : out_form_(out_form) {
        append(schema.name());
        tag('.');
        append(schema.overload_name());
        tag('\0');
    }

    /// Adds @p v, the value of @p argument; false when the signature cannot
    /// hold it (then the call goes to the Python dispatcher).
    bool add(const c10::IValue &v, const c10::Argument &argument) {
        if (v.isTensor() && v.toTensor().unsafeGetTensorImpl()->is_wrapped_number())
            return !v.toTensor().is_complex() && // (Python gets the number)
                   add(wrapped_number(v.toTensor()), argument);
        if (v.isTensor())
            return add_tensor(v.toTensor(), out_form_ && writes(argument) ? outputs_ : tensors_);
        if (v.isNone()) {
            tag('N');
        } else if (v.isInt()) {
            tag('i');
            put(v.toInt());
        } else if (v.isDouble()) {
            tag('d');
            const uint64_t bits = std::bit_cast<uint64_t>(v.toDouble());
            bytes_.append(reinterpret_cast<const char *>(&bits), sizeof bits);
            // In the Python dispatcher's order (signature.py): positional
            // arguments, then keywords by name.
            numbers_.push_back({argument.kwarg_only(), argument.name(), v.toDouble()});
        } else if (v.isBool()) {
            tag('b');
            put(v.toBool());
        } else if (v.isString()) {
            const std::string &s = v.toStringRef();
            tag('s');
            put(s.size());
            append(s);
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
    const std::string &family() const { return family_; }
    std::vector<at::Tensor> &tensors() { return tensors_; }
    /// The `out=` tensors.
    std::vector<at::Tensor> &outputs() { return outputs_; }
    bool has_numbers() const { return !numbers_.empty(); }

    /// The tensors, then the numbers as a program takes them
    /// (number_on_device()).
    std::vector<at::Tensor> tensors_and_numbers() {
        std::stable_sort(numbers_.begin(), numbers_.end(), [](const Number &a, const Number &b) {
            return a.keyword != b.keyword ? b.keyword : a.keyword && a.name < b.name;
        });
        std::vector<at::Tensor> inputs = tensors_;
        for (const Number &n : numbers_)
            inputs.push_back(number_on_device(n.value, tensors_.front().device()));
        return inputs;
    }

  private:
    /// A number the Python binding wrapped in a tensor (`x * 0.5`).
    static c10::IValue wrapped_number(const at::Tensor &t) {
        if (t.is_floating_point())
            return t.item<double>();
        if (t.scalar_type() == at::kBool)
            return t.item<bool>();
        return t.item<int64_t>();
    }

    // The device kernels take dense, contiguous, non-empty tensors of at
    // least one dimension on one index; the dispatcher adapts the others.
    bool add_tensor(const at::Tensor &t, std::vector<at::Tensor> &to) {
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
        to.push_back(t);
        return true;
    }

    void tag(char c) {
        bytes_.push_back(c);
        family_.push_back(c);
    }
    void append(const std::string &s) {
        bytes_.append(s);
        family_.append(s);
    }

    template <typename T> void put(const T &v) {
        char b[sizeof(T)];
        std::memcpy(b, &v, sizeof(T));
        bytes_.append(b, sizeof(T));
        family_.append(b, sizeof(T));
    }

    struct Number {
        bool keyword;
        std::string name;
        double value;
    };

    bool out_form_;
    std::string bytes_, family_;
    std::vector<at::Tensor> tensors_, outputs_;
    std::vector<Number> numbers_;
};

/// Whether @p kernel computes what a call of @p form with @p signature's
/// tensors returns (or writes into its first tensor, or its `out=` ones).
bool fits(const EagerKernel &kernel, Form form, const c10::FunctionSchema &schema,
          Signature &signature) {
    if (form == Form::functional)
        return kernel.output_names().size() == schema.returns().size();
    const std::vector<at::Tensor> meta = kernel.output_meta();
    if (form == Form::in_place)
        return meta.size() == 1 && meta[0].sizes() == signature.tensors().front().sizes();
    const std::vector<at::Tensor> &outputs = signature.outputs();
    if (meta.size() != outputs.size())
        return false;
    for (size_t i = 0; i < meta.size(); i++)
        if (meta[i].sizes() != outputs[i].sizes() || meta[i].dtype() != outputs[i].dtype())
            return false;
    return true;
}

void eager_boxed(const c10::OperatorHandle &op, c10::DispatchKeySet, torch::jit::Stack *stack) {
    const c10::FunctionSchema &schema = op.schema();
    const size_t n = schema.arguments().size();
    const Form form = form_of(schema);
    std::optional<Signature> signature;
    if (form != Form::none) {
        signature.emplace(schema, form == Form::out);
        const auto values = torch::jit::last(*stack, n);
        for (size_t i = 0; i < n; i++) {
            if (!signature->add(values[i], schema.arguments()[i])) {
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
            else if (signature->has_numbers())
                if (auto f = k.by_family.find(signature->family()); f != k.by_family.end())
                    kept = f->second.get();
        }
        if (kept) {
            std::vector<at::Tensor> &tensors = signature->tensors();
            const std::vector<at::Tensor> inputs =
                kept->numbers_as_inputs ? signature->tensors_and_numbers() : tensors;
            if (form != Form::functional) {
                // Into the written tensors where the program allows it, else
                // a copy.
                const std::vector<at::Tensor> written =
                    form == Form::out ? signature->outputs()
                                      : std::vector<at::Tensor>{tensors.front()};
                if (!kept->kernel->run_into(inputs, written)) {
                    const std::vector<at::Tensor> results = kept->kernel->run(inputs);
                    for (size_t i = 0; i < written.size(); i++)
                        written[i].copy_(results[i]);
                }
                torch::jit::drop(*stack, n);
                for (const at::Tensor &t : written)
                    torch::jit::push(*stack, t);
            } else {
                std::vector<at::Tensor> outputs = kept->kernel->run(inputs);
                torch::jit::drop(*stack, n);
                for (at::Tensor &o : outputs)
                    torch::jit::push(*stack, std::move(o));
            }
            kept->runs.fetch_add(1, std::memory_order_relaxed);
            return;
        }
    }
    PythonRan ran = run_in_python(op, stack);
    if (!ran.kernel || !signature || !fits(*ran.kernel, form, schema, *signature))
        return;
    auto kept = std::make_unique<Kept>();
    kept->kernel = std::move(ran.kernel);
    kept->name = std::move(ran.counted_as);
    kept->numbers_as_inputs = ran.numbers_as_inputs;
    KeptKernels &k = kept_kernels();
    std::unique_lock lock(k.mutex);
    if (ran.numbers_as_inputs)
        k.by_family.try_emplace(signature->family(), std::move(kept));
    else
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
    for (const auto *kept_by : {&k.by_key, &k.by_family})
        for (const auto &[_, kept] : *kept_by) {
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
