// SPDX-License-Identifier: MIT
// Collectives: a communicator's rendezvous (the k-th call of every rank is
// one collective), the ring plans built from DMA copies and reduction jobs,
// and the waits with a timeout that name what did not happen.
#include <algorithm>
#include <array>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <neuron/builder.hpp>
#include <neuron/collectives.hpp>
#include <neuron/kernel.hpp>
#include <neuron/queue.hpp>

#include "device_state.hpp"

namespace neuron {

const char *to_string(CollectiveOp op) noexcept {
    switch (op) {
    case CollectiveOp::sum:
        return "sum";
    case CollectiveOp::avg:
        return "avg";
    case CollectiveOp::max:
        return "max";
    case CollectiveOp::min:
        return "min";
    }
    return "?";
}

namespace detail {

namespace {

using Clock = std::chrono::steady_clock;

enum class Kind {
    all_reduce,
    broadcast,
    reduce,
    all_gather,
    reduce_scatter,
    all_to_all,
    p2p,
    barrier
};

const char *kind_name(Kind k) {
    switch (k) {
    case Kind::all_reduce:
        return "all_reduce";
    case Kind::broadcast:
        return "broadcast";
    case Kind::reduce:
        return "reduce";
    case Kind::all_gather:
        return "all_gather";
    case Kind::reduce_scatter:
        return "reduce_scatter";
    case Kind::all_to_all:
        return "all_to_all";
    case Kind::p2p:
        return "send/recv";
    case Kind::barrier:
        return "barrier";
    }
    return "?";
}

bool has_op(Kind k) {
    return k == Kind::all_reduce || k == Kind::reduce || k == Kind::reduce_scatter;
}
bool has_root(Kind k) {
    return k == Kind::broadcast || k == Kind::reduce;
}

// What one rank asked for.
struct Call {
    Kind kind = Kind::barrier;
    BufferRange send, recv;
    uint64_t count = 0;
    DType dtype = DType::fp32;
    CollectiveOp op = CollectiveOp::sum;
    unsigned root = 0;   ///< broadcast, reduce; p2p: the sender
    bool sender = false; ///< p2p: this call is the send
};

} // namespace

// One collective: the calls of its ranks, then the fences of its work.
struct Round {
    /// The communicator's, copied: an open round must not keep it alive.
    std::chrono::milliseconds timeout{0};
    size_t comm_size = 0;
    std::string name;                       ///< "all_reduce #3"
    std::vector<unsigned> ranks;            ///< who takes part (all, or a p2p pair)
    std::vector<std::optional<Call>> calls; ///< by position in ranks
    Clock::time_point first_call;
    std::mutex lock;
    std::condition_variable cv;
    bool issued = false;
    std::string error; ///< why it failed, for every rank
    errc error_code = errc::invalid_argument;
    std::vector<std::vector<Fence>> fences; ///< by position in ranks

    std::string what() const; // "all_reduce #3 of 1000 fp32 elements (sum)"
    size_t position(unsigned rank) const {
        return static_cast<size_t>(std::find(ranks.begin(), ranks.end(), rank) - ranks.begin());
    }
};

struct CommState {
    std::vector<Rank> ranks;
    CommunicatorOptions options;
    std::mutex lock;
    /// The rounds not yet joined by every rank, by key ("all", "p2p a>b"),
    /// and each rank's next call number per key.
    std::map<std::string, std::map<uint64_t, std::shared_ptr<Round>>> open;
    std::map<std::string, std::vector<uint64_t>> next_call;
    /// Scratch buffers by (rank, use), with the fences of the last
    /// collective's work on them; planning is one collective at a time.
    struct Scratch {
        std::unique_ptr<Buffer> buffer;
        std::vector<Fence> users;
    };
    std::map<std::pair<unsigned, unsigned>, Scratch> scratch;
    /// Collectives whose ranks have all called, queued on the devices in
    /// that order by the communicator's own thread, so that no rank's call
    /// waits for it (a host-staged copy waits for its first half).
    std::mutex work_lock;
    std::condition_variable work_cv;
    std::deque<std::shared_ptr<Round>> to_queue;
    bool stopping = false;
    std::thread worker;
    void enqueue(std::shared_ptr<Round> r);
    void run();
    ~CommState();
    /// Reduction programs, loaded per device.
    std::mutex program_lock;
    std::map<std::string, std::shared_ptr<LoadedProgram>> programs;
};

std::string Round::what() const {
    const Call *c = nullptr;
    for (const auto &x : calls)
        if (x) {
            c = &*x;
            break;
        }
    if (!c || c->kind == Kind::barrier)
        return name;
    std::string s = fmt::format("{} of {} {} elements", name, c->count, to_string(c->dtype));
    if (has_op(c->kind))
        s += fmt::format(" ({})", to_string(c->op));
    return s;
}

namespace {

// --- device work --------------------------------------------------------------

// Fences of the work on device memory: which work wrote or read which
// bytes of which buffer. Work that reads bytes waits for the work that
// wrote them; work that writes waits for every earlier access. An access
// that a later write covers is dropped (that write waited for it).
class Tracker {
  public:
    std::vector<Fence> deps(const std::vector<BufferRange> &reads,
                            const std::vector<BufferRange> &writes) const {
        std::vector<Fence> out;
        auto add = [&](const Fence &f) {
            for (const auto &g : out)
                if (g.state() == f.state())
                    return;
            out.push_back(f);
        };
        for (const auto &e : log_) {
            for (const auto &r : reads)
                if (e.write && overlaps(e, r))
                    add(e.fence);
            for (const auto &w : writes)
                if (overlaps(e, w))
                    add(e.fence);
        }
        // More than a job can wait for: the oldest are waited for here.
        while (out.size() > DRM_NEURON_MAX_IN_SYNCS) {
            out.front().wait();
            out.erase(out.begin());
        }
        return out;
    }
    void record(const Fence &f, const std::vector<BufferRange> &reads,
                const std::vector<BufferRange> &writes) {
        for (const auto &w : writes)
            std::erase_if(log_, [&](const Entry &e) {
                return e.buffer == w.buffer && e.begin >= w.offset && e.end <= w.offset + w.size;
            });
        for (const auto &r : reads)
            log_.push_back({r.buffer, r.offset, r.offset + r.size, false, f});
        for (const auto &w : writes)
            log_.push_back({w.buffer, w.offset, w.offset + w.size, true, f});
    }

