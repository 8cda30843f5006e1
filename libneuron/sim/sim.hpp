// SPDX-License-Identifier: MIT
// The simulator: neuron.ko's UAPI emulated in-process over the device
// model's NeuronCores (emu/model), as an Os (libneuron/src/os.hpp).
#pragma once

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core_run.h"
#include "drm/neuron_accel.h"
#include "neuron_accel_check.h"
#include "neuron_regs.h"
#include "os.hpp"

namespace neuron::sim {

/// The user array of a count and pointer, as vmemdup_array_user() sees it:
/// EFAULT for one below 64 KiB (the kernel's mmap_min_addr), where no
/// process maps memory.
template <typename T> int user_array(uint64_t ptr, uint32_t count, const T *&out) {
    out = reinterpret_cast<const T *>(static_cast<uintptr_t>(ptr));
    return count && ptr < (64u << 10) ? EFAULT : 0;
}

/// The device's shape: "cores=2,dma=2,mem=256M,sbuf=24M,psum=2M,timeout_ms=5000".
struct Options {
    uint32_t cores = 2;
    uint32_t dma = 2;
    uint64_t mem = 256ull << 20;
    uint32_t sbuf = 24u << 20;
    uint32_t psum = 2u << 20;
    uint32_t clock_mhz = 1400;
    uint32_t timeout_ms = 5000; ///< job timeout, as neuron.ko's job_timeout_ms
    bool host_bindings = true;  ///< DRM_NEURON_CAP_HOST_BINDINGS
    uint32_t devices = 1;       ///< simulated devices in the process (read_line("sim_devices"))
    uint32_t device = 0;        ///< which of them this is: its PCI slot
    bool prime = true;          ///< PRIME export/import of buffers between simulated devices
    uint32_t threads = 0;       ///< host threads per core for large instructions; 0: min(2, CPUs)
};

/// The PCI address GET_PARAM and the published tree give device @p index:
/// 0000:00:<index>.0 (the simulator is on no bus).
std::string sim_bdf(uint32_t index);

/// Parses @p text over the defaults; throws std::invalid_argument saying what is wrong.
Options parse_options(const std::string &text);

/// A fence: signalled once, with 0 or a positive errno, at a time it keeps
/// (as dma_fence_signal() keeps ktime_get()'s).
class Fence {
  public:
    void signal(int error);
    /// Signalled as of @p at_ns (a fence that stands for one signalled before).
    void signal_at(int error, int64_t at_ns);
    bool signaled() const;
    int error() const; ///< 0 until signalled
    /// When it was signalled, in nanoseconds of the steady clock
    /// (CLOCK_MONOTONIC); 0 until signalled.
    int64_t signaled_at_ns() const;
    /// Waits until signalled or @p deadline_ns (steady clock); true if signalled.
    bool wait_until(int64_t deadline_ns) const;

  private:
    mutable std::mutex lock_;
    mutable std::condition_variable cv_;
    bool signaled_ = false;
    int error_ = 0;
    int64_t signaled_at_ns_ = 0;
};

/// What waiting for a syncobj (or one of its timeline points) takes.
struct SyncWait {
    std::vector<std::shared_ptr<Fence>> fences; ///< all must signal
    std::shared_ptr<Fence> point;               ///< the point's own fence: its status
    bool chain = false;                         ///< a timeline link (dma_fence_chain)
    bool wait_until(int64_t deadline_ns) const;
    bool signaled() const;
    /// When the last of the fences signalled (0 while one is pending).
    int64_t signaled_at_ns() const;
    /// The error of the fence itself, as a sync file reports it.
    int fence_error() const;
};

/// A syncobj, as drm_syncobj holds it: no fence, a binary fence, or a
/// timeline of points (dma_fence_chain links, maybe on a binary fence).
/// Signalled links other than the newest are collected as the kernel's
/// chain walks collect them, so a passed point waits for nothing.
class Syncobj {
  public:
    /// A binary signal (point 0): @p fence replaces everything.
    void replace(std::shared_ptr<Fence> fence);
    /// drm_syncobj_add_point(): timeline point @p point is @p fence.
    void add_point(uint64_t point, std::shared_ptr<Fence> fence);
    /// drm_syncobj_find_fence() without WAIT_FOR_SUBMIT: what @p point
    /// (0: the newest fence) waits for; EINVAL if it has no fence yet.
    int find(uint64_t point, SyncWait &out);

