// SPDX-License-Identifier: MIT
// c10's device guard for the `neuron` device type: the current index and
// stream, streams and events (streams.hpp), as torch.Stream, torch.Event,
// torch.accelerator and DeviceGuard use them.
#include <algorithm>
#include <chrono>
#include <optional>

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include "allocator.hpp"
#include "cores.hpp"
#include "dtypes.hpp"
#include "streams.hpp"

namespace neuron::torch_bridge {

namespace {

constexpr auto kNeuron = c10::DeviceType::PrivateUse1;

Event &as_event(void *event) {
    return *static_cast<Event *>(event);
}

std::chrono::steady_clock::time_point event_time(const Event &e) {
    auto time = e.recorded_at;
    for (const Fence &f : e.fences) {
        std::optional<std::chrono::steady_clock::time_point> done;
        try {
            done = f.completed_at();
        } catch (const Error &err) {
            TORCH_CHECK(false, "neuron: the time of an event: ", err.what());
        }
        TORCH_CHECK(done, "Both events must be completed before calculating elapsed time (",
                    f.label(), " is still running).");
        time = std::max(time, *done);
    }
    return time;
}

struct GuardImpl final : public c10::impl::DeviceGuardImplInterface {
    c10::DeviceType type() const override { return kNeuron; }

    c10::Device exchangeDevice(c10::Device d) const override {
        c10::Device old = getDevice();
        if (d.index() != old.index())
            setDevice(d);
        return old;
    }
    c10::Device getDevice() const override { return {kNeuron, current_core_index()}; }
    void setDevice(c10::Device d) const override {
        TORCH_CHECK(d.type() == kNeuron, "neuron: ", d, " is not a neuron device");
        set_current_core_index(d.index());
    }
    void uncheckedSetDevice(c10::Device d) const noexcept override {
        try {
            set_current_core_index(d.index());
        } catch (...) { // an invalid index was refused when it was first set
        }
    }

    // A device without an index (torch.Stream("neuron")) is the current one.
    static c10::DeviceIndex index_of(c10::Device d) {
        return d.has_index() ? d.index() : current_core_index();
    }
    c10::Stream getStream(c10::Device d) const override { return current_stream(index_of(d)); }
    c10::Stream getDefaultStream(c10::Device d) const override {
        return default_stream(index_of(d));
    }
    c10::Stream getNewStream(c10::Device d, int) const override { return new_stream(index_of(d)); }
    c10::Stream getStreamFromGlobalPool(c10::Device d, bool) const override {
        return new_stream(index_of(d));
    }
    c10::Stream exchangeStream(c10::Stream s) const override { return exchange_current_stream(s); }

    c10::DeviceIndex deviceCount() const noexcept override { return core_count(); }
    c10::DeviceCapability getDeviceCapability(c10::Device) const override {
        c10::DeviceCapability capability;
#define NEURON_HOLDS(_, name)                                                                      \
    capability.capability_data.supported_scalar_types.has_##name =                                 \
        device_converts(c10::ScalarType::name);
        AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS(NEURON_HOLDS)
#undef NEURON_HOLDS
        return capability;
    }

    void destroyEvent(void *event, const c10::DeviceIndex) const noexcept override {
        delete static_cast<Event *>(event);
    }
    void record(void **event, const c10::Stream &stream, const c10::DeviceIndex index,
                const c10::EventFlag flag) const override {
        TORCH_CHECK(index == -1 || index == stream.device_index(),
                    "neuron: event of neuron:", int(index),
                    " recorded on a stream of neuron:", int(stream.device_index()));
        if (!*event)
            *event = new Event;
        Event &e = as_event(*event);
        e.fences = stream_state(stream).marks();
        e.recorded = true;
        e.timing = flag == c10::EventFlag::BACKEND_DEFAULT;
        e.recorded_at = std::chrono::steady_clock::now();
    }
    void block(void *event, const c10::Stream &stream) const override {
        if (!event)
            return;
        StreamState &s = stream_state(stream);
        for (const Fence &f : as_event(event).fences)
            s.wait_for(f);
    }
    bool queryEvent(void *event) const override {
        if (!event)
            return true;
        for (const Fence &f : as_event(event).fences) {
            std::error_code ec = f.try_wait(std::chrono::nanoseconds(0));
            TORCH_CHECK(!ec || ec == errc::timeout, "neuron: ", f.message());
            if (ec)
                return false;
        }
        return true;
    }
    void synchronizeEvent(void *event) const override {
        if (!event)
            return;
        for (const Fence &f : as_event(event).fences) {
            std::error_code ec = f.try_wait(std::chrono::seconds(120));
            TORCH_CHECK(!ec, "neuron: waiting for an event: ",
                        ec == errc::timeout ? f.label() + " did not complete" : f.message());
        }
    }
    // Milliseconds from event1 to event2. An event's time is when the work
    // it stands for completed (its fences' signal times, which libneuron
    // reads on the clock of steady_clock), or when it was recorded if that
    // work had completed by then or there was none (an idle stream's). c10's
    // InlineEvent checked the flags, the recording and query() before.
    double elapsedTime(void *event1, void *event2, const c10::DeviceIndex) const override {
        TORCH_CHECK_VALUE(event1 && event2,
                          "Both events must be recorded before calculating elapsed time.");
        const Event &start = as_event(event1), &end = as_event(event2);
        TORCH_CHECK_VALUE(start.timing && end.timing,
                          "Both events must be created with argument 'enable_timing=True'.");
        return std::chrono::duration<double, std::milli>(event_time(end) - event_time(start))
            .count();
    }
    bool queryStream(const c10::Stream &stream) const override {
        return stream_state(stream).query();
    }
    void synchronizeStream(const c10::Stream &stream) const override {
        stream_state(stream).synchronize();
    }
    void synchronizeDevice(const c10::DeviceIndex index) const override {
        synchronize_device(index);
    }
    void recordDataPtrOnStream(const c10::DataPtr &ptr, const c10::Stream &stream) const override {
        device_allocator().recordStream(ptr, stream);
    }
};

} // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

} // namespace neuron::torch_bridge
