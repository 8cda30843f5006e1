// SPDX-License-Identifier: MIT
// DMA bandwidth: copies through the driver in each direction, next to
// memcpy in this (guest) CPU and to the NVMe peer read with O_DIRECT.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include <neuron/neuron.hpp>

#include "bench.hpp"
#include "peer.hpp"

namespace nbench {

namespace {

constexpr double mib = 1024.0 * 1024.0;

/// Copies of one size are repeated until about this many bytes moved, so
/// small sizes are not timed by a single clock read.
uint64_t bytes_per_run(const Options &o) {
    return o.quick ? (4u << 20) : (64u << 20);
}

unsigned copies_per_run(const Options &o, uint64_t size) {
    return static_cast<unsigned>(std::clamp<uint64_t>(bytes_per_run(o) / size, 1, 1024));
}

/// MiB/s of @p count sequential operations of @p size bytes, each done by @p op.
Stats bandwidth(const Options &o, uint64_t size, const std::function<void()> &op) {
    const unsigned count = copies_per_run(o, size);
    return repeat_runs(o.repeat, [&] {
        const double t0 = now_s();
        for (unsigned i = 0; i < count; i++)
            op();
        return static_cast<double>(size) * count / mib / (now_s() - t0);
    });
}

void fill_pattern(std::span<std::byte> bytes) {
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i + 8 <= bytes.size(); i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        std::memcpy(bytes.data() + i, &x, 8);
    }
}

/// The device copies of every size, then a check that host -> device ->
/// device -> host returned the bytes: a copy that moved nothing is no figure.
void device_copies(const Options &o, const std::vector<uint64_t> &sizes, Table &t) {
    const char *const directions[] = {"host->device", "device->host", "device->device"};
    auto opened = open_device(o);
    if (!opened) {
        for (uint64_t s : sizes)
            for (const char *d : directions)
                t.skip(size_label(s), d, "no neuron device");
        return;
    }
    const auto &dev = *opened;
    const uint64_t largest = sizes.back();
    // Two device buffers of the largest size must fit; smaller runs still go.
    const uint64_t dev_mem = dev.info().device_memory_size;
    uint64_t dev_size = largest;
    while (dev_size > 4096 && 2 * dev_size > dev_mem * 7 / 8)
        dev_size /= 2;
    auto host_src = dev.allocate(largest, neuron::Region::host);
    auto host_dst = dev.allocate(largest, neuron::Region::host);
    auto dev_a = dev.allocate(dev_size, neuron::Region::device);
    auto dev_b = dev.allocate(dev_size, neuron::Region::device);
    fill_pattern(host_src.map());

    for (uint64_t s : sizes) {
        const std::string row = size_label(s);
        if (s > dev_size) {
            for (const char *d : directions)
                t.skip(row, d,
                       fmt::format("two {} buffers do not fit in {} of device memory", row,
                                   size_label(dev_mem)));
            continue;
        }
        t.set(row, "host->device",
              bandwidth(o, s, [&] { dev.copy(dev_a.range(0, s), host_src.range(0, s)).wait(); }));
        t.set(row, "device->device",
              bandwidth(o, s, [&] { dev.copy(dev_b.range(0, s), dev_a.range(0, s)).wait(); }));
        t.set(row, "device->host",
              bandwidth(o, s, [&] { dev.copy(host_dst.range(0, s), dev_b.range(0, s)).wait(); }));
        if (std::memcmp(host_src.map().data(), host_dst.map().data(), s) != 0)
            throw std::runtime_error(
                fmt::format("a {} copy host->device->device->host changed the bytes", row));
    }
}

void guest_memcpy(const Options &o, const std::vector<uint64_t> &sizes, Table &t) {
    const uint64_t largest = sizes.back();
    std::unique_ptr<std::byte[]> src(new std::byte[largest]), dst(new std::byte[largest]);
    fill_pattern({src.get(), largest});
    std::memset(dst.get(), 0, largest);
    for (uint64_t s : sizes)
        t.set(size_label(s), "memcpy",
              bandwidth(o, s, [&] { std::memcpy(dst.get(), src.get(), s); }));
}

void peer_reads(const Options &o, const std::vector<uint64_t> &sizes, Table &t) {
    std::string why;
    auto peer = open_peer(o, why);
    for (uint64_t s : sizes) {
        const std::string row = size_label(s);
        if (!peer) {
            t.skip(row, "nvme read", why);
        } else if (s > peer->size()) {
            t.skip(row, "nvme read",
                   fmt::format("{} holds only {}", o.nvme, size_label(peer->size())));
        } else {
            const unsigned count = copies_per_run(o, s);
            t.set(row, "nvme read", repeat_runs(o.repeat, [&] {
                      double seconds = 0;
                      for (unsigned i = 0; i < count; i++)
                          seconds += peer->read_seconds(s);
                      return static_cast<double>(s) * count / mib / seconds;
                  }));
        }
    }
}

} // namespace

void run_dma(const Options &o, Report &r) {
    const auto sizes = copy_sizes(o);
    Table &t = r.table("dma", "DMA bandwidth: one copy at a time, submit to completion", "size");
    for (const char *c : {"host->device", "device->host", "device->device", "memcpy", "nvme read"})
        t.column(c, "MiB/s");
    t.ratio("h2d/memcpy", "host->device", "memcpy")
        .ratio("d2h/memcpy", "device->host", "memcpy")
        .ratio("d2d/memcpy", "device->device", "memcpy")
        .ratio("h2d/nvme", "host->device", "nvme read")
        .ratio("d2h/nvme", "device->host", "nvme read");
    t.note("Copies go through DRM_IOCTL_NEURON_COPY and a syncobj wait; memcpy runs on the "
           "guest CPU; the peer is an NVMe namespace read with O_DIRECT at queue depth 1.");
    device_copies(o, sizes, t);
    guest_memcpy(o, sizes, t);
    peer_reads(o, sizes, t);
}

} // namespace nbench