  private:
    struct Link {
        uint64_t seqno;      ///< the last point it covers
        uint64_t prev_seqno; ///< the points it covers start after this one
        uint32_t context;    ///< one per ordered chain
        std::shared_ptr<Fence> fence;
    };
    void collect();
    std::shared_ptr<Fence> base_; ///< a binary fence (under the links, if any)
    std::vector<Link> links_;     ///< oldest first
    uint32_t next_context_ = 0;
};

/// Device memory: one zeroed mapping with a first-fit range allocator.
class Memory {
  public:
    explicit Memory(uint64_t size);
    ~Memory();
    Memory(const Memory &) = delete;
    Memory &operator=(const Memory &) = delete;
    /// The offset of @p size free bytes (page aligned, zeroed), or nullopt.
    std::optional<uint64_t> allocate(uint64_t size);
    void release(uint64_t offset, uint64_t size);
    uint8_t *base() const { return base_; }
    uint64_t size() const { return size_; }
    uint64_t used() const;

  private:
    uint8_t *base_ = nullptr;
    uint64_t size_;
    mutable std::mutex lock_;
    std::map<uint64_t, uint64_t> free_; ///< offset -> size
    uint64_t used_ = 0;
};

/// A buffer object: device memory or its own host mapping.
struct Bo {
    std::shared_ptr<Memory> memory; ///< device buffers only
    uint32_t region = DRM_NEURON_BO_DEVICE;
    uint32_t flags = 0;
    uint64_t size = 0;
    uint64_t dev_offset = 0; ///< device buffers
    uint64_t mmap_offset = 0;
    uint8_t *ptr = nullptr;
    ~Bo();
};

/// Busy time of one open file's jobs per core (its fdinfo drm-engine-core<N>).
struct FileStats {
    explicit FileStats(uint32_t cores) : engine_ns(cores) {}
    std::vector<std::atomic<uint64_t>> engine_ns;
};

/// One open device file: its own GEM handle and syncobj namespaces.
struct File {
    File(uint64_t id, uint32_t cores) : client_id(id), stats(std::make_shared<FileStats>(cores)) {}
    const uint64_t client_id;               ///< fdinfo drm-client-id
    const std::shared_ptr<FileStats> stats; ///< kept by its jobs too
    std::mutex lock;
    uint32_t next_handle = 1;
    std::map<uint32_t, std::shared_ptr<Bo>> bos;
    std::map<uint32_t, Syncobj> syncobjs;
    std::map<uintptr_t, std::shared_ptr<Bo>> mappings; ///< keep mapped buffers alive
};

/// What a core or DMA worker runs once every dependency has signalled.
struct Work {
    std::vector<std::shared_ptr<Fence>> deps;
    std::shared_ptr<Fence> done;
    std::vector<std::shared_ptr<Bo>> bos; ///< kept alive until the work ends
    std::shared_ptr<FileStats> stats;     ///< a job: its file's busy time
    uint64_t seqno = 0;
    // A job: the binding table (program slot last) and its host SG entries.
    std::vector<neuron_binding> table;
    std::vector<neuron_sg_entry> sg;
    uint32_t program_size = 0;
    bool profile = false; ///< DRM_NEURON_SUBMIT_F_PROFILE: the trace is slot trace_binding
    uint32_t trace_binding = 0;
    // A copy.
    uint8_t *src = nullptr;
    uint8_t *dst = nullptr;
    uint64_t size = 0;
};

/// Counters of one core or DMA engine, as neuron.ko keeps in sysfs.
struct Counters {
    std::atomic<uint64_t> jobs{0}, faults{0}, timeouts{0}, resets{0}, busy_ns{0}, instructions{0},
        flops{0}, dma_bytes{0};
};

/// A queue with one worker thread: a core queue or a DMA engine.
class Unit {
  public:
    virtual ~Unit() = default;
    void start();
    void stop();
    /// Queues @p w; returns its sequence number on this unit.
    uint64_t push(Work w);
    size_t depth() const;
    Counters counters;

