// SPDX-License-Identifier: MIT
// Collectives over the NeuronCores of one process: a communicator of ranks
// (each a core of a device), ring algorithms built from DMA copies and
// reduction jobs, asynchronous, with a timeout (docs/distributed.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <neuron/buffer.hpp>
#include <neuron/device.hpp>
#include <neuron/export.h>
#include <neuron/program.hpp>

namespace neuron {

namespace detail {
struct CommState;
struct Round;
struct Joiner;
} // namespace detail

/// The reduction of all_reduce, reduce and reduce_scatter.
enum class CollectiveOp : uint8_t { sum = 0, avg = 1, max = 2, min = 3 };

/// "sum", "avg", "max", "min".
NEURON_EXPORT const char *to_string(CollectiveOp op) noexcept;

/// One rank: a NeuronCore of an open device. Its reductions run on that
/// core's queue; copies into its buffers run on its device's DMA engines.
struct Rank {
    Device device;
    unsigned core = 0;
};

struct CommunicatorOptions {
    /// How long a collective may take from its first rank's call: a rank
    /// that has not called by then is named in the error every other rank
    /// gets, and work on the devices that is not done by then fails the wait.
    std::chrono::milliseconds timeout{30000};
    /// The most bytes one reduction job or pipelined copy handles: larger
    /// segments are split into pieces of this size (a multiple of 512).
    uint64_t chunk_bytes = 1u << 20;
};

/// One rank's part of a collective. It completes once every rank has
/// called the collective and the device work touching this rank's buffers
/// has finished. Copies share the state.
class NEURON_EXPORT Work {
  public:
    Work() = default;
    explicit operator bool() const noexcept { return round_ != nullptr; }

    /// Waits until this rank's part is done, at most @p timeout and never
    /// past the communicator's timeout. Returns false if @p timeout passed
    /// first; throws Error when the collective failed: errc::timeout naming
    /// the ranks that did not take part (or the work still running), the
    /// collective's error for bad input on any rank, or a device failure.
    bool wait_for(std::chrono::nanoseconds timeout) const;
    /// Waits until done or the communicator's timeout; throws like wait_for().
    void wait() const;
    /// Whether every rank has called and the work was queued on the devices.
    bool issued() const;
    /// The fences of the device work touching this rank's buffers, once
    /// issued(): what later copies and jobs pass as dependencies. Empty
    /// before, and for a barrier.
    std::vector<Fence> fences() const;
    /// "all_reduce #3 of 1000 fp32 elements (sum), rank 1 of 4".
    std::string label() const;

  private:
    friend struct detail::Joiner;
    Work(std::shared_ptr<detail::Round> r, unsigned rank) : round_(std::move(r)), rank_(rank) {}
    std::shared_ptr<detail::Round> round_;
    unsigned rank_ = 0;
};

/// Ranks that run collectives together. Every rank calls each collective
/// (from any thread, in the same order as the other ranks): the k-th call
/// of each rank is one collective. A call checks its own arguments and
/// returns at once; the last rank's call checks that the ranks agree and
/// queues the work on the devices, asynchronously: buffers must stay alive
/// and untouched until the Work completes. Counts are elements of @p dtype.
class NEURON_EXPORT Communicator {
  public:
    /// Throws Error(invalid_argument) for no ranks, a core that does not
    /// exist, or one core given twice.
    explicit Communicator(std::vector<Rank> ranks, CommunicatorOptions options = {});
    ~Communicator();
    Communicator(Communicator &&) noexcept;
    Communicator &operator=(Communicator &&) noexcept;

    unsigned size() const;
    const Rank &rank(unsigned r) const;
    const CommunicatorOptions &options() const;

    /// recv = op over the ranks of send (both @p count elements; send ==
    /// recv reduces in place). Ring: reduce-scatter then all-gather.
    Work all_reduce(unsigned rank, const BufferRange &send, const BufferRange &recv, uint64_t count,
                    DType dtype, CollectiveOp op);
    /// buf of @p root to buf of every rank.
    Work broadcast(unsigned rank, const BufferRange &buf, uint64_t count, DType dtype,
                   unsigned root);
    /// recv of @p root = op over the ranks of send; recv is not used (may be
    /// empty) on the other ranks.
    Work reduce(unsigned rank, const BufferRange &send, const BufferRange &recv, uint64_t count,
                DType dtype, CollectiveOp op, unsigned root);
    /// recv (size() * count elements) holds every rank's send (count), by rank.
    Work all_gather(unsigned rank, const BufferRange &send, const BufferRange &recv, uint64_t count,
                    DType dtype);
    /// recv (count) = op over the ranks of block @p rank of send (size() * count).
    Work reduce_scatter(unsigned rank, const BufferRange &send, const BufferRange &recv,
                        uint64_t count, DType dtype, CollectiveOp op);
    /// Block j (count elements) of send goes to block @p rank of rank j's recv.
    Work all_to_all(unsigned rank, const BufferRange &send, const BufferRange &recv, uint64_t count,
                    DType dtype);
    /// Point to point: the k-th send from a to b pairs with b's k-th recv from a.
    Work send(unsigned rank, const BufferRange &buf, uint64_t count, DType dtype, unsigned peer);
    Work recv(unsigned rank, const BufferRange &buf, uint64_t count, DType dtype, unsigned peer);
    /// Completes once every rank has called it.
    Work barrier(unsigned rank);

  private:
    std::shared_ptr<detail::CommState> state_;
};

} // namespace neuron
