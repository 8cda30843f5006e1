// SPDX-License-Identifier: MIT
// torch.classes.neuron.Model: a compiled graph (the program container, its
// weights as program constants, the traced argument types) and, once it
// first runs, the device it runs on with the buffers its calls bind.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/Tensor.h>
#include <torch/custom_class.h>

#include <neuron/program.hpp>

#include "graph.hpp"

namespace neuron::torch_bridge {

/// What torch.jit.save stores: format version, the container as uint8
/// tensor, the names of the program's inputs and outputs in call order.
using ModelState =
    std::tuple<int64_t, at::Tensor, std::vector<std::string>, std::vector<std::string>>;

inline constexpr int64_t model_state_version = 1;

class Model : public torch::CustomClassHolder {
  public:
    Model(Program program, std::vector<std::string> inputs, std::vector<std::string> outputs);
    ~Model() override;

    /// Compiles @p graph, whose inputs named in @p constant_names are the
    /// weights @p constants (they become program constants); the other
    /// inputs are the model's, in @p inputs order, and @p outputs names the
    /// results. With a non-empty @p workdir, writes model.nir (the compiled
    /// graph, weights included), model.nprog and compile.log there.
    /// @p compiler_args: "--no-fuse" (every operator on its own).
    static c10::intrusive_ptr<Model>
    compile(const c10::intrusive_ptr<Graph> &graph, const std::vector<std::string> &constant_names,
            const std::vector<at::Tensor> &constants, const std::vector<std::string> &inputs,
            const std::vector<std::string> &outputs, const std::string &workdir,
            const std::vector<std::string> &compiler_args);

    /// Runs the program on CPU tensors of the traced shapes and dtypes.
    /// Returns the outputs as CPU tensors over the host buffers the job
    /// wrote (no later call binds a buffer until torch frees its tensor),
    /// or as copies (device-memory buffers, or past 16 held outputs). An
    /// input that is such a tensor of the same device is bound as it is.
    std::vector<at::Tensor> forward(const std::vector<at::Tensor> &inputs);

    ModelState state() const;
    static c10::intrusive_ptr<Model> from_state(ModelState state);

    /// "linear_gelu: x fp32[1, 128, 768] -> y fp32[1, 128, 768], 2.4 MB program".
    std::string describe() const;
    /// The device and core the model runs on ("" before its first call).
    std::string placement() const;
    /// Runs the model on core @p core of the device (else on the first core
    /// of $NEURON_RT_VISIBLE_CORES, else core 0); before its first call.
    void bind_core(int64_t core);
    /// Milliseconds of the last call's steps: inputs into the buffers the
    /// job binds (copied, or bound as they are) and the output buffers
    /// taken, the job from submit to its fence, the outputs made tensors.
    std::vector<double> last_call_ms() const;

    const Program &program() const { return program_; }
    const std::vector<std::string> &input_names() const { return inputs_; }
    const std::vector<std::string> &output_names() const { return outputs_; }

  private:
    struct Runtime;
    const ArgumentInfo &argument(const std::string &name) const;
    Runtime &runtime(); ///< opens the device and loads the program on first use

    Program program_;
    std::vector<std::string> inputs_, outputs_;
    mutable std::mutex mutex_; ///< one call at a time uses the buffers and timings
    std::unique_ptr<Runtime> runtime_;
    std::optional<unsigned> core_; ///< bind_core()'s
    double inputs_ms_ = 0, job_ms_ = 0, outputs_ms_ = 0;
};

/// torch's dtype of a program argument's.
at::ScalarType torch_dtype(DType t);

/// The cores models may run on: those $NEURON_RT_VISIBLE_CORES lists ("2",
/// "0-1", "1,3"), else every core of the first device.
std::vector<int64_t> visible_cores();

} // namespace neuron::torch_bridge