  protected:
    virtual int execute(Work &w) = 0; ///< 0 or the fence's errno
    std::atomic<bool> stopping_{false};

  private:
    void loop();
    bool wait_deps(const Work &w);
    mutable std::mutex lock_;
    std::condition_variable cv_;
    std::deque<Work> queue_;
    uint64_t seqno_ = 0;
    std::thread thread_;
};

class Device;

/// Writes a device's counters as files shaped like the driver's sysfs and
/// fdinfo under detail::sim_publish_dir() (libneuron/src/sim_publish.hpp),
/// every 100 ms while they change, and removes them with the device.
class Publisher {
  public:
    explicit Publisher(const Device &dev);
    ~Publisher();
    Publisher(const Publisher &) = delete;
    Publisher &operator=(const Publisher &) = delete;

  private:
    void write_changed();
    const Device &dev_;
    std::string root_; ///< empty when the directory cannot be used
    std::map<std::string, std::string> written_;
    std::thread thread_;
    std::mutex lock_;
    std::condition_variable cv_;
    bool stopping_ = false;
};

/// Threads that run the parts of a split instruction beside the core's
/// own (the model's nm_parallel). Each part is claimed by whichever thread
/// comes first, the caller included: it claims parts until none is left,
/// then waits only for parts under way, so a helper the host has not
/// scheduled delays nothing. Between instructions a helper spins briefly,
/// then sleeps.
class Helpers {
  public:
    explicit Helpers(uint32_t helpers);
    ~Helpers();
    Helpers(const Helpers &) = delete;
    Helpers &operator=(const Helpers &) = delete;
    /// nsim_run_fn: @p opaque is the Helpers.
    static void run(void *opaque, nsim_task_fn *task, void *ctx, uint32_t count);

  private:
    void loop();
    /// Claims and runs a part of @p round; false if none is left.
    bool run_one(uint32_t round);
    // The round's work, written before claim_ is, read by a thread that
    // claimed one of its parts.
    nsim_task_fn *task_ = nullptr;
    void *ctx_ = nullptr;
    /// The round (bits 32..63), its count of parts (8..15) and the next
    /// part to claim (0..7): a claim of a round that ended fails.
    std::atomic<uint64_t> claim_{0};
    std::atomic<uint32_t> round_{0}; ///< moves on once per split instruction
    std::atomic<uint32_t> done_{0};  ///< parts of the round completed
    std::atomic<bool> stopping_{false};
    std::vector<std::thread> threads_;
};

class Core final : public Unit {
  public:
    Core(Device &dev, uint32_t index);
    ~Core() override;
    /// The watchdog's check: aborts a job running for longer than the timeout.
    void check_timeout(int64_t now_ns);

  private:
    int execute(Work &w) override;
    Device &dev_;
    uint32_t index_;
    nsim_core *core_ = nullptr;
    std::unique_ptr<Helpers> helpers_; ///< none for one thread per core
    std::mutex run_lock_;              ///< started_ns_, timed_out_
    int64_t started_ns_ = 0;           ///< 0 when idle
    bool timed_out_ = false;
};

class Dma final : public Unit {
  private:
    int execute(Work &w) override;
};

/// The files every simulated device of the process shares, as the kernel's
/// file table is one for all devices: fds (one numbering for device files,
/// sync files and dma-bufs, so that one device's close never hits
/// another's file), sync files and dma-bufs, which any device may import.
class Shared {
  public:
    static Shared &get();
    int next_fd() { return next_fd_++; }
    /// mmap offsets: one range for all devices, so that an imported buffer
    /// keeps an offset no buffer of the importing device has.
    uint64_t next_mmap_offset(uint64_t size) { return next_mmap_offset_.fetch_add(size); }
    int add_sync_file(SyncWait w);
    int add_dma_buf(std::shared_ptr<Bo> bo);
    std::optional<SyncWait> sync_file(int fd) const;
    std::shared_ptr<Bo> dma_buf(int fd) const;
    void close(int fd);

  private:
    std::atomic<int> next_fd_{1000};
    std::atomic<uint64_t> next_mmap_offset_{1ull << 32};
    mutable std::mutex lock_;
    std::map<int, SyncWait> sync_files_;
    std::map<int, std::shared_ptr<Bo>> dma_bufs_;
};

/// The simulated device and its driver: the Os libneuron talks to.
class Device final : public detail::Os {
  public:
    explicit Device(const Options &o);
    ~Device() override;

