// SPDX-License-Identifier: MIT
// What PyTorch asks of the `neuron` backend through its hooks: whether it
// is there, how many indices, the generators; and the registration of the
// allocator. The generator is a CPU-algorithm generator: operators without
// a device kernel draw from it through the CPU fallback, so
// torch.neuron.manual_seed makes them reproducible. It also keeps the
// Philox offset of the device's random operators (torch_neuronx/random.py,
// ISA 1.2's RANDOM): its seed is the generator's seed, its offset the
// generator's offset (get_offset/set_offset, as CUDA's Philox generator),
// 0 after every seeding.
#include <cstring>
#include <mutex>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/ops/empty.h>
#include <c10/core/Allocator.h>

#include "allocator.hpp"
#include "cores.hpp"
#include "pinned.hpp"

namespace neuron::torch_bridge {

namespace {

class Generator final : public at::CPUGeneratorImpl {
  public:
    explicit Generator(c10::DeviceIndex index) {
        device_ = c10::Device(c10::DeviceType::PrivateUse1, index);
        key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
    }
    void set_current_seed(uint64_t seed) override {
        at::CPUGeneratorImpl::set_current_seed(seed);
        philox_offset_ = 0;
    }
    void set_offset(uint64_t offset) override { philox_offset_ = offset; }
    uint64_t get_offset() const override { return philox_offset_; }

    // The state: the CPU generator's, then the Philox offset (8 bytes,
    // little endian), so that restoring a state (torch.utils.checkpoint's
    // recomputation, fork_rng) draws the device's dropout masks again.
    c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
        const at::Tensor cpu(at::CPUGeneratorImpl::get_state());
        at::Tensor out = at::empty({cpu.numel() + kOffsetBytes}, at::kByte);
        std::memcpy(out.data_ptr(), cpu.data_ptr(), static_cast<size_t>(cpu.numel()));
        std::memcpy(out.data_ptr<uint8_t>() + cpu.numel(), &philox_offset_, kOffsetBytes);
        return out.getIntrusivePtr();
    }
    void set_state(const c10::TensorImpl &state) override {
        const int64_t cpu_bytes = at::Tensor(at::CPUGeneratorImpl::get_state()).numel();
        TORCH_CHECK(state.numel() == cpu_bytes + kOffsetBytes && state.dtype() == at::kByte,
                    "neuron generator: a state is ", cpu_bytes + kOffsetBytes,
                    " bytes (the CPU generator's and the Philox offset), not ", state.numel());
        const auto *bytes = static_cast<const uint8_t *>(state.data());
        at::Tensor cpu = at::empty({cpu_bytes}, at::kByte);
        std::memcpy(cpu.data_ptr(), bytes, static_cast<size_t>(cpu_bytes));
        at::CPUGeneratorImpl::set_state(*cpu.unsafeGetTensorImpl());
        std::memcpy(&philox_offset_, bytes + cpu_bytes, kOffsetBytes);
    }

  private:
    static constexpr int64_t kOffsetBytes = 8;
    uint64_t philox_offset_ = 0;
};

struct Hooks final : public at::PrivateUse1HooksInterface {
    bool isBuilt() const override { return true; }
    bool isAvailable() const override { return core_count() > 0; }
    bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
    c10::DeviceIndex deviceCount() const override { return core_count(); }
    void init() const override {}
    void setCurrentDevice(c10::DeviceIndex index) const override { set_current_core_index(index); }
    c10::DeviceIndex getCurrentDevice() const override { return current_core_index(); }
    c10::DeviceIndex exchangeDevice(c10::DeviceIndex index) const override {
        c10::DeviceIndex old = current_core_index();
        set_current_core_index(index);
        return old;
    }
    c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex index) const override {
        return exchangeDevice(index);
    }

    const at::Generator &getDefaultGenerator(c10::DeviceIndex index) const override {
        static std::once_flag made;
        static std::vector<at::Generator> defaults;
        std::call_once(made, [] {
            for (c10::DeviceIndex i = 0; i < core_count(); i++) {
                defaults.push_back(at::make_generator<Generator>(i));
                defaults.back().set_current_seed(c10::detail::getNonDeterministicRandom());
            }
        });
        const c10::DeviceIndex i = index < 0 ? current_core_index() : index;
        core_at(i); // checks it
        return defaults[static_cast<size_t>(i)];
    }
    at::Generator getNewGenerator(c10::DeviceIndex index) const override {
        return at::make_generator<Generator>(index < 0 ? current_core_index() : index);
    }

    bool isPinnedPtr(const void *data) const override { return pinned_range(data, 1).has_value(); }
    at::Allocator *getPinnedMemoryAllocator() const override { return &pinned_allocator(); }

    void resizePrivateUse1Bytes(const c10::Storage &storage, size_t bytes) const override {
        grow_storage(*storage.unsafeGetStorageImpl(), bytes);
    }
};

struct Registration {
    Registration() {
        at::RegisterPrivateUse1HooksInterface(new Hooks);
        c10::SetAllocator(c10::DeviceType::PrivateUse1, &device_allocator());
        at::setHostAllocator(c10::DeviceType::PrivateUse1, &pinned_host_allocator());
    }
};

const Registration registration;

} // namespace

} // namespace neuron::torch_bridge
