// SPDX-License-Identifier: MIT
// The TorchScript registrations: the custom class torch.classes.neuron.Model
// (saved and loaded with the module by its pickle state) and the ops
// torch.ops.neuron.forward_v2 and torch.ops.neuron.compile_graph, and the
// IR graph torch.classes.neuron.Graph that the lowering builds.
#include <torch/custom_class.h>
#include <torch/library.h>

#include "graph.hpp"
#include "model.hpp"

namespace {

using neuron::torch_bridge::Graph;
using neuron::torch_bridge::Model;
using neuron::torch_bridge::ModelState;

std::vector<at::Tensor> forward_v2(const std::vector<at::Tensor> &inputs,
                                   const c10::intrusive_ptr<Model> &model) {
    return model->forward(inputs);
}

} // namespace

TORCH_LIBRARY(neuron, m) {
    m.class_<Graph>("Graph")
        .def(torch::init<std::string>())
        .def("input", &Graph::input)
        .def("add", &Graph::add)
        .def("split", &Graph::split)
        .def("output", &Graph::output)
        .def("dtype", &Graph::dtype)
        .def("shape", &Graph::shape)
        .def("text", &Graph::text);
    m.class_<Model>("Model")
        .def("describe", &Model::describe)
        .def("placement", &Model::placement)
        .def("last_call_ms", &Model::last_call_ms)
        .def("bind_core", &Model::bind_core)
        .def_pickle(
            [](const c10::intrusive_ptr<Model> &self) -> ModelState { return self->state(); },
            [](ModelState state) -> c10::intrusive_ptr<Model> {
                return Model::from_state(std::move(state));
            });
    m.def("forward_v2(Tensor[] inputs, __torch__.torch.classes.neuron.Model model) -> Tensor[]",
          forward_v2);
    m.def("compile_graph(__torch__.torch.classes.neuron.Graph graph, str[] constant_names, "
          "Tensor[] constants, str[] inputs, str[] outputs, str workdir, str[] compiler_args) "
          "-> __torch__.torch.classes.neuron.Model",
          &Model::compile);
    m.def("visible_cores() -> int[]", &neuron::torch_bridge::visible_cores);
}
