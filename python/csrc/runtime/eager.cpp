// SPDX-License-Identifier: MIT
#include "eager.hpp"

#include <bit>
#include <cstring>
#include <list>
#include <span>

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../model.hpp"
#include "allocator.hpp"
#include "cores.hpp"
#include "streams.hpp"

namespace neuron::torch_bridge {

EagerKernel::EagerKernel(Program program, std::vector<std::string> inputs,
                         std::vector<std::string> outputs)
    : program_(std::move(program)), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
    auto find = [&](const std::string &n, Direction dir) {
        const ArgumentInfo *a = program_.find_argument(n);
        TORCH_CHECK(a && a->direction == dir, "neuron: program '", program_.name(), "' has no ",
                    dir == Direction::in ? "input" : "output", " '", n, "'");
        return a;
    };
    for (const auto &n : inputs_)
        input_args_.push_back(find(n, Direction::in));
    for (const auto &n : outputs_)
        output_args_.push_back(find(n, Direction::out));
    for (const auto &[out_slot, in_slot] : in_place_slots(program_))
        for (size_t o = 0; o < output_args_.size(); o++)
            for (size_t i = 0; i < input_args_.size(); i++)
                if (output_args_[o]->slot == out_slot && input_args_[i]->slot == in_slot)
                    in_place_.emplace(o, i);
}

c10::intrusive_ptr<EagerKernel> EagerKernel::of_model(const c10::intrusive_ptr<Model> &model) {
    return c10::make_intrusive<EagerKernel>(model->program(), model->input_names(),
                                            model->output_names());
}

c10::intrusive_ptr<EagerKernel> EagerKernel::from_bytes(const at::Tensor &bytes,
                                                        std::vector<std::string> inputs,
                                                        std::vector<std::string> outputs) {
    at::Tensor b = bytes.contiguous();
    TORCH_CHECK(b.scalar_type() == at::kByte && b.dim() == 1 && b.device().is_cpu(),
                "neuron: a kernel's program is a uint8 vector on the CPU");
    try {
        Program p = Program::parse(std::span(static_cast<const std::byte *>(b.data_ptr()),
                                             static_cast<size_t>(b.numel())));
        return c10::make_intrusive<EagerKernel>(std::move(p), std::move(inputs),
                                                std::move(outputs));
    } catch (const Error &e) {
        TORCH_CHECK(false, "neuron: a cached kernel's program is invalid: ", e.what());
    }
}

at::Tensor EagerKernel::program_bytes() const {
    std::span<const std::byte> b = program_.bytes();
    at::Tensor t = at::empty({static_cast<int64_t>(b.size())}, at::kByte);
    std::memcpy(t.data_ptr(), b.data(), b.size());
    return t;
}

std::vector<at::Tensor> EagerKernel::output_meta() const {
    std::vector<at::Tensor> out;
    for (const ArgumentInfo *a : output_args_)
        out.push_back(
            at::empty(std::vector<int64_t>(a->shape.begin(), a->shape.end()),
                      at::TensorOptions().dtype(torch_dtype(a->dtype)).device(at::kMeta)));
    return out;
}

const LoadedProgram &EagerKernel::loaded_on(const Device &device) {
    std::lock_guard lock(mutex_);
    auto &slot = loaded_[device.fd()];
    if (!slot) {
        try {
            slot = std::make_unique<LoadedProgram>(device.load(program_));
        } catch (const Error &e) {
            TORCH_CHECK(false, "neuron: loading '", program_.name(), "': ", e.what());
        }
    }
    return *slot;
}

c10::DeviceIndex EagerKernel::bind_inputs(const std::vector<at::Tensor> &inputs,
                                          Arguments &args) const {
    TORCH_CHECK(inputs.size() == inputs_.size(), "neuron: '", program_.name(), "' takes ",
                inputs_.size(), " inputs, got ", inputs.size());
    const c10::DeviceIndex index =
        inputs.empty() ? current_core_index() : inputs.front().device().index();
    for (size_t i = 0; i < inputs.size(); i++) {
        const at::Tensor &t = inputs[i];
        TORCH_CHECK(t.device().is_privateuseone() && t.device().index() == index, "neuron: '",
                    program_.name(), "': input ", i, " is on ", t.device(),
                    ", the others on neuron:", int(index));
        TORCH_CHECK(t.is_contiguous() && t.nbytes() == input_args_[i]->size, "neuron: '",
                    program_.name(), "': input ", i, " is not a contiguous tensor of ",
                    input_args_[i]->size, " bytes");
        args.bind(inputs_[i], tensor_range(t));
    }
    return index;
}

