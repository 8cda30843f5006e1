// SPDX-License-Identifier: MIT
// Streams and events of the `neuron` device. A stream is an order of work
// on one core: its jobs go to the core's queue (which runs them in order),
// its copies to the DMA engines, each after the stream's previous work
// (a fence dependency where the queue's own order does not give it).
// Events are the stream's last fence when recorded. Errors of work that
// was never waited for are raised at the next synchronization, naming the
// job (its program is the operator) and the core, as CUDA does.
#pragma once

#include <any>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include <c10/core/Stream.h>

#include <neuron/neuron.hpp>

namespace neuron::torch_bridge {

class StreamState {
  public:
    explicit StreamState(c10::Stream stream) : stream_(stream) {}

    /// Runs @p program on the stream's core after the stream's work (and
    /// the events it was told to wait for); @p keep_alive lives until the
    /// job completed.
    void submit(const LoadedProgram &program, const Arguments &args, std::any keep_alive = {});
    /// Copies @p src to @p dst after the stream's work.
    void copy(const BufferRange &dst, const BufferRange &src, std::any keep_alive = {});
    /// The fence of the stream's last work ({} when it has none pending).
    Fence last() const;
    /// What an event recorded now stands for: the stream's last work and
    /// the events it was told to wait for since (which its next work waits
    /// for, as a CUDA stream's later work does).
    std::vector<Fence> marks() const;
    /// Makes the stream's next work wait for @p fence.
    void wait_for(const Fence &fence);
    /// Waits for all of the stream's work and the events it was told to
    /// wait for; raises the first failure.
    void synchronize();
    /// Whether all of its work and the events it waits for completed
    /// (raises a failure it sees).
    bool query();
    c10::Stream stream() const { return stream_; }

  private:
    struct Pending {
        Fence fence;
        std::any keep_alive;
    };
    std::vector<Fence> take_dependencies_locked();
    // Completed work's keep_alive goes to @p dropped, which the caller
    // destroys after it released mutex_: a tensor kept alive there frees
    // its block, and the allocator then asks the stream for its last work.
    void track_locked(Fence fence, std::any keep_alive, bool is_job,
                      std::vector<std::any> &dropped);
    void reap_locked(size_t at_most, std::vector<std::any> &dropped);
    /// Waits for @p fence, keeping its failure (or timeout) as the stream's.
    void wait_locked(const Fence &fence);
    void raise_failure_locked();

    c10::Stream stream_;
    mutable std::mutex mutex_; ///< protects everything below
    std::deque<Pending> pending_;
    std::vector<Fence> waits_; ///< events the next work waits for
    bool last_is_job_ = false;
    std::string failure_; ///< the first failure seen and not yet raised
};

/// The stream @p stream names (the default stream is id 0 of each index).
StreamState &stream_state(c10::Stream stream);
/// The calling thread's current stream of @p index.
c10::Stream current_stream(c10::DeviceIndex index);
c10::Stream exchange_current_stream(c10::Stream stream);
c10::Stream default_stream(c10::DeviceIndex index);
/// A new stream of @p index.
c10::Stream new_stream(c10::DeviceIndex index);
/// Waits for every stream of @p index.
void synchronize_device(c10::DeviceIndex index);

/// An event: what a stream had queued, and waited for, when it was
/// recorded (StreamState::marks()), and when it was recorded.
struct Event {
    std::vector<Fence> fences;
    bool recorded = false;
    /// Recorded by a torch.Event(enable_timing=True) (EventFlag::BACKEND_DEFAULT).
    bool timing = false;
    std::chrono::steady_clock::time_point recorded_at;
};

} // namespace neuron::torch_bridge
