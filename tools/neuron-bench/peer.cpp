// SPDX-License-Identifier: MIT
// neuron-bench: the block device peer (peer.hpp).
#include "peer.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <liburing.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace nbench {

namespace {

using Clock = std::chrono::steady_clock;

std::system_error os_error(int error, const std::string &what) {
    return std::system_error(error, std::generic_category(), what);
}

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

/// An io_uring instance, torn down when its owner goes. Declared after the
/// buffers its reads fill, so that it goes first; the kernel keeps the pages
/// of reads still in flight pinned either way.
class Ring {
  public:
    Ring(unsigned entries, const std::string &path) {
        const int error = io_uring_queue_init(entries, &ring_, 0);
        if (error < 0)
            throw os_error(-error, path + ": io_uring_queue_init(" + std::to_string(entries) + ")");
    }
    Ring(const Ring &) = delete;
    Ring &operator=(const Ring &) = delete;
    ~Ring() { io_uring_queue_exit(&ring_); }

    io_uring *get() { return &ring_; }

  private:
    io_uring ring_{};
};

} // namespace

UniqueFd &UniqueFd::operator=(UniqueFd &&other) noexcept {
    if (this != &other) {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = other.release();
    }
    return *this;
}

UniqueFd::~UniqueFd() {
    if (fd_ >= 0)
        ::close(fd_);
}

int UniqueFd::release() {
    return std::exchange(fd_, -1);
}

PageBuffer::PageBuffer(std::size_t bytes) : size_(bytes) {
    if (bytes == 0)
        return;
    void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED)
        throw os_error(errno, "mmap of a " + std::to_string(bytes) + "-byte read buffer");
    data_ = static_cast<std::byte *>(p);
}

