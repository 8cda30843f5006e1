// SPDX-License-Identifier: MIT
// torch.classes.neuron.EagerKernel: one operator compiled for one
// signature (shapes, dtypes), run on `neuron` tensors in the current
// stream's order without waiting. The Python side (torch_neuronx/eager)
// compiles it once per signature through the FX lowering and caches it.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <torch/custom_class.h>

#include <neuron/program.hpp>
#include <neuron/queue.hpp>

namespace neuron::torch_bridge {

class Model;

class EagerKernel : public torch::CustomClassHolder {
  public:
    EagerKernel(Program program, std::vector<std::string> inputs, std::vector<std::string> outputs);

    /// The kernel of a compiled graph.
    static c10::intrusive_ptr<EagerKernel> of_model(const c10::intrusive_ptr<Model> &model);
    /// The kernel of a program container saved by program_bytes().
    static c10::intrusive_ptr<EagerKernel> from_bytes(const at::Tensor &bytes,
                                                      std::vector<std::string> inputs,
                                                      std::vector<std::string> outputs);
    at::Tensor program_bytes() const;
    std::vector<std::string> input_names() const { return inputs_; }
    std::vector<std::string> output_names() const { return outputs_; }
    /// Meta tensors of the outputs' shapes and dtypes.
    std::vector<at::Tensor> output_meta() const;

    /// Queues the program on @p inputs (contiguous `neuron` tensors of the
    /// compiled shapes and dtypes, on one index) and returns its outputs,
    /// new `neuron` tensors, before it ran.
    std::vector<at::Tensor> run(const std::vector<at::Tensor> &inputs);
    /// The same, writing into @p outputs: an `out=` or in-place call. False,
    /// running nothing, unless each output is a contiguous `neuron` tensor
    /// of its dtype and size that shares no memory with another output nor
    /// with an input, except exactly an input's memory where the program
    /// allows it (in_place_slots()).
    bool run_into(const std::vector<at::Tensor> &inputs, const std::vector<at::Tensor> &outputs);

  private:
    c10::DeviceIndex bind_inputs(const std::vector<at::Tensor> &inputs, Arguments &args) const;
    void submit(c10::DeviceIndex index, const Arguments &args);
    const LoadedProgram &loaded_on(const Device &device);

    Program program_;
    std::vector<std::string> inputs_, outputs_;
    std::vector<const ArgumentInfo *> input_args_, output_args_;
    /// (output, input) indices whose output may be the input's memory.
    std::set<std::pair<size_t, size_t>> in_place_;
    std::mutex mutex_;                                     ///< protects loaded_
    std::map<int, std::unique_ptr<LoadedProgram>> loaded_; ///< by device file
};

/// A number a program takes as an input: a float32 [1] of @p value on
/// @p device, which the lowering's arithmetic broadcasts as it does a
/// literal. The latest values are kept, so an optimizer's learning rate is
/// written to the device once a step, not once per parameter.
at::Tensor number_on_device(double value, c10::Device device);

} // namespace neuron::torch_bridge
