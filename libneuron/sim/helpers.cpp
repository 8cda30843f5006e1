// SPDX-License-Identifier: MIT
// The helper threads of a simulated core: the parts of a large MATMUL
// (emu/model/tensor.c) or of a large instruction split by partitions
// (nm_split_rows, emu/model/split.c) run on them and on the caller at once.
// A round is one instruction: the caller publishes it in claim_ and
// round_, claims parts itself until none is left and waits for done_ to
// count them all. A part is claimed with the round's number, so a helper
// waking late cannot take a part of a round that ended; the next round
// cannot begin while a part of this one runs.
#include "sim.hpp"

namespace neuron::sim {

namespace {

// About 13 us of pause instructions (26 ns each on an AMD EPYC): MATMULs
// come in runs a few microseconds apart, and a futex wake-up costs more
// than that. Longer spinning took time from the thread that submits the
// jobs (eager training, 2 CPUs: 1797 tokens/s at 500 rounds, 1455 at 2000).
constexpr int spin_rounds = 500;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// Waits until @a differs from @old, spinning first, then in the kernel;
// returns the new value.
uint32_t wait_change(const std::atomic<uint32_t> &a, uint32_t old) {
    for (int i = 0; i < spin_rounds; i++) {
        uint32_t v = a.load(std::memory_order_acquire);
        if (v != old)
            return v;
        cpu_relax();
    }
    for (;;) {
        a.wait(old, std::memory_order_acquire);
        uint32_t v = a.load(std::memory_order_acquire);
        if (v != old)
            return v;
    }
}

} // namespace

Helpers::Helpers(uint32_t helpers) {
    threads_.reserve(helpers);
    for (uint32_t i = 0; i < helpers; i++)
        threads_.emplace_back([this] { loop(); });
}

Helpers::~Helpers() {
    stopping_.store(true, std::memory_order_release);
    round_.fetch_add(1, std::memory_order_release);
    round_.notify_all();
    for (auto &t : threads_)
        t.join();
}

void Helpers::run(void *opaque, nsim_task_fn *task, void *ctx, uint32_t count) {
    auto *h = static_cast<Helpers *>(opaque);
    const uint32_t round = h->round_.load(std::memory_order_relaxed) + 1;
    h->task_ = task;
    h->ctx_ = ctx;
    h->done_.store(0, std::memory_order_relaxed);
    h->claim_.store(uint64_t{round} << 32 | uint64_t{count & 0xff} << 8, std::memory_order_release);
    h->round_.store(round, std::memory_order_release);
    h->round_.notify_all();
    while (h->run_one(round)) {
    }
    for (uint32_t done = h->done_.load(std::memory_order_acquire); done < count;)
        done = wait_change(h->done_, done);
}

bool Helpers::run_one(uint32_t round) {
    uint64_t c = claim_.load(std::memory_order_acquire);
    do {
        if (c >> 32 != round || (c & 0xff) >= ((c >> 8) & 0xff))
            return false;
    } while (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel,
                                           std::memory_order_acquire));
    const auto count = static_cast<uint32_t>((c >> 8) & 0xff);
    task_(ctx_, static_cast<uint32_t>(c & 0xff));
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == count)
        done_.notify_one();
    return true;
}

void Helpers::loop() {
    // round_'s value when the thread was made: reading it here instead
    // would miss a first round published before this thread ran.
    uint32_t seen = 0;
    for (;;) {
        seen = wait_change(round_, seen);
        if (stopping_.load(std::memory_order_acquire))
            return;
        while (run_one(seen)) {
        }
    }
}

} // namespace neuron::sim