    /// Work of earlier collectives on @p r, each as a write of all of it.
    void seed(const BufferRange &r, const std::vector<Fence> &fences) {
        for (const auto &f : fences)
            log_.push_back({r.buffer, r.offset, r.offset + r.size, true, f});
    }
    /// The fences of every access to @p b still standing.
    std::vector<Fence> on(const Buffer *b) const {
        std::vector<Fence> out;
        for (const auto &e : log_)
            if (e.buffer == b && std::none_of(out.begin(), out.end(), [&](const Fence &f) {
                    return f.state() == e.fence.state();
                }))
                out.push_back(e.fence);
        return out;
    }

  private:
    struct Entry {
        const Buffer *buffer;
        uint64_t begin, end;
        bool write;
        Fence fence;
    };
    static bool overlaps(const Entry &e, const BufferRange &r) {
        return e.buffer == r.buffer && e.begin < r.offset + r.size && r.offset < e.end;
    }
    std::vector<Entry> log_;
};

// The reduction job of @p elems elements: acc = acc op in, then / divisor.
std::shared_ptr<LoadedProgram> reduction(CommState &c, const Device &dev, CollectiveOp op,
                                         DType dtype, uint64_t elems, unsigned divisor) {
    const std::string key =
        fmt::format("{}|{}|{}|{}|{}", static_cast<const void *>(dev.state().get()), to_string(op),
                    to_string(dtype), elems, divisor);
    std::lock_guard<std::mutex> g(c.program_lock);
    if (auto it = c.programs.find(key); it != c.programs.end())
        return it->second;
    const unsigned es = dtype_size(dtype);
    const auto P = dev.info().partitions ? dev.info().partitions : 128u;
    BuilderLimits lim;
    lim.partitions = P;
    if (dev.info().sbuf_size)
        lim.sbuf_bytes = static_cast<uint32_t>(dev.info().sbuf_size / P);
    ProgramBuilder b(fmt::format("coll_{}_{}_{}", to_string(op), to_string(dtype), elems), lim);
    auto acc = b.argument("acc", dtype, {static_cast<uint32_t>(elems)}, Direction::inout);
    auto in = b.argument("in", dtype, {static_cast<uint32_t>(elems)}, Direction::in);
    const AluOp alu = op == CollectiveOp::max   ? AluOp::max
                      : op == CollectiveOp::min ? AluOp::min
                                                : AluOp::add;
    // Element e is at partition e / cols, column e % cols of the main block
    // (P rows); the rest (under P elements) is one partition.
    const uint64_t cols = elems / P, rest = elems % P;
    const uint32_t tile =
        static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>(cols, 1), 4096 / es * 2));
    Tile ta[2] = {b.sbuf("a0", dtype, tile), b.sbuf("a1", dtype, tile)};
    Tile tb[2] = {b.sbuf("b0", dtype, tile), b.sbuf("b1", dtype, tile)};
    Tile tf = b.sbuf("sum", DType::fp32, tile);
    Kernel k(b);
    auto step = [&](uint32_t parts, uint64_t byte_off, uint32_t part_stride, uint32_t n,
                    unsigned i) {
        Tile a = ta[i % 2].partitions(0, parts), bb = tb[i % 2].partitions(0, parts);
        Tile f = tf.partitions(0, parts);
        k.dma_load(a.view(0, n), acc.at(byte_off, part_stride));
        k.dma_load(bb.view(0, n), in.at(byte_off, part_stride));
        if (divisor > 1) {
            // In fp32, rounded once to the element type by the division.
            k.tensor_tensor(alu, f.view(0, n), a.view(0, n), bb.view(0, n));
            k.tensor_scalar(Engine::vector, a.view(0, n), f.view(0, n), AluOp::div,
                            static_cast<float>(divisor));
        } else {
            k.tensor_tensor(alu, a.view(0, n), a.view(0, n), bb.view(0, n));
        }
        k.dma_store(acc.at(byte_off, part_stride), a.view(0, n));
    };
    unsigned i = 0;
    for (uint64_t c0 = 0; c0 < cols; c0 += tile, i++)
        step(P, c0 * es, static_cast<uint32_t>(cols * es),
             static_cast<uint32_t>(std::min<uint64_t>(tile, cols - c0)), i);
    for (uint64_t r0 = 0; r0 < rest; r0 += tile, i++)
        step(1, (cols * P + r0) * es, 0, static_cast<uint32_t>(std::min<uint64_t>(tile, rest - r0)),
             i);
    k.finish();
    auto lp = std::make_shared<LoadedProgram>(dev.load(b.finish()));
    c.programs[key] = lp;
    return lp;
}

// Builds one collective's device work from the calls of its ranks.
class Planner {
  public:
    Planner(CommState &c, Round &r) : c_(c), r_(r) {}

