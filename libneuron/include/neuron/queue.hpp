// SPDX-License-Identifier: MIT
// Loaded programs, job arguments and core queues.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <neuron/allocator.hpp>
#include <neuron/buffer.hpp>
#include <neuron/export.h>
#include <neuron/program.hpp>

namespace neuron {

class Profile;

/// A program uploaded to a device: its device image and constants live in
/// one device buffer, written once and shared by every job that runs it.
class NEURON_EXPORT LoadedProgram {
  public:
    const Program &program() const { return program_; }
    const Buffer &buffer() const { return *buffer_; }
    uint64_t image_size() const { return image_size_; }
    uint64_t const_offset() const { return const_offset_; }
    uint64_t const_size() const { return const_size_; }

  private:
    friend class Device;
    LoadedProgram(Program p, std::shared_ptr<Buffer> b, uint64_t image_size, uint64_t const_offset,
                  uint64_t const_size)
        : program_(std::move(p)), buffer_(std::move(b)), image_size_(image_size),
          const_offset_(const_offset), const_size_(const_size) {}
    Program program_;
    std::shared_ptr<Buffer> buffer_;
    uint64_t image_size_;
    uint64_t const_offset_;
    uint64_t const_size_;
};

/// Buffers bound to a program's named arguments for one job.
class NEURON_EXPORT Arguments {
  public:
    Arguments &bind(std::string name, const BufferRange &range);
    Arguments &bind(std::string name, const Buffer &buffer) {
        return bind(std::move(name), buffer.range());
    }
    Arguments &bind(std::string name, const Allocation &a) {
        return bind(std::move(name), a.range());
    }

    struct Entry {
        std::string name;
        BufferRange range;
    };
    const std::vector<Entry> &entries() const { return entries_; }

  private:
    std::vector<Entry> entries_;
};

/// The job queue of one core. Jobs one Queue submits run in order; anything
/// else is ordered by fences.
class NEURON_EXPORT Queue {
  public:
    unsigned core() const { return core_; }
    const Device &device() const { return device_; }

    /// Runs @p program with @p args after every fence in @p deps; returns the
    /// job's fence. Every non-constant argument must be bound to a range of at
    /// least its size; the binding's rights follow its direction.
    /// With $NEURON_PROFILE set (docs/profiling.md) the job is profiled and
    /// its trace appended to that file once its fence is released.
    Fence submit(const LoadedProgram &program, const Arguments &args,
                 const std::vector<Fence> &deps = {}) const;
    /// The same, profiled: the device writes the job's trace into
    /// @p profile (read it with Profile::read() once the fence signalled).
    Fence submit(const LoadedProgram &program, const Arguments &args, const Profile &profile,
                 const std::vector<Fence> &deps = {}) const;

    /// One job of a batch.
    struct Job {
        const LoadedProgram &program;
        const Arguments &args;
        std::vector<Fence> deps = {};
    };
    /// Runs the jobs in order, as many submit() calls would, but hands them
    /// to the driver together: one system call for up to 64 jobs, and the
    /// device is told of them at once, which costs far less per job at
    /// depth. Returns their fences, in order. A job's dependencies cannot
    /// be other jobs of the same call (their fences do not exist yet; jobs
    /// of one queue run in order anyway). Every job is checked before any
    /// is queued; if the driver refuses a job, the jobs already queued are
    /// waited for before the error is thrown, so none is left running
    /// unseen.
    std::vector<Fence> submit(std::span<const Job> jobs) const;

  private:
    Fence submit_job(const LoadedProgram &program, const Arguments &args,
                     const std::vector<Fence> &deps, const Profile *profile) const;
    friend class Device;
    Queue(Device d, unsigned core) : device_(std::move(d)), core_(core) {}
    Device device_;
    unsigned core_;
};

} // namespace neuron
