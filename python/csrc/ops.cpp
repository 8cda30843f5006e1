// SPDX-License-Identifier: MIT
// The TorchScript registrations: the custom class torch.classes.neuron.Model
// (saved and loaded with the module by its pickle state) and the ops
// torch.ops.neuron.forward_v2 and torch.ops.neuron.compile_graph, and the
// IR graph torch.classes.neuron.Graph that the lowering builds.
#include <cstdint>
#include <vector>

#include <ATen/Context.h>
#include <torch/custom_class.h>
#include <torch/library.h>

#include "graph.hpp"
#include "model.hpp"
#include "runtime/allocator.hpp"
#include "runtime/cores.hpp"
#include "runtime/eager.hpp"
#include "runtime/fast_path.hpp"
#include "runtime/streams.hpp"

namespace {

using neuron::torch_bridge::EagerKernel;
using neuron::torch_bridge::Graph;
using neuron::torch_bridge::Model;
using neuron::torch_bridge::ModelState;

std::vector<at::Tensor> forward_v2(const std::vector<at::Tensor> &inputs,
                                   const c10::intrusive_ptr<Model> &model) {
    return model->forward(inputs);
}

std::tuple<std::vector<std::string>, std::vector<int64_t>> kept_kernel_runs() {
    std::tuple<std::vector<std::string>, std::vector<int64_t>> out;
    for (auto &[name, runs] : neuron::torch_bridge::kept_kernel_runs()) {
        std::get<0>(out).push_back(name);
        std::get<1>(out).push_back(runs);
    }
    return out;
}

int64_t device_count() {
    return neuron::torch_bridge::core_count();
}

std::string why_no_device() {
    return neuron::torch_bridge::why_no_device();
}

int64_t current_device() {
    return neuron::torch_bridge::current_core_index();
}

void set_device(int64_t index) {
    neuron::torch_bridge::set_current_core_index(static_cast<c10::DeviceIndex>(index));
}

// "neuron:0 core 2 of /dev/accel/accel0".
std::string device_name(int64_t index) {
    const auto &core = neuron::torch_bridge::core_at(static_cast<c10::DeviceIndex>(index));
    return "core " + std::to_string(core.core) + " of " + core.device.path();
}

// What torch.neuron.get_device_properties() reports beyond the name:
// [ISA major, ISA minor, SBUF bytes, PSUM bytes, clock MHz, partitions].
std::vector<int64_t> device_properties(int64_t index) {
    const auto &info =
        neuron::torch_bridge::core_at(static_cast<c10::DeviceIndex>(index)).device.info();
    return {info.isa_version >> 16,
            info.isa_version & 0xffff,
            static_cast<int64_t>(info.sbuf_size),
            static_cast<int64_t>(info.psum_size),
            info.core_clock_mhz,
            info.partitions};
}

at::Generator default_generator(int64_t index) {
    return at::globalContext().defaultGenerator(
        c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(index)));
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

    // The `neuron` device (torch_neuronx/device.py).
    m.class_<EagerKernel>("EagerKernel")
        .def("run", &EagerKernel::run)
        .def("run_into", &EagerKernel::run_into)
        .def("program_bytes", &EagerKernel::program_bytes)
        .def("output_meta", &EagerKernel::output_meta)
        .def("input_names", &EagerKernel::input_names)
        .def("output_names", &EagerKernel::output_names);
    m.def("eager_kernel(__torch__.torch.classes.neuron.Model model) -> "
          "__torch__.torch.classes.neuron.EagerKernel",
          &EagerKernel::of_model);
    m.def("eager_kernel_from_bytes(Tensor program, str[] inputs, str[] outputs) -> "
          "__torch__.torch.classes.neuron.EagerKernel",
          &EagerKernel::from_bytes);
    m.def("number_on_device(float value, Device device) -> Tensor",
          &neuron::torch_bridge::number_on_device);
    m.def("claim_operator(str name) -> ()", &neuron::torch_bridge::claim_operator);
    m.def("kept_kernel_runs() -> (str[], int[])", kept_kernel_runs);
    m.def("device_count() -> int", device_count);
    m.def("why_no_device() -> str", why_no_device);
    m.def("current_device() -> int", current_device);
    m.def("set_device(int index) -> ()", set_device);
    m.def("device_name(int index) -> str", device_name);
    m.def("device_properties(int index) -> int[]", device_properties);
    m.def("set_memory_limit(int index, int bytes) -> ()", [](int64_t index, int64_t bytes) {
        neuron::torch_bridge::set_memory_limit(static_cast<c10::DeviceIndex>(index),
                                               static_cast<uint64_t>(bytes));
    });
    m.def("default_generator(int index) -> Generator?", default_generator);
}
