// SPDX-License-Identifier: MIT
#include "sync_check.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace model {

using namespace neuron;

namespace {
constexpr uint8_t op_signal = 0x04, op_wait = 0x05, op_load = 0x10, op_store = 0x11;
}

// An independent check of the streams' synchronisation, from the program
// alone: every pair of instructions on different engines that touch the
// same SBUF/PSUM bytes (at least one writing) must be ordered by semaphore
// waits. The model runs the streams in one fixed interleaving, so a
// missing wait could go unnoticed by the numerics; this cannot.
struct Touch {
    uint8_t space;
    uint32_t p0, p1;
    uint64_t b0, b1;
    bool write;
};

static Touch touch(const std::byte *tap, bool write) {
    uint8_t space = static_cast<uint8_t>(tap[0]), dt = static_cast<uint8_t>(tap[1]);
    uint32_t ps = static_cast<uint8_t>(tap[2]), pc = static_cast<uint8_t>(tap[3]), off;
    uint16_t c[2], st[2];
    std::memcpy(&off, tap + 4, 4);
    std::memcpy(c, tap + 8, 4);
    std::memcpy(st, tap + 12, 4);
    uint64_t es = dtype_size(static_cast<DType>(dt));
    uint64_t last = uint64_t{c[1] - 1u} * st[1] + uint64_t{c[0] - 1u} * st[0];
    return Touch{space, ps, ps + pc, off, off + (last + 1) * es, write};
}

std::string unordered_conflict(const Program &p, size_t *pairs_out) {
    struct Ins {
        uint8_t opcode, func;
        uint32_t arg;
        std::vector<Touch> touches;
        std::array<int64_t, 4> clock{-1, -1, -1, -1}; // instructions known done, per engine
    };
    std::array<std::vector<Ins>, 4> st;
    for (unsigned e = 0; e < 4; e++) {
        auto code = p.stream(static_cast<Engine>(e + 1));
        for (size_t i = 0; i + 64 <= code.size(); i += 64) {
            const std::byte *b = &code[i];
            Ins in;
            in.opcode = static_cast<uint8_t>(b[0]);
            in.func = static_cast<uint8_t>(b[2]);
            std::memcpy(&in.arg, b + 4, 4);
            auto has = [&](int k) { return b[8 + 16 * k] != std::byte{0}; };
            switch (in.opcode) {
            case op_load:
                in.touches.push_back(touch(b + 8, true));
                break;
            case op_store:
                in.touches.push_back(touch(b + 8, false));
                break;
            case 0x20: // MATMUL (accumulating also reads op[0]: a write covers it)
            case 0x21:
            case 0x30:
            case 0x31:
            case 0x32:
            case 0x33:
            case 0x34:
            case 0x35:
                in.touches.push_back(touch(b + 8, true));
                for (int k = 1; k < 3; k++)
                    if (has(k))
                        in.touches.push_back(touch(b + 8 + 16 * k, false));
                break;
            default:
                break;
            }
            st[e].push_back(std::move(in));
        }
    }
    // Who signals each semaphore, and where its n-th signal is.
    std::array<std::vector<std::pair<unsigned, size_t>>, 16> signals;
    for (unsigned e = 0; e < 4; e++)
        for (size_t i = 0; i < st[e].size(); i++)
            if (st[e][i].opcode == op_signal) {
                if (st[e][i].arg != 1)
                    return "a SEM_SIGNAL by more than 1";
                signals[st[e][i].func].emplace_back(e, i);
            }
    for (const auto &v : signals)
        for (const auto &sg : v)
            if (sg.first != v.front().first)
                return "a semaphore with more than one signalling engine";
    // Run the streams abstractly: a wait passes once its signal has run.
    std::array<size_t, 4> pc{};
    std::array<std::array<int64_t, 4>, 4> known{};
    for (auto &k : known)
        k.fill(-1);
    for (bool progress = true; progress;) {
        progress = false;
        for (unsigned e = 0; e < 4; e++) {
            while (pc[e] < st[e].size()) {
                Ins &in = st[e][pc[e]];
                if (in.opcode == op_wait) {
                    auto &v = signals[in.func];
                    if (in.arg < 1 || in.arg > v.size())
                        return "a SEM_WAIT for a count that is never signalled";
                    auto [f, j] = v[in.arg - 1];
                    if (pc[f] <= j)
                        break; // not signalled yet
                    for (unsigned g = 0; g < 4; g++)
                        known[e][g] = std::max(known[e][g], st[f][j].clock[g]);
                }
                known[e][e] = static_cast<int64_t>(pc[e]);
                in.clock = known[e];
                pc[e]++;
                progress = true;
            }
        }
    }
    for (unsigned e = 0; e < 4; e++)
        if (pc[e] != st[e].size())
            return std::string("deadlock: ") + to_string(static_cast<Engine>(e + 1)) +
                   " blocks at instruction " + std::to_string(pc[e]);
    // Every conflicting pair across engines is ordered.
    size_t pairs = 0;
    for (unsigned e = 0; e < 4; e++)
        for (unsigned f = e + 1; f < 4; f++)
            for (size_t i = 0; i < st[e].size(); i++)
                for (size_t j = 0; j < st[f].size(); j++) {
                    bool conflict = false;
                    for (const Touch &a : st[e][i].touches)
                        for (const Touch &b : st[f][j].touches)
                            conflict |= a.space == b.space && (a.write || b.write) && a.p0 < b.p1 &&
                                        b.p0 < a.p1 && a.b0 < b.b1 && b.b0 < a.b1;
                    if (!conflict)
                        continue;
                    pairs++;
                    bool ordered = st[f][j].clock[e] >= static_cast<int64_t>(i) ||
                                   st[e][i].clock[f] >= static_cast<int64_t>(j);
                    if (!ordered)
                        return std::string(p.name()) + ": " +
                               to_string(static_cast<Engine>(e + 1)) + " instruction " +
                               std::to_string(i) + " and " + to_string(static_cast<Engine>(f + 1)) +
                               " instruction " + std::to_string(j) +
                               " touch the same bytes without a semaphore between them";
                }
    if (pairs_out)
        *pairs_out = pairs;
    return {};
}

} // namespace model