    void plan();

  private:
    const Rank &rank(unsigned r) const { return c_.ranks[r]; }
    const Call &call(unsigned r) const { return *r_.calls[r_.position(r)]; }
    uint64_t es() const { return dtype_size(call(r_.ranks[0]).dtype); }
    uint64_t piece_elems() const { return std::max<uint64_t>(1, c_.options.chunk_bytes / es()); }

    // Elements [elem_off, elem_off + elems) of @p b.
    BufferRange sub(const BufferRange &b, uint64_t elem_off, uint64_t elems) const {
        return {b.buffer, b.offset + elem_off * es(), elems * es()};
    }

    // dst <- src, a DMA copy on dst's device (the receiver pulls).
    void copy(unsigned dst_rank, const BufferRange &dst, unsigned src_rank,
              const BufferRange &src) {
        auto deps = t_.deps({src}, {dst});
        Fence f = dst.buffer->device().copy(dst, src, deps);
        t_.record(f, {src}, {dst});
        touch(dst_rank, f);
        touch(src_rank, f);
    }

    // acc = acc op in (then / divisor), a job on @p r's core.
    void reduce(unsigned r, const BufferRange &acc, const BufferRange &in, uint64_t elems,
                unsigned divisor) {
        const Call &c = call(r);
        auto lp = reduction(c_, rank(r).device, c.op, c.dtype, elems, divisor);
        auto deps = t_.deps({in}, {acc});
        Fence f = rank(r)
                      .device.queue(rank(r).core)
                      .submit(*lp, Arguments().bind("acc", acc).bind("in", in), deps);
        t_.record(f, {in}, {acc});
        touch(r, f);
    }

    void touch(unsigned r, const Fence &f) { per_rank_[r].push_back(f); }

    // Scratch buffer @p which of rank @p r, at least @p bytes: kept by the
    // communicator from one collective to the next (allocating device
    // memory, which the driver zeroes, costs more than a small collective).
    // Its work of earlier collectives is what its first use here waits for.
    const Buffer &scratch(unsigned r, unsigned which, uint64_t bytes) {
        auto &s = c_.scratch[{r, which}];
        if (!s.buffer || s.buffer->size() < bytes) {
            // A buffer still in use by the devices lives on in their work.
            s.buffer = std::make_unique<Buffer>(rank(r).device.allocate(bytes));
            s.users.clear();
        }
        if (used_.insert(s.buffer.get()).second)
            t_.seed(s.buffer->range(), s.users);
        return *s.buffer;
    }

    // Segment j of @p count elements split over n: [off, off + len).
    static std::pair<uint64_t, uint64_t> segment(uint64_t count, unsigned n, unsigned j) {
        uint64_t base = count / n, extra = count % n;
        uint64_t off = j * base + std::min<uint64_t>(j, extra);
        return {off, base + (j < extra ? 1 : 0)};
    }

    // The ring over the ranks, on work[r] (count elements each) by ring
    // position: reduce-scatter leaves the reduced segment p at position p;
    // with @p gather, the all-gather then gives everyone every segment.
    void ring(const std::vector<BufferRange> &work, uint64_t count, bool reduce_scatter,
              bool gather, unsigned divisor);

    // Copies of @p elems elements from (src_rank, src) to (dst_rank, dst)
    // in pieces, so that a chain of them pipelines.
    void copy_pieces(unsigned dst_rank, const BufferRange &dst, unsigned src_rank,
                     const BufferRange &src, uint64_t elems) {
        for (uint64_t o = 0; o < elems; o += piece_elems()) {
            uint64_t n = std::min(piece_elems(), elems - o);
            copy(dst_rank, sub(dst, o, n), src_rank, sub(src, o, n));
        }
    }

