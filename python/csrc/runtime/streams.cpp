// SPDX-License-Identifier: MIT
#include "streams.hpp"

#include <map>
#include <memory>

#include <c10/util/Exception.h>

#include "cores.hpp"

namespace neuron::torch_bridge {

namespace {

// Fences of completed work checked per new work item: keeps the pending
// list short without a system call per item.
constexpr size_t reaped_per_item = 2;

// A fence that has not signalled after this long is reported as hung; the
// driver's own job timeout (which fails the job and resets the core) is
// shorter, so this is only reached when something else went wrong.
constexpr auto wait_limit = std::chrono::seconds(120);

struct Streams {
    std::mutex mutex; ///< protects the map
    std::map<std::pair<c10::DeviceIndex, c10::StreamId>, std::unique_ptr<StreamState>> states;
    std::map<c10::DeviceIndex, c10::StreamId> next_id;
};

Streams &streams() {
    static Streams s;
    return s;
}

thread_local std::map<c10::DeviceIndex, c10::StreamId> current_ids;

c10::Stream make_stream(c10::DeviceIndex index, c10::StreamId id) {
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, index), id);
}

} // namespace

StreamState &stream_state(c10::Stream stream) {
    TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1, "neuron: ", stream,
                " is not a stream of a neuron device");
    core_at(stream.device_index()); // checks the index
    Streams &s = streams();
    std::lock_guard lock(s.mutex);
    auto key = std::make_pair(stream.device_index(), stream.id());
    auto it = s.states.find(key);
    if (it == s.states.end()) {
        auto next = s.next_id.find(stream.device_index());
        TORCH_CHECK(stream.id() == 0 || (next != s.next_id.end() && stream.id() < next->second),
                    "neuron: stream ", stream.id(), " of neuron:", int(stream.device_index()),
                    " was never created");
        it = s.states.emplace(key, std::make_unique<StreamState>(stream)).first;
    }
    return *it->second;
}

c10::Stream default_stream(c10::DeviceIndex index) {
    return make_stream(index, 0);
}

c10::Stream current_stream(c10::DeviceIndex index) {
    auto it = current_ids.find(index);
    return make_stream(index, it == current_ids.end() ? 0 : it->second);
}

c10::Stream exchange_current_stream(c10::Stream stream) {
    c10::Stream old = current_stream(stream.device_index());
    current_ids[stream.device_index()] = stream.id();
    return old;
}

c10::Stream new_stream(c10::DeviceIndex index) {
    core_at(index);
    Streams &s = streams();
    std::lock_guard lock(s.mutex);
    auto [it, _] = s.next_id.try_emplace(index, 1);
    return make_stream(index, it->second++);
}

void synchronize_device(c10::DeviceIndex index) {
    std::vector<StreamState *> of_index;
    {
        Streams &s = streams();
        std::lock_guard lock(s.mutex);
        for (auto &[key, state] : s.states)
            if (key.first == index)
                of_index.push_back(state.get());
    }
    for (StreamState *state : of_index)
        state->synchronize();
}

std::vector<Fence> StreamState::take_dependencies_locked() {
    std::vector<Fence> deps = std::move(waits_);
    waits_.clear();
    return deps;
}

void StreamState::track_locked(Fence fence, std::any keep_alive, bool is_job,
                               std::vector<std::any> &dropped) {
    reap_locked(reaped_per_item, dropped);
    pending_.push_back({std::move(fence), std::move(keep_alive)});
    last_is_job_ = is_job;
}

void StreamState::reap_locked(size_t at_most, std::vector<std::any> &dropped) {
    for (size_t i = 0; i < at_most && !pending_.empty(); i++) {
        std::error_code ec = pending_.front().fence.try_wait(std::chrono::nanoseconds(0));
        if (ec == errc::timeout)
            return;
        if (ec && failure_.empty())
            failure_ = pending_.front().fence.message();
        dropped.push_back(std::move(pending_.front().keep_alive));
        pending_.pop_front();
    }
}

void StreamState::raise_failure_locked() {
    if (failure_.empty())
        return;
    std::string f = std::move(failure_);
    failure_.clear();
    TORCH_CHECK(false, "neuron: asynchronous work on neuron:", int(stream_.device_index()),
                " failed: ", f,
                " (reported at this synchronization; the failing job names its operator)");
}

void StreamState::submit(const LoadedProgram &program, const Arguments &args, std::any keep_alive) {
    const Core &core = core_at(stream_.device_index());
    std::vector<std::any> dropped; // destroyed after the lock is released
    std::lock_guard lock(mutex_);
    std::vector<Fence> deps = take_dependencies_locked();
    // The queue runs its jobs in order: only a copy before needs a fence.
    if (!last_is_job_ && !pending_.empty())
        deps.push_back(pending_.back().fence);
    try {
        track_locked(core.queue.submit(program, args, deps), std::move(keep_alive), true, dropped);
    } catch (const Error &e) {
        TORCH_CHECK(false, "neuron: queueing '", program.program().name(),
                    "' on neuron:", int(stream_.device_index()), ": ", e.what());
    }
}

void StreamState::copy(const BufferRange &dst, const BufferRange &src, std::any keep_alive) {
    const Core &core = core_at(stream_.device_index());
    std::vector<std::any> dropped; // destroyed after the lock is released
    std::lock_guard lock(mutex_);
    std::vector<Fence> deps = take_dependencies_locked();
    if (!pending_.empty())
        deps.push_back(pending_.back().fence);
    try {
        track_locked(core.device.copy(dst, src, deps), std::move(keep_alive), false, dropped);
    } catch (const Error &e) {
        TORCH_CHECK(false, "neuron: queueing a copy of ", src.size,
                    " bytes on neuron:", int(stream_.device_index()), ": ", e.what());
    }
}

Fence StreamState::last() const {
    std::lock_guard lock(mutex_);
    return pending_.empty() ? Fence{} : pending_.back().fence;
}

std::vector<Fence> StreamState::marks() const {
    std::lock_guard lock(mutex_);
    std::vector<Fence> m = waits_;
    if (!pending_.empty())
        m.push_back(pending_.back().fence);
    return m;
}

void StreamState::wait_for(const Fence &fence) {
    if (!fence)
        return;
    std::lock_guard lock(mutex_);
    waits_.push_back(fence);
}

void StreamState::wait_locked(const Fence &fence) {
    std::error_code ec = fence.try_wait(wait_limit);
    if (ec == errc::timeout && failure_.empty())
        failure_ =
            fence.label() + " did not complete in " + std::to_string(wait_limit.count()) + " s";
    else if (ec && failure_.empty())
        failure_ = fence.message();
}

void StreamState::synchronize() {
    std::vector<std::any> dropped; // destroyed after the lock is released
    std::lock_guard lock(mutex_);
    for (const Fence &f : waits_)
        wait_locked(f);
    waits_.clear(); // completed: the next work need not wait for them
    while (!pending_.empty()) {
        wait_locked(pending_.front().fence);
        dropped.push_back(std::move(pending_.front().keep_alive));
        pending_.pop_front();
    }
    raise_failure_locked();
}

bool StreamState::query() {
    std::vector<std::any> dropped; // destroyed after the lock is released
    std::lock_guard lock(mutex_);
    reap_locked(pending_.size(), dropped);
    raise_failure_locked();
    for (const Fence &f : waits_)
        if (f.try_wait(std::chrono::nanoseconds(0)) == errc::timeout)
            return false;
    return pending_.empty();
}

} // namespace neuron::torch_bridge
