// SPDX-License-Identifier: MIT
// The helper threads of a simulated core: the parts of a large MATMUL
// (emu/model/tensor.c) or of a large instruction split by partitions
// (nm_split_rows, emu/model/core.c) run on them at once. A round is one instruction;
// the caller publishes it by moving round_ on and waits for pending_ to
// reach 0, so every helper takes part in every round (an empty part when
// the instruction has fewer), and the next round cannot begin while a
// helper still reads this one's fields.
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
        threads_.emplace_back([this, i] { loop(i + 1); });
}

Helpers::~Helpers() {
    stopping_ = true;
    pending_.store(static_cast<uint32_t>(threads_.size()), std::memory_order_relaxed);
    round_.fetch_add(1, std::memory_order_release);
    round_.notify_all();
    for (auto &t : threads_)
        t.join();
}

void Helpers::run(void *opaque, nsim_task_fn *task, void *ctx, uint32_t count) {
    auto *h = static_cast<Helpers *>(opaque);
    h->task_ = task;
    h->ctx_ = ctx;
    h->count_ = count;
    h->pending_.store(static_cast<uint32_t>(h->threads_.size()), std::memory_order_relaxed);
    h->round_.fetch_add(1, std::memory_order_release);
    h->round_.notify_all();
    task(ctx, 0);
    for (uint32_t left = h->pending_.load(std::memory_order_acquire); left;)
        left = wait_change(h->pending_, left);
}

void Helpers::loop(uint32_t part) {
    // round_'s value when the thread was made: reading it here instead
    // would miss a first round published before this thread ran.
    uint32_t seen = 0;
    for (;;) {
        seen = wait_change(round_, seen);
        if (stopping_)
            return;
        if (part < count_)
            task_(ctx_, part);
        if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1)
            pending_.notify_one();
    }
}

} // namespace neuron::sim