    CommState &c_;
    Round &r_;
    Tracker t_;
    std::map<unsigned, std::vector<Fence>> per_rank_;
    std::set<const Buffer *> used_; ///< scratch buffers of this plan
};

void Planner::ring(const std::vector<BufferRange> &work, uint64_t count, bool reduce_scatter,
                   bool gather, unsigned divisor) {
    const auto n = static_cast<unsigned>(work.size());
    if (n < 2 || count == 0)
        return;
    const uint64_t piece = piece_elems();
    // Two receive slots per position: a piece's copy into one overlaps the
    // reduction of the previous piece from the other.
    const uint64_t slot_elems = std::min(segment(count, n, 0).second, piece);
    std::vector<std::array<const Buffer *, 2>> slots(n);
    if (reduce_scatter)
        for (unsigned p = 0; p < n; p++)
            for (auto &s : slots[p])
                s = &scratch(r_.ranks[p], static_cast<unsigned>(&s - slots[p].data()),
                             slot_elems * es());
    std::vector<unsigned> slot_use(n, 0);
    if (reduce_scatter)
        for (unsigned s = 0; s + 1 < n; s++)
            for (unsigned p = 0; p < n; p++) {
                // Position p sends segment (p - s - 1) to p + 1, which adds it.
                const unsigned to = (p + 1) % n, j = (p + 2 * n - s - 1) % n;
                auto [off, len] = segment(count, n, j);
                for (uint64_t o = 0; o < len; o += piece) {
                    uint64_t m = std::min(piece, len - o);
                    BufferRange scratch = slots[to][slot_use[to]++ % 2]->range(0, m * es());
                    copy(r_.ranks[to], scratch, r_.ranks[p], sub(work[p], off + o, m));
                    reduce(r_.ranks[to], sub(work[to], off + o, m), scratch, m,
                           s + 2 == n ? divisor : 1);
                }
            }
    if (gather)
        for (unsigned s = 0; s + 1 < n; s++)
            for (unsigned p = 0; p < n; p++) {
                // Position p passes segment (p - s) on to p + 1.
                const unsigned to = (p + 1) % n, j = (p + n - s) % n;
                auto [off, len] = segment(count, n, j);
                for (uint64_t o = 0; o < len; o += piece) {
                    uint64_t m = std::min(piece, len - o);
                    copy(r_.ranks[to], sub(work[to], off + o, m), r_.ranks[p],
                         sub(work[p], off + o, m));
                }
            }
}

void Planner::plan() {
    const Call &c0 = call(r_.ranks[0]);
    const auto n = static_cast<unsigned>(r_.ranks.size());
    const uint64_t count = c0.count;
    const unsigned avg = c0.op == CollectiveOp::avg && has_op(c0.kind) ? n : 1;
    auto same = [](const BufferRange &a, const BufferRange &b) {
        return a.buffer == b.buffer && a.offset == b.offset;
    };
    if (c0.kind != Kind::barrier && count > 0)
        switch (c0.kind) {
        case Kind::all_reduce: {
            std::vector<BufferRange> work;
            for (unsigned r : r_.ranks) {
                const Call &c = call(r);
                if (!same(c.send, c.recv))
                    copy_pieces(r, c.recv, r, c.send, count);
                work.push_back(sub(c.recv, 0, count));
            }
            ring(work, count, true, true, avg);
            break;
        }
        case Kind::reduce_scatter: {
            // The ring works on a copy of send, which it must not change;
            // its segments are the blocks (count * n elements in n parts).
            std::vector<BufferRange> work;
            for (unsigned r : r_.ranks) {
                BufferRange w = scratch(r, 2, count * n * es()).range(0, count * n * es());
                copy_pieces(r, w, r, call(r).send, count * n);
                work.push_back(w);
            }
            ring(work, count * n, true, false, avg);
            for (unsigned p = 0; p < n; p++)
                copy_pieces(r_.ranks[p], call(r_.ranks[p]).recv, r_.ranks[p],
                            sub(work[p], p * count, count), count);
            break;
        }
        case Kind::reduce: {
            const unsigned root = c0.root;
            std::vector<BufferRange> work;
            for (unsigned r : r_.ranks) {
                BufferRange w = r == root ? sub(call(r).recv, 0, count)
                                          : scratch(r, 2, count * es()).range(0, count * es());
                if (!same(call(r).send, w))
                    copy_pieces(r, w, r, call(r).send, count);
                work.push_back(w);
            }
            ring(work, count, true, false, avg);
            // Position p holds reduced segment p: the others send theirs to the root.
            for (unsigned p = 0; p < n; p++) {
                auto [off, len] = segment(count, n, p);
                if (r_.ranks[p] != root && len)
                    copy_pieces(root, sub(work[root], off, len), r_.ranks[p],
                                sub(work[p], off, len), len);
            }
            break;
        }
        case Kind::broadcast: {
            // A chain from the root, in pieces that pipeline along it.
            const unsigned root = c0.root;
            for (unsigned i = 1; i < n; i++) {
                unsigned from = (root + i - 1) % n, to = (root + i) % n;
                copy_pieces(to, call(to).send, from, call(from).send, count);
            }
            break;
        }
        case Kind::all_gather: {
            // Each rank's send into its block, then the ring's all-gather
            // half with the blocks as segments.
            std::vector<BufferRange> work;
            for (unsigned p = 0; p < n; p++) {
                const Call &c = call(r_.ranks[p]);
                BufferRange own = sub(c.recv, p * count, count);
                if (!same(c.send, own))
                    copy_pieces(r_.ranks[p], own, r_.ranks[p], c.send, count);
                work.push_back(sub(c.recv, 0, count * n));
            }
            ring(work, count * n, false, true, 1);
            break;
        }
        case Kind::all_to_all: {
            // Pairwise: rank j pulls block j of every rank's send.
            for (unsigned pj = 0; pj < n; pj++)
                for (unsigned pi = 0; pi < n; pi++) {
                    unsigned j = r_.ranks[pj], i = r_.ranks[pi];
                    copy_pieces(j, sub(call(j).recv, pi * count, count), i,
                                sub(call(i).send, pj * count, count), count);
                }
            break;
        }
        case Kind::p2p: {
            const unsigned from = c0.root;
            const unsigned to = r_.ranks[0] == from ? r_.ranks[1] : r_.ranks[0];
            copy_pieces(to, call(to).recv, from, call(from).send, count);
            break;
        }
        case Kind::barrier:
            break;
        }
    for (size_t p = 0; p < r_.ranks.size(); p++)
        r_.fences[p] = per_rank_[r_.ranks[p]];
    for (auto &[key, s] : c_.scratch)
        if (used_.count(s.buffer.get()))
            s.users = t_.on(s.buffer.get());
}

} // namespace

} // namespace detail

