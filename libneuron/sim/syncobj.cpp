// SPDX-License-Identifier: MIT
// Syncobjs as drm_syncobj keeps them: a binary fence, or a timeline of
// points (dma_fence_chain), with the kernel's lookup and garbage collection.
#include <algorithm>
#include <cerrno>

#include "sim.hpp"

namespace neuron::sim {

bool SyncWait::wait_until(int64_t deadline_ns) const {
    for (const auto &f : fences)
        if (!f->wait_until(deadline_ns))
            return false;
    return true;
}

bool SyncWait::signaled() const {
    for (const auto &f : fences)
        if (!f->signaled())
            return false;
    return true;
}

int64_t SyncWait::signaled_at_ns() const {
    int64_t latest = 0;
    for (const auto &f : fences) {
        int64_t at = f->signaled_at_ns();
        if (!at)
            return 0;
        latest = std::max(latest, at);
    }
    return latest;
}

int SyncWait::fence_error() const {
    // A chain link signals without an error of its own (dma_fence_chain).
    return chain ? 0 : point->error();
}

void Syncobj::replace(std::shared_ptr<Fence> fence) {
    base_ = std::move(fence);
    links_.clear();
}

void Syncobj::add_point(uint64_t point, std::shared_ptr<Fence> fence) {
    Link link{point, 0, next_context_, std::move(fence)};
    if (!links_.empty()) {
        const Link &prev = links_.back();
        if (point > prev.seqno) {
            link.prev_seqno = prev.seqno;
            link.context = prev.context;
        } else {
            // An unordered point starts a new chain on top of the old one.
            link.seqno = prev.seqno;
        }
    }
    if (link.context == next_context_)
        next_context_++;
    links_.push_back(std::move(link));
    collect();
}

// dma_fence_chain_walk() drops every signalled link but the newest, and a
// signalled binary fence under the chain.
void Syncobj::collect() {
    if (links_.empty())
        return;
    auto signaled = [](const Link &l) { return l.fence->signaled(); };
    links_.erase(std::remove_if(links_.begin(), links_.end() - 1, signaled), links_.end() - 1);
    if (base_ && base_->signaled())
        base_.reset();
}

int Syncobj::find(uint64_t point, SyncWait &out) {
    out = {};
    if (links_.empty()) {
        // A binary syncobj has no points (dma_fence_chain_find_seqno).
        if (!base_ || point)
            return EINVAL;
        out.fences = {base_};
        out.point = base_;
        return 0;
    }
    collect();
    size_t i = links_.size() - 1;
    if (point && links_[i].seqno < point)
        return EINVAL; // not submitted yet
    out.chain = true;
    if (point) {
        // The oldest link of the newest chain that still covers the point.
        const uint32_t context = links_[i].context;
        while (links_[i].context == context && links_[i].prev_seqno >= point) {
            if (i == 0) {
                // Every link before it was collected: the walk ends on the
                // binary fence under the chain, or on a signalled stub.
                out.chain = false;
                out.point = base_;
                if (!out.point) {
                    out.point = std::make_shared<Fence>();
                    out.point->signal(0);
                }
                out.fences = {out.point};
                return 0;
            }
            i--;
        }
    }
    if (base_)
        out.fences.push_back(base_);
    for (size_t j = 0; j <= i; j++)
        out.fences.push_back(links_[j].fence);
    out.point = links_[i].fence;
    return 0;
}

} // namespace neuron::sim