    int open(const std::string &path) override;
    void close(int fd) override;
    int ioctl(int fd, unsigned long request, void *arg) override;
    void *mmap(int fd, size_t len, uint64_t offset, int &err) override;
    void munmap(void *addr, size_t len) override;
    std::vector<std::string> list_dir(const std::string &) override { return {}; }
    std::optional<std::string> read_link(const std::string &) override { return std::nullopt; }
    std::optional<std::string> real_path(const std::string &) override { return std::nullopt; }
    std::string read_line(const std::string &path) override;
    bool exists(const std::string &) override { return false; }
    std::optional<detail::NodeMode> node_mode(const std::string &) override { return std::nullopt; }

    const Options &options() const { return opts_; }
    Memory &memory() { return *memory_; }

    /// What neuron.ko shows of this device, as files relative to a root
    /// holding sys/ and fdinfo/: the attributes and counters of
    /// docs/telemetry.md and one fdinfo per open file.
    std::map<std::string, std::string> telemetry_files() const;

  private:
    std::shared_ptr<File> file(int fd);
    int sync_file_info(int fd, void *arg);
    int get_param(drm_neuron_get_param &p) const;
    uint64_t caps() const; ///< DRM_NEURON_PARAM_CAPABILITIES
    /// What the argument checks of neuron_accel_check.h know of the device.
    neuron_check_limits check_limits() const;
    int bo_create(File &f, drm_neuron_bo_create &c);
    int bo_info(File &f, drm_neuron_bo_info &i);
    int gem_close(File &f, drm_gem_close &c);
    int syncobj_create(File &f, drm_syncobj_create &c);
    int syncobj_destroy(File &f, drm_syncobj_destroy &d);
    /// What syncobj @p handle's @p point waits for: ENOENT for no such
    /// syncobj, EINVAL for no fence (or point) yet.
    int syncobj_find(File &f, uint32_t handle, uint64_t point, SyncWait &out);
    int syncobj_wait(File &f, drm_syncobj_wait &w);
    int syncobj_export(File &f, drm_syncobj_handle &h);
    int neuron_wait(File &f, drm_neuron_wait &w);
    int copy(File &f, drm_neuron_copy &c);
    int submit(File &f, drm_neuron_submit &s);
    int submit_batch(File &f, drm_neuron_submit_batch &b);
    /// SUBMIT's checks and its job, up to the out-sync: 0 or the errno.
    int submit_prepare(File &f, const drm_neuron_submit &s, Work &w);
    /// A buffer range of a job: ENOENT for no such buffer, EINVAL for a
    /// range outside it.
    int job_bo(File &f, uint32_t handle, uint64_t offset, uint64_t size, std::shared_ptr<Bo> &bo);
    int submit_slot(File &f, const neuron_check_limits &limits, Work &w, uint32_t handle,
                    uint64_t offset, uint64_t size, uint32_t flags);
    int in_syncs(File &f, uint64_t ptr, uint32_t count, Work &w);
    int out_sync(File &f, const drm_neuron_sync &s, std::shared_ptr<Fence> &fence);
    bool has_syncobj(File &f, uint32_t handle);
    int syncobj_import(File &f, drm_syncobj_handle &h);
    int prime_export(File &f, drm_prime_handle &p);
    int prime_import(File &f, drm_prime_handle &p);

    Options opts_;
    std::shared_ptr<Memory> memory_;
    std::vector<std::unique_ptr<Core>> cores_;
    std::vector<std::unique_ptr<Dma>> dma_;
    mutable std::mutex lock_; ///< the fd tables and mmap offsets
    uint64_t next_client_id_ = 1;
    std::map<int, std::shared_ptr<File>> files_;
    std::atomic<uint32_t> next_engine_{0};
    std::thread watchdog_;
    std::mutex watchdog_lock_;
    std::condition_variable watchdog_cv_;
    bool stopping_ = false;
    std::unique_ptr<Publisher> publisher_; ///< last: stops before the rest goes
};

} // namespace neuron::sim
