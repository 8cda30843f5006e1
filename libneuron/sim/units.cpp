// SPDX-License-Identifier: MIT
// The simulator's fences, device memory and units (core queues, DMA
// engines), each with one worker thread.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>

#include <sys/mman.h>

#include "neuron_job_errno.h"
#include "sim.hpp"

namespace neuron::sim {

namespace {

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace

// --- fences -------------------------------------------------------------------------

void Fence::signal(int error) {
    signal_at(error, now_ns());
}

void Fence::signal_at(int error, int64_t at_ns) {
    {
        std::lock_guard<std::mutex> g(lock_);
        signaled_ = true;
        error_ = error;
        signaled_at_ns_ = at_ns;
    }
    cv_.notify_all();
}

bool Fence::signaled() const {
    std::lock_guard<std::mutex> g(lock_);
    return signaled_;
}

int Fence::error() const {
    std::lock_guard<std::mutex> g(lock_);
    return error_;
}

int64_t Fence::signaled_at_ns() const {
    std::lock_guard<std::mutex> g(lock_);
    return signaled_at_ns_;
}

bool Fence::wait_until(int64_t deadline_ns) const {
    std::unique_lock<std::mutex> g(lock_);
    auto deadline = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns));
    return cv_.wait_until(g, deadline, [&] { return signaled_; });
}

// --- device memory ------------------------------------------------------------------

Memory::Memory(uint64_t size) : size_(size) {
    if (!size)
        return;
    // Anonymous memory is zeroed and only backed where it is touched.
    void *m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        throw std::bad_alloc();
    base_ = static_cast<uint8_t *>(m);
    free_[0] = size;
}

Memory::~Memory() {
    if (base_)
        ::munmap(base_, size_);
}

std::optional<uint64_t> Memory::allocate(uint64_t size) {
    std::lock_guard<std::mutex> g(lock_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->second < size)
            continue;
        uint64_t off = it->first, left = it->second - size;
        free_.erase(it);
        if (left)
            free_[off + size] = left;
        used_ += size;
        std::memset(base_ + off, 0, size); // BO_CREATE hands out zeroed memory
        return off;
    }
    return std::nullopt;
}

void Memory::release(uint64_t offset, uint64_t size) {
    std::lock_guard<std::mutex> g(lock_);
    used_ -= size;
    auto [it, inserted] = free_.emplace(offset, size);
    if (auto next = std::next(it); next != free_.end() && offset + size == next->first) {
        it->second += next->second;
        free_.erase(next);
    }
    if (it != free_.begin()) {
        auto prev = std::prev(it);
        if (prev->first + prev->second == offset) {
            prev->second += it->second;
            free_.erase(it);
        }
    }
}

uint64_t Memory::used() const {
    std::lock_guard<std::mutex> g(lock_);
    return used_;
}

Bo::~Bo() {
    if (region == DRM_NEURON_BO_DEVICE)
        memory->release(dev_offset, size);
    else if (ptr)
        ::munmap(ptr, size);
}

// --- units --------------------------------------------------------------------------

void Unit::start() {
    thread_ = std::thread([this] { loop(); });
}

void Unit::stop() {
    {
        std::lock_guard<std::mutex> g(lock_);
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable())
        thread_.join();
    // What never ran is aborted, as a device reset does.
    for (auto &w : queue_)
        w.done->signal(ECANCELED);
    queue_.clear();
}

uint64_t Unit::push(Work w) {
    uint64_t seqno;
    {
        std::lock_guard<std::mutex> g(lock_);
        seqno = w.seqno = ++seqno_;
        queue_.push_back(std::move(w));
    }
    cv_.notify_one();
    return seqno;
}

size_t Unit::depth() const {
    std::lock_guard<std::mutex> g(lock_);
    return queue_.size();
}

// Dependencies are waited for in slices so that stop() is never held up.
bool Unit::wait_deps(const Work &w) {
    for (const auto &d : w.deps)
        while (!d->wait_until(now_ns() + 50'000'000))
            if (stopping_)
                return false;
    return true;
}

void Unit::loop() {
    for (;;) {
        Work w;
        {
            std::unique_lock<std::mutex> g(lock_);
            cv_.wait(g, [&] { return stopping_ || !queue_.empty(); });
            if (stopping_)
                return;
            w = std::move(queue_.front());
            queue_.pop_front();
        }
        if (!wait_deps(w)) {
            w.done->signal(ECANCELED);
            return;
        }
        w.done->signal(execute(w));
    }
}

