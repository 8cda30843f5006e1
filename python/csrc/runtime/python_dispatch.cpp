// SPDX-License-Identifier: MIT
// The one place that uses torch's Python C++ API: an operator call on the
// dispatcher's stack handed to the Python dispatcher (its arguments as
// Python objects, as PyTorch passes them to Python kernels) and its
// result put back.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/csrc/utils/pybind.h>

#include "eager.hpp"
#include "fast_path.hpp"

namespace neuron::torch_bridge {

namespace {

namespace py = pybind11;

/// @p v as Python gets it: dtypes, layouts and memory formats (integers
/// on the stack) as torch's objects.
py::object to_python(const c10::IValue &v, const c10::Argument &argument) {
    if (v.isInt()) {
        c10::TypePtr type = argument.type();
        if (type->kind() == c10::TypeKind::OptionalType)
            type = type->containedType(0);
        switch (type->kind()) {
        case c10::TypeKind::ScalarTypeType:
            return py::cast(static_cast<at::ScalarType>(v.toInt()));
        case c10::TypeKind::LayoutType:
            return py::cast(static_cast<at::Layout>(v.toInt()));
        case c10::TypeKind::MemoryFormatType:
            return py::cast(static_cast<at::MemoryFormat>(v.toInt()));
        default:
            break;
        }
    }
    return torch::jit::toPyObject(v);
}

void push_results(const c10::FunctionSchema &schema, py::handle out, torch::jit::Stack *stack) {
    const std::vector<c10::Argument> &returns = schema.returns();
    if (returns.size() == 1) {
        torch::jit::push(*stack, torch::jit::toIValue(out, returns[0].real_type()));
        return;
    }
    if (returns.empty())
        return;
    TORCH_CHECK(py::isinstance<py::tuple>(out) && py::len(out) == returns.size(),
                "neuron: the Python dispatcher returned no tuple of ", returns.size(),
                " values for ", schema.operator_name());
    py::tuple values = py::reinterpret_borrow<py::tuple>(out);
    for (size_t i = 0; i < returns.size(); i++)
        torch::jit::push(*stack, torch::jit::toIValue(values[i], returns[i].real_type()));
}

} // namespace

PythonRan run_in_python(const c10::OperatorHandle &op, torch::jit::Stack *stack) {
    const c10::FunctionSchema &schema = op.schema();
    const std::vector<c10::Argument> &parameters = schema.arguments();
    py::gil_scoped_acquire gil;
    const std::vector<c10::IValue> arguments = torch::jit::pop(*stack, parameters.size());
    py::list args;
    py::dict kwargs;
    args.append(schema.name());
    args.append(schema.overload_name());
    for (size_t i = 0; i < parameters.size(); i++) {
        if (parameters[i].kwarg_only())
            kwargs[py::str(parameters[i].name())] = to_python(arguments[i], parameters[i]);
        else
            args.append(to_python(arguments[i], parameters[i]));
    }
    // Imported on every call, which is a dictionary lookup once imported:
    // no static Python object to outlive the interpreter.
    py::object dispatch =
        py::module_::import("torch_neuronx.eager.dispatch").attr("dispatch_boxed");
    py::object ran = dispatch(*py::tuple(args), **kwargs);
    TORCH_CHECK(py::isinstance<py::tuple>(ran) && py::len(ran) == 4,
                "neuron: the Python dispatcher returned no (result, kernel, operator, "
                "numbers_as_inputs) for ",
                schema.operator_name());
    py::tuple values = py::reinterpret_borrow<py::tuple>(ran);
    push_results(schema, values[0], stack);
    if (values[1].is_none())
        return {};
    return {
        torch::jit::toIValue(values[1], c10::getCustomClassType<c10::intrusive_ptr<EagerKernel>>())
            .toCustomClass<EagerKernel>(),
        values[2].cast<std::string>(), values[3].cast<bool>()};
}

} // namespace neuron::torch_bridge