void EagerKernel::submit(c10::DeviceIndex index, const Arguments &args) {
    stream_state(current_stream(index)).submit(loaded_on(core_at(index).device), args);
}

std::vector<at::Tensor> EagerKernel::run(const std::vector<at::Tensor> &inputs) {
    Arguments args;
    const c10::DeviceIndex index = bind_inputs(inputs, args);
    const c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, index));
    std::vector<at::Tensor> outputs;
    for (size_t i = 0; i < outputs_.size(); i++) {
        const ArgumentInfo &a = *output_args_[i];
        outputs.push_back(at::empty(std::vector<int64_t>(a.shape.begin(), a.shape.end()),
                                    at::TensorOptions()
                                        .dtype(torch_dtype(a.dtype))
                                        .device(c10::DeviceType::PrivateUse1, index)));
        args.bind(outputs_[i], tensor_range(outputs.back()));
    }
    submit(index, args);
    return outputs;
}

bool EagerKernel::run_into(const std::vector<at::Tensor> &inputs,
                           const std::vector<at::Tensor> &outputs) {
    TORCH_CHECK(outputs.size() == outputs_.size(), "neuron: '", program_.name(), "' has ",
                outputs_.size(), " outputs, got ", outputs.size());
    for (size_t o = 0; o < outputs.size(); o++) {
        const at::Tensor &t = outputs[o];
        const ArgumentInfo &a = *output_args_[o];
        if (!t.device().is_privateuseone() || !t.is_contiguous() ||
            t.scalar_type() != torch_dtype(a.dtype) || t.nbytes() != a.size)
            return false;
        // An output may be exactly an input's memory where the program
        // reads none of it after writing it; no other sharing.
        for (size_t i = 0; i < inputs.size(); i++)
            if (inputs[i].storage().is_alias_of(t.storage()) &&
                !(inputs[i].data_ptr() == t.data_ptr() && inputs[i].nbytes() == t.nbytes() &&
                  in_place_.contains({o, i})))
                return false;
        for (size_t other = 0; other < o; other++)
            if (outputs[other].storage().is_alias_of(t.storage()))
                return false;
    }
    Arguments args;
    const c10::DeviceIndex index = bind_inputs(inputs, args);
    for (size_t o = 0; o < outputs.size(); o++) {
        TORCH_CHECK(outputs[o].device().index() == index, "neuron: '", program_.name(),
                    "': output ", o, " is on ", outputs[o].device(),
                    ", the inputs on neuron:", int(index));
        args.bind(outputs_[o], tensor_range(outputs[o]));
    }
    submit(index, args);
    return true;
}

at::Tensor number_on_device(double value, c10::Device device) {
    struct Kept {
        uint64_t bits; // (-0.0 is not 0.0)
        c10::Device device;
        at::Tensor tensor;
    };
    constexpr size_t kept_values = 64;
    static std::mutex mutex;
    static std::list<Kept> latest; // most recent first
    const uint64_t bits = std::bit_cast<uint64_t>(value);
    {
        std::lock_guard lock(mutex);
        for (auto it = latest.begin(); it != latest.end(); ++it)
            if (it->bits == bits && it->device == device) {
                latest.splice(latest.begin(), latest, it);
                return it->tensor;
            }
    }
    at::Tensor t = at::full({1}, static_cast<float>(value), at::kFloat).to(device);
    std::lock_guard lock(mutex);
    latest.push_front({bits, device, t});
    if (latest.size() > kept_values)
        latest.pop_back();
    return t;
}

} // namespace neuron::torch_bridge