using detail::Call;
using detail::CommState;
using detail::Kind;
using detail::Round;

// --- the communicator -----------------------------------------------------------

Communicator::Communicator(std::vector<Rank> ranks, CommunicatorOptions options)
    : state_(std::make_shared<CommState>()) {
    if (ranks.empty())
        throw Error(errc::invalid_argument, "communicator: no ranks");
    if (options.timeout.count() <= 0)
        throw Error(
            errc::invalid_argument,
            fmt::format("communicator: timeout {} ms: must be positive", options.timeout.count()));
    if (options.chunk_bytes < 512 || options.chunk_bytes % 512 ||
        options.chunk_bytes > (256u << 20))
        throw Error(errc::invalid_argument,
                    fmt::format("communicator: chunk_bytes {}: must be a multiple of 512 from 512 "
                                "to 256 MiB",
                                options.chunk_bytes));
    for (size_t r = 0; r < ranks.size(); r++) {
        const Rank &k = ranks[r];
        if (!k.device.state())
            throw Error(errc::invalid_argument, fmt::format("communicator: rank {}: no device", r));
        if (k.core >= k.device.info().num_cores)
            throw Error(errc::invalid_argument,
                        fmt::format("communicator: rank {}: core {} of {} does not exist (the "
                                    "device has {})",
                                    r, k.core, k.device.path(), k.device.info().num_cores));
        for (size_t q = 0; q < r; q++)
            if (ranks[q].device.state() == k.device.state() && ranks[q].core == k.core)
                throw Error(errc::invalid_argument,
                            fmt::format("communicator: ranks {} and {} are both core {} of {}: "
                                        "a core is one rank",
                                        q, r, k.core, k.device.path()));
    }
    state_->ranks = std::move(ranks);
    state_->options = options;
}

Communicator::~Communicator() = default;
Communicator::Communicator(Communicator &&) noexcept = default;
Communicator &Communicator::operator=(Communicator &&) noexcept = default;

unsigned Communicator::size() const {
    return static_cast<unsigned>(state_->ranks.size());
}
const Rank &Communicator::rank(unsigned r) const {
    if (r >= size())
        throw Error(errc::invalid_argument,
                    fmt::format("rank {}: the communicator has {} ranks", r, size()));
    return state_->ranks[r];
}
const CommunicatorOptions &Communicator::options() const {
    return state_->options;
}

namespace {

std::string rank_list(const std::vector<unsigned> &v) {
    std::string s;
    for (size_t i = 0; i < v.size(); i++)
        s += fmt::format("{}{}", i ? (i + 1 == v.size() ? " and " : ", ") : "", v[i]);
    return s;
}

void fail(Round &r, errc code, std::string why) {
    {
        std::lock_guard<std::mutex> g(r.lock);
        if (!r.error.empty())
            return;
        r.error = std::move(why);
        r.error_code = code;
    }
    r.cv.notify_all();
}

// The ranks agree: the same collective, count, type, op and root.
std::string disagreement(const Round &r) {
    const Call &a = *r.calls[0];
    for (size_t p = 1; p < r.calls.size(); p++) {
        const Call &b = *r.calls[p];
        auto says = [&](const Call &c) {
            std::string s = fmt::format("{} of {} {} elements", detail::kind_name(c.kind), c.count,
                                        to_string(c.dtype));
            if (detail::has_op(c.kind))
                s += fmt::format(" ({})", to_string(c.op));
            if (detail::has_root(c.kind))
                s += fmt::format(" with root {}", c.root);
            return s;
        };
        if (a.kind != b.kind || a.count != b.count || a.dtype != b.dtype ||
            (detail::has_op(a.kind) && a.op != b.op) ||
            (detail::has_root(a.kind) && a.root != b.root))
            return fmt::format("the ranks disagree: rank {} called {}, rank {} {}", r.ranks[0],
                               says(a), r.ranks[p], says(b));
        if (a.kind == Kind::p2p && a.sender == b.sender)
            return fmt::format("ranks {} and {} both {} (a send pairs with a recv)", r.ranks[0],
                               r.ranks[p], a.sender ? "send" : "recv");
    }
    return {};
}

} // namespace

