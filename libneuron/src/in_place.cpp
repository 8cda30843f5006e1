// SPDX-License-Identifier: MIT
// Which outputs of a program may be bound to an input's memory. Only the
// Sync engine reaches bindings, and it runs its stream one whole
// instruction after the other (hw/isa.md, sections 1 and 5), so the order
// of the program's reads and writes of bindings is that stream's order.
#include <limits>
#include <map>

#include "format_internal.hpp"
#include "neuron_isa.h"

namespace neuron {

namespace {

constexpr uint64_t everything = std::numeric_limits<uint64_t>::max();

/// Bytes [lo, hi) of one binding, merged as they are added.
class Extents {
  public:
    void add(uint64_t lo, uint64_t hi) {
        auto it = by_lo_.upper_bound(lo);
        if (it != by_lo_.begin() && std::prev(it)->second >= lo)
            --it;
        while (it != by_lo_.end() && it->first <= hi) {
            lo = std::min(lo, it->first);
            hi = std::max(hi, it->second);
            it = by_lo_.erase(it);
        }
        by_lo_.emplace(lo, hi);
    }
    bool overlaps(uint64_t lo, uint64_t hi) const {
        auto it = by_lo_.lower_bound(hi);
        return it != by_lo_.begin() && std::prev(it)->second > lo;
    }

  private:
    std::map<uint64_t, uint64_t> by_lo_;
};

/// A DMA instruction's binding and the bytes of it that it may touch: the
/// pattern's bounding range, the whole binding for rows chosen by index.
struct Access {
    uint32_t slot;
    uint64_t lo, hi;
    bool reads, writes;
};

Access access_of(std::span<const std::byte> in) {
    using detail::rd16, detail::rd32, detail::rd64, detail::rd8;
    const uint8_t op = rd8(in, 0);
    constexpr size_t tap = offsetof(struct neuron_insn, dma.sbuf);
    constexpr size_t mem = offsetof(struct neuron_insn, dma.dram);
    const uint64_t offset = rd64(in, mem + offsetof(struct neuron_dram, offset));
    Access a{rd8(in, mem), offset, everything, op != NEURON_OP_DMA_STORE,
             op == NEURON_OP_DMA_STORE || op == NEURON_OP_DMA_SCATTER_ADD};
    if (op == NEURON_OP_DMA_LOAD || op == NEURON_OP_DMA_STORE) {
        const uint64_t parts = rd8(in, tap + offsetof(struct neuron_tap, part_count));
        const uint64_t c0 = rd16(in, tap + offsetof(struct neuron_tap, count));
        const uint64_t c1 = rd16(in, tap + offsetof(struct neuron_tap, count) + 2);
        const uint64_t part_stride = rd32(in, mem + offsetof(struct neuron_dram, part_stride));
        const uint64_t s0 = rd32(in, mem + offsetof(struct neuron_dram, stride));
        const uint64_t s1 = rd32(in, mem + offsetof(struct neuron_dram, stride) + 4);
        const auto dtype = static_cast<DType>(rd8(in, tap + offsetof(struct neuron_tap, dtype)));
        a.hi =
            offset + (parts - 1) * part_stride + (c1 - 1) * s1 + (c0 - 1) * s0 + dtype_size(dtype);
    }
    return a;
}

} // namespace

std::vector<std::pair<uint32_t, uint32_t>> in_place_slots(const Program &program) {
    std::span<const std::byte> sync = program.stream(Engine::sync);
    std::map<uint32_t, Extents> written; // by output slot
    std::map<std::pair<uint32_t, uint32_t>, bool> safe;
    for (const ArgumentInfo &out : program.arguments()) {
        if (out.direction != Direction::out)
            continue;
        written[out.slot];
        for (const ArgumentInfo &in : program.arguments())
            if (in.direction == Direction::in)
                safe[{out.slot, in.slot}] = true;
    }
    for (size_t i = 0; i + format::insn_size <= sync.size(); i += format::insn_size) {
        std::span<const std::byte> insn = sync.subspan(i, format::insn_size);
        const uint8_t op = detail::rd8(insn, 0);
        if (op == NEURON_OP_LOOP)
            return {}; // instructions run again: not an order of this walk
        if (op < NEURON_OP_DMA_LOAD || op > NEURON_OP_DMA_SCATTER_ADD)
            continue;
        const Access a = access_of(insn);
        if (a.reads)
            for (auto &[pair, ok] : safe)
                if (pair.second == a.slot && ok && written.at(pair.first).overlaps(a.lo, a.hi))
                    ok = false;
        if (a.writes) {
            auto it = written.find(a.slot);
            if (it != written.end())
                it->second.add(a.lo, a.hi);
        }
    }
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    for (const auto &[pair, ok] : safe)
        if (ok)
            pairs.push_back(pair);
    return pairs;
}

} // namespace neuron
