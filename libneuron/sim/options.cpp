// SPDX-License-Identifier: MIT
// The simulator's options: "cores=2,mem=256M,sbuf=24M".
#include <charconv>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "sim.hpp"

namespace neuron::sim {

namespace {

// PCI slots of bus 0 (DRM_NEURON_PCI_BUS_INFO's 5-bit device field) hold 32;
// 16 devices of 16 cores are more ranks than a test needs.
constexpr uint64_t max_devices = 16;

// "256M", "24m", "4096", "1G", "64K".
uint64_t parse_size(std::string_view key, std::string_view v) {
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    std::string_view suffix(end, static_cast<size_t>(v.data() + v.size() - end));
    unsigned shift = 0;
    if (suffix == "K" || suffix == "k")
        shift = 10;
    else if (suffix == "M" || suffix == "m")
        shift = 20;
    else if (suffix == "G" || suffix == "g")
        shift = 30;
    else if (!suffix.empty())
        ec = std::errc::invalid_argument;
    if (ec != std::errc() || end == v.data() || n > (UINT64_MAX >> shift))
        throw std::invalid_argument(fmt::format(
            "option {}={}: expected a number with an optional K, M or G suffix", key, v));
    return n << shift;
}

uint32_t parse_u32(std::string_view key, std::string_view v, uint64_t lo, uint64_t hi) {
    uint64_t n = parse_size(key, v);
    if (n < lo || n > hi)
        throw std::invalid_argument(fmt::format("option {}={}: must be {}..{}", key, v, lo, hi));
    return static_cast<uint32_t>(n);
}

void set(Options &o, std::string_view key, std::string_view v) {
    if (key == "cores")
        o.cores = parse_u32(key, v, 1, NEURON_MAX_CORES);
    else if (key == "dma")
        o.dma = parse_u32(key, v, 1, NEURON_MAX_DMA_ENGINES);
    else if (key == "mem")
        o.mem = parse_size(key, v);
    else if (key == "sbuf")
        o.sbuf = parse_u32(key, v, NEURON_PARTITIONS, UINT32_MAX);
    else if (key == "psum")
        o.psum = parse_u32(key, v, NEURON_PARTITIONS, UINT32_MAX);
    else if (key == "clock_mhz")
        o.clock_mhz = parse_u32(key, v, 1, 100000);
    else if (key == "timeout_ms")
        o.timeout_ms = parse_u32(key, v, 1, UINT32_MAX);
    else if (key == "host_bindings")
        o.host_bindings = parse_u32(key, v, 0, 1) != 0;
    else if (key == "devices")
        o.devices = parse_u32(key, v, 1, max_devices);
    else if (key == "device")
        o.device = parse_u32(key, v, 0, max_devices - 1);
    else if (key == "prime")
        o.prime = parse_u32(key, v, 0, 1) != 0;
    else if (key == "threads")
        o.threads = parse_u32(key, v, 1, 4);
    else
        throw std::invalid_argument(
            fmt::format("unknown option '{}' (known: cores, dma, mem, sbuf, psum, clock_mhz, "
                        "timeout_ms, host_bindings, devices, device, prime, threads)",
                        key));
}

} // namespace

Options parse_options(const std::string &text) {
    Options o;
    std::string_view rest = text;
    while (!rest.empty()) {
        auto comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        if (item.empty())
            continue;
        auto eq = item.find('=');
        if (eq == std::string_view::npos)
            throw std::invalid_argument(fmt::format("option '{}': expected key=value", item));
        set(o, item.substr(0, eq), item.substr(eq + 1));
    }
    if (o.device >= o.devices)
        throw std::invalid_argument(
            fmt::format("option device={}: there are devices={} simulated devices, numbered 0..{}",
                        o.device, o.devices, o.devices - 1));
    if (o.mem % 4096)
        throw std::invalid_argument(
            fmt::format("option mem={}: must be a multiple of 4 KiB", o.mem));
    if (o.sbuf % NEURON_PARTITIONS || o.psum % NEURON_PARTITIONS)
        throw std::invalid_argument(fmt::format(
            "options sbuf and psum must be multiples of {} (the partitions)", NEURON_PARTITIONS));
    return o;
}

std::string sim_bdf(uint32_t index) {
    return fmt::format("0000:00:{:02x}.0", index);
}

} // namespace neuron::sim
