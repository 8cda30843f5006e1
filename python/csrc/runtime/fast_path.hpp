// SPDX-License-Identifier: MIT
// The `neuron` dispatch key's kernel for every operator without one of its
// own: an operator call whose signature (the operator, its tensors' dtypes
// and shapes, its other arguments' values) already ran as a device kernel
// runs that kernel again from C++; any other call goes to the Python
// dispatcher (torch_neuronx/eager/dispatch.py), which compiles its kernel
// or runs it on the CPU, and hands the kernel back to be kept here. The
// Python side decides everything once per signature; this file repeats
// the decision, so a small op costs one job submission and no Python.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/intrusive_ptr.h>

namespace neuron::torch_bridge {

/// Registers the boxed kernel for operator @p name ("aten::add.Tensor") at
/// the device's key, in place of its composite kernel (the fallback serves
/// operators with no kernel at all).
void claim_operator(const std::string &name);

/// The operators that ran on the device from the kept kernels, with how
/// many times each did (the Python dispatcher counts the calls it ran).
std::vector<std::pair<std::string, int64_t>> kept_kernel_runs();

class EagerKernel;

/// What the Python dispatcher ran for a call: the kernel, when the call may
/// be repeated from C++ (else null), the operator it counted as having
/// run, and whether the kernel takes the call's floating-point numbers as
/// inputs after its tensors (then it serves every value of them).
struct PythonRan {
    c10::intrusive_ptr<EagerKernel> kernel;
    std::string counted_as;
    bool numbers_as_inputs = false;
};

/// The Python dispatcher's result for @p op on the arguments on @p stack,
/// pushed back on it, and what it ran (python_dispatch.cpp, the one user
/// of torch's Python C++ API).
PythonRan run_in_python(const c10::OperatorHandle &op, torch::jit::Stack *stack);

} // namespace neuron::torch_bridge