namespace detail {

std::string check_count(DType t, uint64_t count);

void CommState::enqueue(std::shared_ptr<Round> r) {
    {
        std::lock_guard<std::mutex> g(work_lock);
        to_queue.push_back(std::move(r));
        if (!worker.joinable())
            worker = std::thread([this] { run(); });
    }
    work_cv.notify_one();
}

void CommState::run() {
    for (;;) {
        std::shared_ptr<Round> round;
        {
            std::unique_lock<std::mutex> g(work_lock);
            work_cv.wait(g, [&] { return stopping || !to_queue.empty(); });
            if (to_queue.empty())
                return; // stopping, everything queued
            round = std::move(to_queue.front());
            to_queue.pop_front();
        }
        try {
            Planner(*this, *round).plan();
            {
                std::lock_guard<std::mutex> g(round->lock);
                round->issued = true;
            }
            round->cv.notify_all();
        } catch (const Error &e) {
            // What was queued before the failure runs to its end; the
            // ranks' waits report the failure.
            fail(*round,
                 e.code().category() == category() ? static_cast<errc>(e.code().value())
                                                   : errc::io_error,
                 fmt::format("{}: queuing its work: {}", round->what(), e.what()));
        } catch (const std::exception &e) {
            fail(*round, errc::io_error,
                 fmt::format("{}: queuing its work: {}", round->what(), e.what()));
        }
    }
}

// Collectives whose ranks have all called are queued before the thread
// ends, so that their waits end too.
CommState::~CommState() {
    {
        std::lock_guard<std::mutex> g(work_lock);
        stopping = true;
    }
    work_cv.notify_all();
    if (worker.joinable())
        worker.join();
}

struct Joiner {
    static Work join(const std::shared_ptr<CommState> &c, const std::string &key,
                     const std::vector<unsigned> &ranks, unsigned rank, Call call,
                     const std::string &local_error);
};

// Joins the calling rank to its next round of @p key (made with @p ranks on
// first use); the last one to join plans and queues the work.
Work Joiner::join(const std::shared_ptr<CommState> &c, const std::string &key,
                  const std::vector<unsigned> &ranks, unsigned rank, Call call,
                  const std::string &checked) {
    // The element type and count first: the sizes the other checks
    // computed from them mean nothing otherwise.
    std::string local_error = check_count(call.dtype, call.count);
    if (local_error.empty())
        local_error = checked;
    std::shared_ptr<Round> round;
    bool last = false;
    {
        std::lock_guard<std::mutex> g(c->lock);
        auto &next = c->next_call[key];
        if (next.empty())
            next.assign(c->ranks.size(), 0);
        uint64_t k = next[rank]++;
        auto &slot = c->open[key][k];
        if (!slot) {
            slot = std::make_shared<Round>();
            slot->timeout = c->options.timeout;
            slot->comm_size = c->ranks.size();
            slot->name = fmt::format("{} #{}", kind_name(call.kind), k);
            slot->ranks = ranks;
            slot->calls.resize(ranks.size());
            slot->fences.resize(ranks.size());
            slot->first_call = Clock::now();
        }
        round = slot;
        std::lock_guard<std::mutex> rg(round->lock);
        round->calls[round->position(rank)] = call;
        last = std::all_of(round->calls.begin(), round->calls.end(),
                           [](const auto &x) { return x.has_value(); });
        if (last)
            c->open[key].erase(k);
    }
    if (!local_error.empty()) {
        std::string why = fmt::format("{}: rank {}: {}", round->name, rank, local_error);
        fail(*round, errc::invalid_argument, why);
        throw Error(errc::invalid_argument, why);
    }
    if (last) {
        {
            std::lock_guard<std::mutex> g(round->lock);
            if (!round->error.empty())
                return Work(round, rank); // failed while waiting for this rank
        }
        std::string why = disagreement(*round);
        if (!why.empty()) {
            fail(*round, errc::invalid_argument, fmt::format("{}: {}", round->what(), why));
        } else {
            c->enqueue(round);
        }
    }
    return Work(round, rank);
}

} // namespace detail

namespace {

// The checks one rank can make alone, or "" if none fails.
std::string check_range(const Rank &rk, const char *name, const BufferRange &b, uint64_t bytes,
                        bool optional = false) {
    if (!b.buffer || !*b.buffer) {
        if (optional || bytes == 0)
            return {};
        return fmt::format("{}: no buffer", name);
    }
    if (b.buffer->device().state() != rk.device.state())
        return fmt::format("{} is a buffer of {}, not of this rank's device {}", name,
                           b.buffer->device().path(), rk.device.path());
    if (b.buffer->region() != Region::device)
        return fmt::format("{} is in host memory: collectives take device buffers", name);
    if (b.size < bytes || b.offset > b.buffer->size() || b.size > b.buffer->size() - b.offset)
        return fmt::format("{} holds {} bytes at offset {} of a {}-byte buffer, {} are needed",
                           name, b.size, b.offset, b.buffer->size(), bytes);
    return {};
}

} // namespace

