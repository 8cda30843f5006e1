// SPDX-License-Identifier: MIT
// Profiling jobs: the trace a device writes for a profiled job (hw/README.md
// section 4.8), the Profile buffer it writes it into, and the .ntrace file
// that collects the traces of a whole run (docs/profiling.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <neuron/buffer.hpp>
#include <neuron/export.h>
#include <neuron/program.hpp>

namespace neuron {

class Device;

/// Trace format constants (struct neuron_trace_header in hw/neuron_regs.h).
namespace trace_format {
inline constexpr uint32_t magic = 0x4652504e; // "NPRF" in memory order
inline constexpr uint16_t version_major = 1;
inline constexpr uint32_t header_size = 64;
inline constexpr uint32_t record_size = 48;
inline constexpr uint32_t flag_truncated = 1u << 0;   ///< the trace buffer filled up
inline constexpr uint32_t flag_write_error = 1u << 1; ///< a record could not be written
} // namespace trace_format

/// One executed instruction of a profiled job.
struct TraceRecord {
    Engine engine = Engine::tensor;
    uint8_t opcode = 0;      ///< NEURON_OP_*
    uint8_t sem = 0;         ///< SEM_SIGNAL/SEM_WAIT: the semaphore
    bool has_signal = false; ///< SEM_WAIT: @ref signal names the signal it took its time from
    uint32_t index = 0;      ///< the instruction's index in its engine's stream
    uint64_t start = 0;      ///< the stream's cycle clock before it
    uint64_t end = 0;        ///< and after it
    uint64_t wait = 0;       ///< SEM_WAIT: cycles spent waiting
    uint32_t bytes = 0;      ///< DMA: bytes moved
    uint32_t signal = 0;     ///< SEM_WAIT: the record number of that SEM_SIGNAL
    uint32_t sbuf_high = 0;  ///< SBUF bytes per partition written so far
    uint32_t psum_high = 0;  ///< PSUM bytes per partition written so far
};

/// A profiled job's trace, as the device wrote it.
struct Trace {
    uint16_t version_major = 0;
    uint16_t version_minor = 0;
    uint32_t flags = 0;  ///< trace_format::flag_*
    uint32_t status = 0; ///< the job's final NEURON_JOB_STATUS_*
    uint64_t instructions = 0;
    uint64_t cycles = 0; ///< the job's cycles (its completion entry's)
    uint64_t dma_bytes = 0;
    uint32_t sbuf_high = 0; ///< SBUF bytes per partition the job wrote
    uint32_t psum_high = 0;
    std::vector<TraceRecord> records;

    bool truncated() const { return (flags & trace_format::flag_truncated) != 0; }
};

/// Parses a device trace (header and records). Throws Error(errc::invalid_argument)
/// naming the field, its offset and what is wrong with it.
NEURON_EXPORT Trace parse_trace(std::span<const std::byte> bytes);

/// The buffer a profiled job's trace goes into: pass it to Queue::submit.
/// One Profile holds the trace of the last job submitted with it.
class NEURON_EXPORT Profile {
  public:
    static constexpr uint64_t default_records = 1u << 16;

    /// Room for @p max_records records (an instruction each); later ones are
    /// dropped and the trace is marked truncated. Throws Error(not_supported)
    /// when the device cannot profile.
    explicit Profile(const Device &device, uint64_t max_records = default_records);

    uint64_t max_records() const { return max_records_; }
    const Buffer &buffer() const { return *buffer_; }
    /// The trace's bytes: header and the records written. Read it after the
    /// job's fence has signalled.
    std::vector<std::byte> bytes() const;
    Trace read() const { return parse_trace(bytes()); }

  private:
    std::shared_ptr<Buffer> buffer_;
    uint64_t max_records_;
};

/// The .ntrace file: the traces of the profiled jobs of a run, each with
/// the program it ran and the device's shape (docs/profiling.md).
namespace ntrace {

inline constexpr uint32_t file_magic = 0x4352544e;    // "NTRC"
inline constexpr uint32_t job_magic = 0x424f4a4e;     // "NJOB"
inline constexpr uint32_t program_magic = 0x4752504e; // "NPRG", version 2
/// Version 2.0 stores each program once per file (a program chunk that the
/// jobs name by id); the reader also reads 1.0 files (each job with its
/// program).
inline constexpr uint16_t version_major = 2;
inline constexpr uint16_t version_minor = 0;
inline constexpr uint32_t file_header_size = 16;
inline constexpr uint32_t job_header_size = 72; ///< 64 in version 1
inline constexpr uint32_t program_header_size = 32;

/// $NEURON_PROFILE: the file every job of the process is profiled into.
inline constexpr const char *env_file = "NEURON_PROFILE";
/// $NEURON_PROFILE_RECORDS: the records each job's trace has room for.
inline constexpr const char *env_records = "NEURON_PROFILE_RECORDS";

/// One profiled job. Jobs read from one file that ran the same program
/// share one copy of it (a Program's copies share its container).
struct Job {
    explicit Job(Program p) : program(std::move(p)) {}

    Program program; ///< the program it ran

    uint32_t core = 0;
    uint32_t pid = 0;
    uint64_t seqno = 0;
    uint32_t clock_mhz = 0;
    uint32_t partitions = 0;
    uint64_t sbuf_size = 0; ///< bytes per core
    uint64_t psum_size = 0;
    std::vector<std::byte> trace; ///< the device's trace
};

/// The id a file names a program by: FNV-1a 64 of its container.
NEURON_EXPORT uint64_t program_id(std::span<const std::byte> container) noexcept;
/// The file header.
NEURON_EXPORT std::vector<std::byte> encode_header();
/// A program chunk: @p container, named by program_id().
NEURON_EXPORT std::vector<std::byte> encode_program(std::span<const std::byte> container);
/// One job's chunk, naming its program by id (a program chunk must precede it).
NEURON_EXPORT std::vector<std::byte> encode_job(const Job &job);
/// Appends @p job to @p path, with the file header if the file is empty and
/// its program's chunk unless this process already wrote it to the file,
/// under an exclusive lock (several processes may append). Throws Error(io_error).
NEURON_EXPORT void append(const std::filesystem::path &path, const Job &job);
/// Every job of a .ntrace file's bytes; @p name prefixes errors, which
/// say at which offset the file is broken and how. Throws Error(invalid_argument).
NEURON_EXPORT std::vector<Job> parse(std::span<const std::byte> bytes, const std::string &name);
/// Reads and parses a file. Throws Error(io_error) if it cannot be read.
NEURON_EXPORT std::vector<Job> read(const std::filesystem::path &path);

} // namespace ntrace

} // namespace neuron