PageBuffer::PageBuffer(PageBuffer &&other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PageBuffer &PageBuffer::operator=(PageBuffer &&other) noexcept {
    if (this != &other) {
        if (data_)
            ::munmap(data_, size_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

PageBuffer::~PageBuffer() {
    if (data_)
        ::munmap(data_, size_);
}

BlockPeer::BlockPeer(const std::string &path) : path_(path) {
    // O_DIRECT: the device moves every byte into our buffer; a page cache
    // hit would measure memcpy, not the device.
    fd_ = UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
    if (fd_.get() < 0)
        throw os_error(errno, path + ": cannot open read-only with O_DIRECT");
    struct stat st {};
    if (::fstat(fd_.get(), &st) < 0)
        throw os_error(errno, path + ": fstat");
    if (S_ISBLK(st.st_mode)) {
        if (::ioctl(fd_.get(), BLKGETSIZE64, &size_) < 0)
            throw os_error(errno, path + ": BLKGETSIZE64");
        // O_DIRECT transfers must be multiples of this and aligned to it.
        int logical_block = 0;
        if (::ioctl(fd_.get(), BLKSSZGET, &logical_block) < 0)
            throw os_error(errno, path + ": BLKSSZGET");
        logical_block_ = static_cast<unsigned>(logical_block);
    } else if (S_ISREG(st.st_mode)) {
        // A file on a filesystem that supports O_DIRECT (handy off the VM).
        size_ = static_cast<uint64_t>(st.st_size);
        logical_block_ = 4096;
    } else {
        throw std::runtime_error(path + ": neither a block device nor a regular file");
    }
}

void BlockPeer::check_read_size(uint64_t bytes, const char *what) const {
    if (bytes == 0 || bytes % logical_block_ != 0 || bytes > size_)
        throw std::invalid_argument(path_ + ": " + what + " of " + std::to_string(bytes) +
                                    " bytes: must be a multiple of " +
                                    std::to_string(logical_block_) + " bytes, at most the " +
                                    std::to_string(size_) + " the device holds");
}

uint64_t BlockPeer::random_offset(unsigned block) {
    std::uniform_int_distribution<uint64_t> index(0, size_ / block - 1);
    return index(random_) * block;
}

std::byte *BlockPeer::buffer(std::size_t bytes) {
    // Kept between calls: mapping and faulting in 256 MiB per read would
    // cost more than the read.
    if (buffer_.size() < bytes)
        buffer_ = PageBuffer(bytes);
    return buffer_.data();
}

double BlockPeer::read_seconds(uint64_t bytes) {
    check_read_size(bytes, "read");
    std::byte *data = buffer(static_cast<std::size_t>(bytes));
    const auto start = Clock::now();
    uint64_t done = 0;
    while (done < bytes) {
        const ssize_t n = ::pread(fd_.get(), data + done, static_cast<std::size_t>(bytes - done),
                                  static_cast<off_t>(done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            throw os_error(errno, path_ + ": read of " + std::to_string(bytes - done) +
                                      " bytes at " + std::to_string(done));
        if (n == 0)
            throw std::runtime_error(path_ + ": end of device at " + std::to_string(done) +
                                     " bytes, reading " + std::to_string(bytes));
        done += static_cast<uint64_t>(n);
    }
    return seconds_since(start);
}

double BlockPeer::read_latency_us(unsigned block) {
    check_read_size(block, "read");
    std::byte *data = buffer(block);
    const uint64_t offset = random_offset(block);
    ssize_t n;
    const auto start = Clock::now();
    do {
        n = ::pread(fd_.get(), data, block, static_cast<off_t>(offset));
    } while (n < 0 && errno == EINTR);
    const double elapsed = seconds_since(start);
    if (n < 0)
        throw os_error(errno, path_ + ": read of " + std::to_string(block) + " bytes at " +
                                  std::to_string(offset));
    if (static_cast<uint64_t>(n) != block)
        throw std::runtime_error(path_ + ": read of " + std::to_string(block) + " bytes at " +
                                 std::to_string(offset) + " returned " + std::to_string(n));
    return elapsed * 1e6;
}

double BlockPeer::iops(unsigned depth, double seconds, unsigned block) {
    if (depth == 0)
        throw std::invalid_argument(path_ + ": iops at queue depth 0");
    check_read_size(block, "read");
    // One buffer slot per read in flight; the slot index is the user data.
    PageBuffer slots(std::size_t{depth} * block);
    std::vector<uint64_t> offsets(depth);
    Ring ring(depth, path_);

    auto queue_read = [&](unsigned slot) {
        io_uring_sqe *sqe = io_uring_get_sqe(ring.get());
        if (!sqe) // cannot happen: never more reads queued than entries
            throw std::logic_error(path_ + ": io_uring submission queue full");
        offsets[slot] = random_offset(block);
        io_uring_prep_read(sqe, fd_.get(), slots.data() + std::size_t{slot} * block, block,
                           offsets[slot]);
        io_uring_sqe_set_data64(sqe, slot);
    };
    auto submit = [&] {
        const int submitted = io_uring_submit(ring.get());
        if (submitted < 0)
            throw os_error(-submitted, path_ + ": io_uring_submit");
    };

    const auto start = Clock::now();
    const auto deadline =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    for (unsigned slot = 0; slot < depth; slot++)
        queue_read(slot);
    submit();

    uint64_t completed = 0;
    unsigned in_flight = depth;
    auto end = start;
    while (in_flight > 0) {
        io_uring_cqe *cqe = nullptr;
        const int error = io_uring_wait_cqe(ring.get(), &cqe);
        if (error == -EINTR)
            continue;
        if (error < 0)
            throw os_error(-error, path_ + ": io_uring_wait_cqe");
        // Reap everything that completed, then refill with one submit.
        bool queued = false;
        const bool refill = Clock::now() < deadline;
        do {
            const auto slot = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
            const int res = cqe->res;
            io_uring_cqe_seen(ring.get(), cqe);
            if (res != static_cast<int>(block))
                throw std::runtime_error(
                    path_ + ": read of " + std::to_string(block) + " bytes at " +
                    std::to_string(offsets[slot]) + " returned " + std::to_string(res) +
                    (res < 0 ? " (" + std::string(std::strerror(-res)) + ")" : std::string()));
            completed++;
            in_flight--;
            if (refill) {
                queue_read(slot);
                in_flight++;
                queued = true;
            }
        } while (io_uring_peek_cqe(ring.get(), &cqe) == 0);
        if (queued)
            submit();
        end = Clock::now();
    }
    return static_cast<double>(completed) / std::chrono::duration<double>(end - start).count();
}

} // namespace nbench