// The element type and count, for every collective.
std::string detail::check_count(DType t, uint64_t count) {
    if (t != DType::fp32 && t != DType::bf16 && t != DType::fp16 && t != DType::int32 &&
        t != DType::u8)
        return fmt::format("unknown element type {}", static_cast<unsigned>(t));
    if (count > (uint64_t(1) << 46))
        return fmt::format("{} elements: at most 2^46", count);
    return {};
}

namespace {

std::string check_op(Kind kind, DType t, CollectiveOp op) {
    if (static_cast<unsigned>(op) > static_cast<unsigned>(CollectiveOp::min))
        return fmt::format("unknown reduction {}", static_cast<unsigned>(op));
    if (t != DType::fp32 && t != DType::bf16)
        return fmt::format("{} ({}) of {} elements is not supported: reductions take fp32 or bf16",
                           detail::kind_name(kind), to_string(op), to_string(t));
    return {};
}

std::vector<unsigned> all_ranks(unsigned n) {
    std::vector<unsigned> v(n);
    for (unsigned i = 0; i < n; i++)
        v[i] = i;
    return v;
}

} // namespace

#define NEURON_CHECK_RANK(r)                                                                       \
    do {                                                                                           \
        if ((r) >= size())                                                                         \
            throw Error(errc::invalid_argument,                                                    \
                        fmt::format("rank {}: the communicator has {} ranks", (r), size()));       \
    } while (0)

Work Communicator::all_reduce(unsigned rank, const BufferRange &send, const BufferRange &recv,
                              uint64_t count, DType dtype, CollectiveOp op) {
    NEURON_CHECK_RANK(rank);
    const uint64_t bytes = count * dtype_size(dtype);
    std::string e = check_op(Kind::all_reduce, dtype, op);
    if (e.empty())
        e = check_range(state_->ranks[rank], "send", send, bytes);
    if (e.empty())
        e = check_range(state_->ranks[rank], "recv", recv, bytes);
    Call c{Kind::all_reduce, send, recv, count, dtype, op, 0, false};
    return detail::Joiner::join(state_, "all", all_ranks(size()), rank, c, e);
}

Work Communicator::broadcast(unsigned rank, const BufferRange &buf, uint64_t count, DType dtype,
                             unsigned root) {
    NEURON_CHECK_RANK(rank);
    std::string e = root >= size()
                        ? fmt::format("root {}: the communicator has {} ranks", root, size())
                        : check_range(state_->ranks[rank], "buf", buf, count * dtype_size(dtype));
    Call c{Kind::broadcast, buf, buf, count, dtype, CollectiveOp::sum, root, false};
    return detail::Joiner::join(state_, "all", all_ranks(size()), rank, c, e);
}

Work Communicator::reduce(unsigned rank, const BufferRange &send, const BufferRange &recv,
                          uint64_t count, DType dtype, CollectiveOp op, unsigned root) {
    NEURON_CHECK_RANK(rank);
    const uint64_t bytes = count * dtype_size(dtype);
    std::string e = root >= size()
                        ? fmt::format("root {}: the communicator has {} ranks", root, size())
                        : check_op(Kind::reduce, dtype, op);
    if (e.empty())
        e = check_range(state_->ranks[rank], "send", send, bytes);
    if (e.empty())
        e = check_range(state_->ranks[rank], "recv", recv, bytes, rank != root);
    Call c{Kind::reduce, send, recv, count, dtype, op, root, false};
    return detail::Joiner::join(state_, "all", all_ranks(size()), rank, c, e);
}

Work Communicator::all_gather(unsigned rank, const BufferRange &send, const BufferRange &recv,
                              uint64_t count, DType dtype) {
    NEURON_CHECK_RANK(rank);
    const uint64_t bytes = count * dtype_size(dtype);
    std::string e = check_range(state_->ranks[rank], "send", send, bytes);
    if (e.empty())
        e = check_range(state_->ranks[rank], "recv", recv, bytes * size());
    Call c{Kind::all_gather, send, recv, count, dtype, CollectiveOp::sum, 0, false};
    return detail::Joiner::join(state_, "all", all_ranks(size()), rank, c, e);
}

Work Communicator::reduce_scatter(unsigned rank, const BufferRange &send, const BufferRange &recv,
                                  uint64_t count, DType dtype, CollectiveOp op) {
    NEURON_CHECK_RANK(rank);
    const uint64_t bytes = count * dtype_size(dtype);
    std::string e = check_op(Kind::reduce_scatter, dtype, op);
    if (e.empty())
        e = check_range(state_->ranks[rank], "send", send, bytes * size());
    if (e.empty())
        e = check_range(state_->ranks[rank], "recv", recv, bytes);
    Call c{Kind::reduce_scatter, send, recv, count, dtype, op, 0, false};
    return detail::Joiner::join(state_, "all", all_ranks(size()), rank, c, e);
}