Core::Core(Device &dev, uint32_t index) : dev_(dev), index_(index) {
    core_ = nsim_core_new(dev.options().sbuf, dev.options().psum);
    if (!core_)
        throw std::invalid_argument("the device model refuses these SBUF/PSUM sizes");
    uint32_t threads = dev.options().threads;
    if (!threads)
        threads = std::clamp(std::thread::hardware_concurrency(), 1u, 2u);
    if (threads > 1) {
        helpers_ = std::make_unique<Helpers>(threads - 1);
        if (nsim_core_set_parallel(core_, Helpers::run, helpers_.get(), threads)) {
            nsim_core_free(core_);
            throw std::bad_alloc();
        }
    }
}

Core::~Core() {
    stop();
    nsim_core_free(core_);
}

namespace {

// Bus addresses are host pointers; the core may only read what the job
// was given: its binding table, its SG lists and the host pages they name.
struct HostView {
    const Work *work;
    static bool allowed(const Work &w, uint64_t addr, size_t len) {
        auto inside = [&](const void *p, size_t n) {
            auto b = reinterpret_cast<uintptr_t>(p);
            return addr >= b && len <= n && addr - b <= n - len;
        };
        if (inside(w.table.data(), w.table.size() * sizeof(w.table[0])) ||
            inside(w.sg.data(), w.sg.size() * sizeof(w.sg[0])))
            return true;
        for (const auto &e : w.sg)
            if (inside(reinterpret_cast<const void *>(static_cast<uintptr_t>(e.addr)), e.len))
                return true;
        return false;
    }
    static int read(void *opaque, uint64_t addr, void *buf, size_t len) {
        if (!allowed(*static_cast<HostView *>(opaque)->work, addr, len))
            return -1;
        std::memcpy(buf, reinterpret_cast<const void *>(static_cast<uintptr_t>(addr)), len);
        return 0;
    }
    static int write(void *opaque, uint64_t addr, const void *buf, size_t len) {
        if (!allowed(*static_cast<HostView *>(opaque)->work, addr, len))
            return -1;
        std::memcpy(reinterpret_cast<void *>(static_cast<uintptr_t>(addr)), buf, len);
        return 0;
    }
};

} // namespace

int Core::execute(Work &w) {
    HostView view{&w};
    nsim_mem mem{HostView::read, HostView::write, &view, dev_.memory().base(),
                 dev_.memory().size()};
    nsim_job job{};
    job.job_id = w.seqno;
    job.table_addr = reinterpret_cast<uintptr_t>(w.table.data());
    job.num_bindings = static_cast<uint32_t>(w.table.size());
    job.program_binding = job.num_bindings - 1;
    job.program_size = w.program_size;
    job.profile = w.profile;
    job.trace_binding = w.trace_binding;
    nsim_result r{};
    int64_t t0 = now_ns();
    {
        std::lock_guard<std::mutex> g(run_lock_);
        timed_out_ = false;
        started_ns_ = t0;
    }
    nsim_core_run(core_, &mem, &job, &r);
    bool timed_out;
    {
        std::lock_guard<std::mutex> g(run_lock_);
        started_ns_ = 0;
        timed_out = timed_out_;
    }
    const auto busy = static_cast<uint64_t>(now_ns() - t0);
    counters.busy_ns += busy;
    if (w.stats && index_ < w.stats->engine_ns.size())
        w.stats->engine_ns[index_] += busy;
    counters.jobs++;
    counters.instructions += r.instructions;
    counters.flops += r.flops;
    counters.dma_bytes += r.dma_bytes;
    // neuron.ko's fence error for the status, positive like every errno here.
    int err = -neuron_job_status_errno(r.status);
    if (timed_out) {
        // The driver resets a core whose job exceeded the timeout.
        counters.timeouts++;
        counters.resets++;
        nsim_core_reset(core_);
        return ETIMEDOUT;
    }
    if (err)
        counters.faults++;
    return err;
}

void Core::check_timeout(int64_t now) {
    std::lock_guard<std::mutex> g(run_lock_);
    if (started_ns_ && !timed_out_ &&
        now - started_ns_ > int64_t(dev_.options().timeout_ms) * 1'000'000) {
        timed_out_ = true;
        nsim_core_abort(core_);
    }
}

int Dma::execute(Work &w) {
    std::memmove(w.dst, w.src, w.size);
    counters.jobs++;
    counters.dma_bytes += w.size;
    return 0;
}

} // namespace neuron::sim
