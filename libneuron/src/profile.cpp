// SPDX-License-Identifier: MIT
// Profiled jobs: the device's trace, the Profile buffer, the .ntrace file
// and $NEURON_PROFILE's capture of every job of a process.
#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <neuron/device.hpp>
#include <neuron/profile.hpp>
#include <neuron/queue.hpp>

#include "device_state.hpp"
#include "neuron_isa.h"
#include "neuron_regs.h"

namespace neuron {

static_assert(trace_format::magic == NEURON_TRACE_MAGIC);
static_assert(trace_format::version_major == NEURON_TRACE_VERSION_MAJOR);
static_assert(trace_format::header_size == sizeof(neuron_trace_header));
static_assert(trace_format::record_size == sizeof(neuron_trace_record));
static_assert(trace_format::flag_truncated == NEURON_TRACE_F_TRUNCATED);
static_assert(trace_format::flag_write_error == NEURON_TRACE_F_WRITE_ERROR);
static_assert(cap_profile == DRM_NEURON_CAP_PROFILE);

namespace {

// Little-endian fields of a byte span, bounds-checked by the callers.
template <typename T> T get(std::span<const std::byte> b, size_t off) {
    T v = 0;
    for (size_t i = 0; i < sizeof(T); i++)
        v |= static_cast<T>(static_cast<T>(std::to_integer<uint8_t>(b[off + i])) << (8 * i));
    return v;
}

template <typename T> void put(std::vector<std::byte> &out, T v) {
    for (size_t i = 0; i < sizeof(T); i++)
        out.push_back(static_cast<std::byte>(static_cast<uint64_t>(v) >> (8 * i)));
}

[[noreturn]] void bad(const std::string &what, uint64_t offset, const std::string &why) {
    throw Error(errc::invalid_argument, fmt::format("{}: offset {:#x}: {}", what, offset, why));
}

// A trace's own checks; @p what and @p base place it in a larger file.
Trace parse_trace_at(std::span<const std::byte> b, const std::string &what, uint64_t base) {
    if (b.size() < trace_format::header_size)
        bad(what, base,
            fmt::format("a device trace starts with a {}-byte header, there are only {} bytes",
                        trace_format::header_size, b.size()));
    if (uint32_t m = get<uint32_t>(b, 0); m != trace_format::magic)
        bad(what, base,
            fmt::format("not a device trace: magic {:#010x}, expected {:#010x} (\"NPRF\")", m,
                        trace_format::magic));
    Trace t;
    t.version_major = get<uint16_t>(b, 4);
    t.version_minor = get<uint16_t>(b, 6);
    if (t.version_major != trace_format::version_major)
        bad(what, base + 4,
            fmt::format("device trace version {}.{}: this library reads major version {}",
                        t.version_major, t.version_minor, trace_format::version_major));
    uint32_t hsize = get<uint32_t>(b, 8), rsize = get<uint32_t>(b, 12);
    if (hsize < trace_format::header_size || hsize > b.size())
        bad(what, base + 8,
            fmt::format("header_size {} is below {} or beyond the trace's {} bytes", hsize,
                        trace_format::header_size, b.size()));
    if (rsize < trace_format::record_size)
        bad(what, base + 12,
            fmt::format("record_size {} is below {}", rsize, trace_format::record_size));
    uint64_t n = get<uint64_t>(b, 16);
    t.instructions = get<uint64_t>(b, 24);
    t.cycles = get<uint64_t>(b, 32);
    t.dma_bytes = get<uint64_t>(b, 40);
    t.flags = get<uint32_t>(b, 48);
    t.status = get<uint32_t>(b, 52);
    t.sbuf_high = get<uint32_t>(b, 56);
    t.psum_high = get<uint32_t>(b, 60);
    if (n > (b.size() - hsize) / rsize)
        bad(what, base + 16,
            fmt::format("{} records of {} bytes do not fit in the trace's {} bytes", n, rsize,
                        b.size()));
    if (n > t.instructions)
        bad(what, base + 16,
            fmt::format("{} records but only {} instructions executed", n, t.instructions));
    t.records.reserve(n);
    for (uint64_t i = 0; i < n; i++) {
        auto r = b.subspan(hsize + i * rsize, rsize);
        uint64_t at = base + hsize + i * rsize;
        TraceRecord x;
        uint8_t engine = std::to_integer<uint8_t>(r[0]);
        if (engine < NEURON_ENGINE_TENSOR || engine > NEURON_ENGINE_SYNC)
            bad(what, at, fmt::format("record {}: engine {} is not 1..4", i, engine));
        x.engine = static_cast<Engine>(engine);
        x.opcode = std::to_integer<uint8_t>(r[1]);
        x.sem = std::to_integer<uint8_t>(r[2]);
        x.has_signal = (std::to_integer<uint8_t>(r[3]) & NEURON_TRACE_R_SIGNAL) != 0;
        x.index = get<uint32_t>(r, 4);
        x.start = get<uint64_t>(r, 8);
        x.end = get<uint64_t>(r, 16);
        x.wait = get<uint64_t>(r, 24);
        x.bytes = get<uint32_t>(r, 32);
        x.signal = get<uint32_t>(r, 36);
        x.sbuf_high = get<uint32_t>(r, 40);
        x.psum_high = get<uint32_t>(r, 44);
        if (x.end < x.start || x.wait > x.end - x.start)
            bad(what, at + 8,
                fmt::format("record {}: end {} before start {} or wait {} longer than both", i,
                            x.end, x.start, x.wait));
        if (x.has_signal && x.signal >= i)
            bad(what, at + 36,
                fmt::format("record {}: the signal it waited for, record {}, is not an earlier "
                            "record",
                            i, x.signal));
        t.records.push_back(x);
    }
    return t;
}

uint64_t env_records() {
    const char *v = std::getenv(ntrace::env_records);
    if (!v || !*v)
        return Profile::default_records;
    char *end = nullptr;
    unsigned long long n = std::strtoull(v, &end, 10);
    if (*end || n == 0)
        throw Error(errc::invalid_argument, fmt::format("${}={}: not a positive number of records",
                                                        ntrace::env_records, v));
    return n;
}

} // namespace

Trace parse_trace(std::span<const std::byte> bytes) {
    return parse_trace_at(bytes, "device trace", 0);
}

Profile::Profile(const Device &device, uint64_t max_records) : max_records_(max_records) {
    const DeviceInfo &i = device.info();
    if (!i.has(cap_profile))
        throw Error(errc::not_supported,
                    fmt::format("{}: the device or its driver cannot profile jobs (no "
                                "CAP_PROFILE; device interface {}.{}, driver interface {}.{})",
                                device.path(), i.hw_version >> 16, i.hw_version & 0xffff,
                                i.api_version >> 16, i.api_version & 0xffff));
    if (max_records == 0 || max_records > (DRM_NEURON_BO_MAX_SIZE - trace_format::header_size) /
                                              trace_format::record_size)
        throw Error(errc::invalid_argument,
                    fmt::format("{}: a profile of {} records: give 1 or more, and fewer than fit "
                                "in one buffer",
                                device.path(), max_records));
    Region region = i.device_memory_size ? Region::device : Region::host;
    buffer_ = std::make_shared<Buffer>(device.allocate(
        trace_format::header_size + max_records * trace_format::record_size, region));
}

std::vector<std::byte> Profile::bytes() const {
    std::vector<std::byte> out(trace_format::header_size);
    buffer_->read(0, out);
    uint64_t n = get<uint64_t>(out, 16);
    // A buffer that holds no trace yet (or a corrupt one) is returned as is:
    // parse_trace() says what is wrong with it.
    if (get<uint32_t>(out, 0) != trace_format::magic || n > max_records_)
        return out;
    out.resize(trace_format::header_size + n * trace_format::record_size);
    buffer_->read(trace_format::header_size,
                  std::span<std::byte>(out).subspan(trace_format::header_size));
    return out;
}

namespace ntrace {

uint64_t program_id(std::span<const std::byte> container) noexcept {
    // FNV-1a 64 of the header and the section table, which hold every
    // section's CRC-32: the same for the same program, read in O(1).
    size_t n = container.size();
    if (n >= format::header_size) {
        const uint64_t table = get<uint32_t>(container, 24), count = get<uint32_t>(container, 28);
        const uint64_t end = table + count * format::section_entry_size;
        if (table >= format::header_size && end <= n)
            n = static_cast<size_t>(end);
    }
    uint64_t h = 0xcbf29ce484222325ull;
    for (std::byte c : container.first(n))
        h = (h ^ std::to_integer<uint8_t>(c)) * 0x100000001b3ull;
    return h;
}

std::vector<std::byte> encode_header() {
    std::vector<std::byte> out;
    put<uint32_t>(out, file_magic);
    put<uint16_t>(out, version_major);
    put<uint16_t>(out, version_minor);
    put<uint32_t>(out, file_header_size);
    put<uint32_t>(out, 0);
    return out;
}

std::vector<std::byte> encode_program(std::span<const std::byte> container) {
    std::vector<std::byte> out;
    out.reserve(program_header_size + container.size());
    put<uint32_t>(out, program_magic);
    put<uint32_t>(out, program_header_size);
    put<uint64_t>(out, program_header_size + container.size());
    put<uint64_t>(out, program_id(container));
    put<uint32_t>(out, static_cast<uint32_t>(container.size()));
    put<uint32_t>(out, 0);
    out.insert(out.end(), container.begin(), container.end());
    return out;
}

namespace {
std::vector<std::byte> encode_job_of(const Job &j, uint64_t id);
} // namespace

std::vector<std::byte> encode_job(const Job &j) {
    return encode_job_of(j, program_id(j.program.bytes()));
}

namespace {
std::vector<std::byte> encode_job_of(const Job &j, uint64_t id) {
    std::vector<std::byte> out;
    out.reserve(job_header_size + j.trace.size());
    put<uint32_t>(out, job_magic);
    put<uint32_t>(out, job_header_size);
    put<uint64_t>(out, job_header_size + j.trace.size());
    put<uint32_t>(out, j.core);
    put<uint32_t>(out, j.pid);
    put<uint64_t>(out, j.seqno);
    put<uint32_t>(out, j.clock_mhz);
    put<uint32_t>(out, j.partitions);
    put<uint64_t>(out, j.sbuf_size);
    put<uint64_t>(out, j.psum_size);
    put<uint32_t>(out, 0); // program_size: by id
    put<uint32_t>(out, static_cast<uint32_t>(j.trace.size()));
    put<uint64_t>(out, id);
    out.insert(out.end(), j.trace.begin(), j.trace.end());
    return out;
}
} // namespace

namespace {

void write_all(int fd, std::span<const std::byte> b, const std::filesystem::path &path) {
    while (!b.empty()) {
        ssize_t n = ::write(fd, b.data(), b.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            throw Error(errc::io_error, fmt::format("{}: writing a job's trace: {}", path.string(),
                                                    std::strerror(n < 0 ? errno : EIO)));
        b = b.subspan(static_cast<size_t>(n));
    }
}

/// The programs this process wrote to each file (by device and inode), and
/// the file's size after its last append: a file found shorter was
/// rewritten, and holds none of them any more.
struct Written {
    uint64_t size = 0;
    std::set<uint64_t> programs;
};
std::mutex written_lock;
std::map<std::pair<dev_t, ino_t>, Written> written;

} // namespace

void append(const std::filesystem::path &path, const Job &job) {
    const std::span<const std::byte> container = job.program.bytes();
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        throw Error(errc::io_error, fmt::format("{}: opening it to append a job's trace: {}",
                                                path.string(), std::strerror(errno)));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    if (::flock(fd, LOCK_EX) != 0)
        throw Error(errc::io_error,
                    fmt::format("{}: locking it: {}", path.string(), std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0)
        throw Error(errc::io_error, fmt::format("{}: {}", path.string(), std::strerror(errno)));
    std::lock_guard lock(written_lock);
    Written &w = written[{st.st_dev, st.st_ino}];
    if (static_cast<uint64_t>(st.st_size) < w.size || st.st_size == 0)
        w = Written{};
    std::vector<std::byte> out;
    if (st.st_size == 0)
        out = encode_header();
    const uint64_t id = program_id(container);
    const bool fresh = !w.programs.count(id);
    if (fresh) {
        auto prog = encode_program(container);
        out.insert(out.end(), prog.begin(), prog.end());
    }
    auto chunk = encode_job_of(job, id);
    out.insert(out.end(), chunk.begin(), chunk.end());
    write_all(fd, out, path);
    if (fresh)
        w.programs.insert(id);
    w.size = static_cast<uint64_t>(st.st_size) + out.size();
}

namespace {

/// A .ntrace file's header: its major version and the header's size.
std::pair<uint16_t, uint32_t> parse_file_header(std::span<const std::byte> b,
                                                const std::string &name) {
    if (b.size() < file_header_size)
        bad(name, 0,
            fmt::format("too short for a .ntrace file ({} bytes, the header alone has {})",
                        b.size(), file_header_size));
    if (uint32_t m = get<uint32_t>(b, 0); m != file_magic)
        bad(name, 0,
            fmt::format("not a .ntrace file: magic {:#010x}, expected {:#010x} (\"NTRC\")", m,
                        file_magic));
    uint16_t major = get<uint16_t>(b, 4), minor = get<uint16_t>(b, 6);
    if (major != version_major && major != 1)
        bad(name, 4,
            fmt::format(".ntrace version {}.{}: this reader knows major versions 1 and {}", major,
                        minor, version_major));
    uint32_t hsize = get<uint32_t>(b, 8);
    if (hsize < file_header_size || hsize > b.size())
        bad(name, 8,
            fmt::format("header_size {} is below {} or beyond the file", hsize, file_header_size));
    return {major, hsize};
}

/// A version 2 program chunk @p h (@p size bytes at file offset @p off):
/// its program, validated, under its id in @p programs.
void parse_program_chunk(std::span<const std::byte> h, uint64_t size, uint64_t off,
                         const std::string &name, std::map<uint64_t, Program> &programs) {
    const std::string pw = fmt::format("{}: program chunk", name);
    uint32_t jh = get<uint32_t>(h, 4);
    if (jh < program_header_size || jh > size)
        bad(pw, off + 4,
            fmt::format("header_size {} is below {} or beyond its {} bytes", jh,
                        program_header_size, size));
    uint64_t id = get<uint64_t>(h, 16);
    uint32_t psize = get<uint32_t>(h, 24);
    if (uint64_t(jh) + psize != size)
        bad(pw, off + 8,
            fmt::format("its header ({}) and program ({}) bytes do not add up to its "
                        "size ({})",
                        jh, psize, size));
    auto prog = h.subspan(jh, psize);
    if (auto err = validate(prog))
        bad(pw, off + jh + err->offset, "its program: " + err->reason);
    if (program_id(prog) != id)
        bad(pw, off + 16,
            fmt::format("id {:#018x} is not its program's ({:#018x})", id, program_id(prog)));
    // A file with one program twice (two processes wrote it) keeps one copy.
    if (!programs.count(id))
        programs.emplace(id, Program::parse(prog));
}

/// A job chunk @p h (@p size bytes at file offset @p off) of a file of
/// version @p major; a version 2 job's program comes from @p programs, a
/// version 1 job's (its own copy in the file) goes there, so that the
/// jobs of one program share it in memory.
Job parse_job_chunk(std::span<const std::byte> h, uint64_t size, uint64_t off, uint16_t major,
                    const std::string &what, std::map<uint64_t, Program> &programs) {
    const uint32_t min_job = major == 1 ? 64 : job_header_size;
    uint32_t jh = get<uint32_t>(h, 4);
    if (size < min_job)
        bad(what, off,
            fmt::format("a job starts with a {}-byte header, the chunk has {} bytes", min_job,
                        size));
    uint32_t psize = get<uint32_t>(h, 56), tsize = get<uint32_t>(h, 60);
    if (jh < min_job)
        bad(what, off + 4, fmt::format("header_size {} is below {}", jh, min_job));
    if (uint64_t(jh) + psize + tsize != size)
        bad(what, off + 8,
            fmt::format("its header ({}), program ({}) and trace ({}) bytes do not add up to "
                        "its size ({})",
                        jh, psize, tsize, size));
    const Program *prog = nullptr;
    if (major == 1) {
        auto bytes = h.subspan(jh, psize);
        if (auto err = validate(bytes))
            bad(what, off + jh + err->offset, "its program: " + err->reason);
        // The copy of an earlier job's program, if it is the same one.
        auto it = programs.find(program_id(bytes));
        if (it == programs.end() || !std::ranges::equal(it->second.bytes(), bytes))
            it = programs.insert_or_assign(program_id(bytes), Program::parse(bytes)).first;
        prog = &it->second;
    } else {
        if (psize)
            bad(what, off + 56,
                fmt::format("program_size {}: a version 2 job names its program by id", psize));
        uint64_t id = get<uint64_t>(h, 64);
        auto it = programs.find(id);
        if (it == programs.end())
            bad(what, off + 64,
                fmt::format("program {:#018x}: no program chunk before it has this id", id));
        prog = &it->second; // validated with its chunk
    }
    Job j(*prog);
    j.core = get<uint32_t>(h, 16);
    j.pid = get<uint32_t>(h, 20);
    j.seqno = get<uint64_t>(h, 24);
    j.clock_mhz = get<uint32_t>(h, 32);
    j.partitions = get<uint32_t>(h, 36);
    j.sbuf_size = get<uint64_t>(h, 40);
    j.psum_size = get<uint64_t>(h, 48);
    auto tr = h.subspan(jh + psize, tsize);
    j.trace.assign(tr.begin(), tr.end());
    (void)parse_trace_at(j.trace, what + ": its trace", off + jh + psize);
    return j;
}

} // namespace

std::vector<Job> parse(std::span<const std::byte> b, const std::string &name) {
    const auto [major, hsize] = parse_file_header(b, name);
    std::map<uint64_t, Program> programs;
    std::vector<Job> jobs;
    for (uint64_t off = hsize; off < b.size();) {
        const std::string what = fmt::format("{}: job {}", name, jobs.size());
        if (b.size() - off < 16)
            bad(what, off,
                fmt::format("a chunk starts with a header of at least 16 bytes, the file ends {} "
                            "bytes later (cut short?)",
                            b.size() - off));
        auto h = b.subspan(off);
        uint32_t magic = get<uint32_t>(h, 0);
        uint64_t size = get<uint64_t>(h, 8);
        if (size > b.size() - off)
            bad(what, off + 8,
                fmt::format("{} bytes long, but the file ends {} bytes later (cut short?)", size,
                            b.size() - off));
        if (major >= 2 && magic == program_magic)
            parse_program_chunk(h, size, off, name, programs);
        else if (magic != job_magic)
            bad(what, off,
                fmt::format("magic {:#010x}, expected {:#010x} (\"NJOB\"){}", magic, job_magic,
                            major >= 2 ? " or a program chunk (\"NPRG\")" : ""));
        else
            jobs.push_back(parse_job_chunk(h, size, off, major, what, programs));
        off += size;
    }
    return jobs;
}

std::vector<Job> read(const std::filesystem::path &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error(errc::io_error,
                    fmt::format("{}: cannot open it: {}", path.string(), std::strerror(errno)));
    std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad())
        throw Error(errc::io_error, fmt::format("{}: reading it failed", path.string()));
    return parse(std::as_bytes(std::span<const char>(data)), path.string());
}

} // namespace ntrace

namespace detail {

void read_profile_env(DeviceState &s) {
    if (const char *f = std::getenv(ntrace::env_file); f && *f) {
        s.profile_file = f;
        s.profile_records = env_records();
    }
}

Fence submit_captured(const Queue &q, const LoadedProgram &lp, const Arguments &args,
                      const std::vector<Fence> &deps, const std::string &file) {
    const Device &dev = q.device();
    if (!dev.info().has(cap_profile)) {
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true))
            std::fprintf(stderr,
                         "libneuron: $%s is set, but %s cannot profile jobs (no CAP_PROFILE): "
                         "jobs run unprofiled\n",
                         ntrace::env_file, dev.path().c_str());
        return Fence();
    }
    // A job that binds every slot leaves none for its trace: it runs
    // unprofiled rather than failing the program being profiled.
    const Program &program = lp.program();
    if (std::max<uint32_t>(program.num_slots(), 1) + 1 > dev.info().max_bindings) {
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true))
            std::fprintf(stderr,
                         "libneuron: $%s is set, but program '%s' binds all %u binding slots "
                         "and leaves none for its trace: its jobs, and those of other such "
                         "programs, run unprofiled\n",
                         ntrace::env_file, program.name().c_str(), dev.info().max_bindings);
        return Fence();
    }
    const DeviceState &ds = *dev.state();
    // A trace buffer of an earlier job, else a new one.
    std::optional<Profile> taken;
    {
        std::lock_guard lock(ds.profile_lock);
        if (!ds.idle_profiles.empty()) {
            taken.emplace(std::move(ds.idle_profiles.back()));
            ds.idle_profiles.pop_back();
        }
    }
    if (taken) {
        detail::BufferAccess::attach(taken->buffer(), dev);
        // No stale header: a job that writes none leaves an empty trace.
        const std::array<std::byte, trace_format::header_size> zero{};
        taken->buffer().write(0, zero);
    } else {
        taken.emplace(dev, ds.profile_records);
    }
    Profile profile = std::move(*taken);
    Fence f = q.submit(lp, args, profile, deps);
    // The program by reference (its container is copied into the file once).
    ntrace::Job job(lp.program());
    job.core = q.core();
    job.pid = static_cast<uint32_t>(::getpid());
    job.seqno = f.seqno();
    job.clock_mhz = dev.info().core_clock_mhz;
    job.partitions = dev.info().partitions;
    job.sbuf_size = dev.info().sbuf_size;
    job.psum_size = dev.info().psum_size;
    // Once the last handle of the fence is gone: wait for the job, append its trace.
    f.state()->on_release = [profile, job = std::move(job), file](const FenceState &fs) mutable {
        uint32_t h = fs.syncobj;
        drm_syncobj_wait w{};
        w.handles = reinterpret_cast<uintptr_t>(&h);
        w.count_handles = 1;
        w.timeout_nsec = INT64_MAX;
        w.flags = DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL | DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT;
        if (int e = fs.device->ioctl(DRM_IOCTL_SYNCOBJ_WAIT, &w))
            throw Error(errc::io_error, fmt::format("${}: waiting for the job to write its "
                                                    "trace: {}",
                                                    ntrace::env_file, std::strerror(e)));
        job.trace = profile.bytes();
        // The buffer goes back to the device's idle ones, not holding the
        // device while there; then the trace goes to the file.
        {
            std::lock_guard lock(fs.device->profile_lock);
            if (fs.device->idle_profiles.size() < DeviceState::max_idle_profiles) {
                detail::BufferAccess::detach(profile.buffer());
                fs.device->idle_profiles.push_back(profile);
            }
        }
        ntrace::append(file, job);
    };
    return f;
}

} // namespace detail

} // namespace neuron