Work Communicator::all_to_all(unsigned rank, const BufferRange &send, const BufferRange &recv,
                              uint64_t count, DType dtype) {
    NEURON_CHECK_RANK(rank);
    const uint64_t bytes = count * dtype_size(dtype) * size();
    std::string e = check_range(state_->ranks[rank], "send", send, bytes);
    if (e.empty())
        e = check_range(state_->ranks[rank], "recv", recv, bytes);
    Call c{Kind::all_to_all, send, recv, count, dtype, CollectiveOp::sum, 0, false};
    return detail::Joiner::join(state_, "all", all_ranks(size()), rank, c, e);
}

Work Communicator::send(unsigned rank, const BufferRange &buf, uint64_t count, DType dtype,
                        unsigned peer) {
    NEURON_CHECK_RANK(rank);
    NEURON_CHECK_RANK(peer);
    if (peer == rank)
        throw Error(errc::invalid_argument, fmt::format("send: rank {} to itself", rank));
    std::string e = check_range(state_->ranks[rank], "buf", buf, count * dtype_size(dtype));
    Call c{Kind::p2p, buf, {}, count, dtype, CollectiveOp::sum, rank, true};
    return detail::Joiner::join(state_, fmt::format("p2p {}>{}", rank, peer), {rank, peer}, rank, c,
                                e);
}

Work Communicator::recv(unsigned rank, const BufferRange &buf, uint64_t count, DType dtype,
                        unsigned peer) {
    NEURON_CHECK_RANK(rank);
    NEURON_CHECK_RANK(peer);
    if (peer == rank)
        throw Error(errc::invalid_argument, fmt::format("recv: rank {} from itself", rank));
    std::string e = check_range(state_->ranks[rank], "buf", buf, count * dtype_size(dtype));
    Call c{Kind::p2p, {}, buf, count, dtype, CollectiveOp::sum, peer, false};
    return detail::Joiner::join(state_, fmt::format("p2p {}>{}", peer, rank), {peer, rank}, rank, c,
                                e);
}

Work Communicator::barrier(unsigned rank) {
    NEURON_CHECK_RANK(rank);
    Call c{};
    return detail::Joiner::join(state_, "all", all_ranks(size()), rank, c, {});
}

#undef NEURON_CHECK_RANK

// --- waiting --------------------------------------------------------------------

bool Work::issued() const {
    if (!round_)
        return false;
    std::lock_guard<std::mutex> g(round_->lock);
    return round_->issued;
}

std::vector<Fence> Work::fences() const {
    if (!round_)
        return {};
    std::lock_guard<std::mutex> g(round_->lock);
    return round_->issued ? round_->fences[round_->position(rank_)] : std::vector<Fence>{};
}

std::string Work::label() const {
    if (!round_)
        return "empty work";
    std::lock_guard<std::mutex> g(round_->lock);
    return fmt::format("{}, rank {} of {}", round_->what(), rank_, round_->comm_size);
}

bool Work::wait_for(std::chrono::nanoseconds timeout) const {
    if (!round_)
        throw Error(errc::invalid_argument, "waiting for an empty neuron::Work");
    Round &r = *round_;
    const auto now = detail::Clock::now();
    const auto deadline = r.first_call + r.timeout;
    const auto until = timeout >= deadline - now ? deadline : now + timeout;
    const bool caller_limit = until < deadline;
    std::vector<Fence> fences;
    {
        std::unique_lock<std::mutex> g(r.lock);
        r.cv.wait_until(g, until, [&] { return r.issued || !r.error.empty(); });
        if (!r.error.empty())
            throw Error(r.error_code, r.error);
        if (!r.issued) {
            if (caller_limit)
                return false;
            std::vector<unsigned> missing;
            for (size_t p = 0; p < r.calls.size(); p++)
                if (!r.calls[p])
                    missing.push_back(r.ranks[p]);
            if (missing.empty()) // every rank came; queuing the work took the time
                throw Error(errc::timeout,
                            fmt::format("{}: its work was still being queued after the timeout "
                                        "({} ms)",
                                        r.what(), r.timeout.count()));
            r.error =
                fmt::format("{}: rank{} {} did not take part within the timeout ({} ms)", r.what(),
                            missing.size() > 1 ? "s" : "", rank_list(missing), r.timeout.count());
            r.error_code = errc::timeout;
            g.unlock();
            r.cv.notify_all();
            throw Error(errc::timeout, r.error);
        }
        fences = r.fences[r.position(rank_)];
    }
    for (const auto &f : fences) {
        const auto left = until - detail::Clock::now();
        auto ec = f.try_wait(std::max(left, detail::Clock::duration(1)));
        if (ec == errc::timeout) {
            if (caller_limit)
                return false;
            throw Error(errc::timeout,
                        fmt::format("{}: rank {}: not complete within the timeout ({} ms): {}",
                                    r.what(), rank_, r.timeout.count(), f.message()));
        }
        if (ec)
            throw Error(ec, fmt::format("{}: rank {}: {}", r.what(), rank_, f.message()));
    }
    return true;
}

void Work::wait() const {
    (void)wait_for(std::chrono::nanoseconds::max());
}

} // namespace neuron
