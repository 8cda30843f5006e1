// SPDX-License-Identifier: MIT
// The C API: thin wrappers that turn exceptions into neuron_status codes.
#include <cstdlib>
#include <cstring>
#include <new>

#include <neuron/neuron.h>
#include <neuron/neuron.hpp>

#include "internal.hpp"
#include "os.hpp"

struct neuron_device {
    neuron::Device dev;
};
struct neuron_buffer {
    neuron::Buffer buf;
};
struct neuron_fence {
    neuron::Fence fence;
};
struct neuron_pool {
    neuron::SubAllocator pool;
};
struct neuron_allocation {
    neuron::Allocation a;
};
struct neuron_program {
    neuron::Program p;
};
struct neuron_loaded_program {
    neuron::LoadedProgram lp;
};
struct neuron_queue {
    neuron::Queue q;
};
struct neuron_profile {
    neuron::Profile p;
};
struct neuron_comm {
    neuron::Communicator c;
};
struct neuron_work {
    neuron::Work w;
};

namespace {

thread_local std::string last_error;

neuron_status fail(neuron_status s, std::string msg) {
    last_error = std::move(msg);
    return s;
}

// The C function being run, for messages about its arguments.
thread_local const char *current_function = "";

template <typename F> neuron_status guard(const char *fn, F &&f) noexcept {
    current_function = fn;
    try {
        f();
        return NEURON_OK;
    } catch (const neuron::Error &e) {
        int v = e.code().category() == neuron::category() ? e.code().value() : NEURON_ERR_INTERNAL;
        return fail(static_cast<neuron_status>(v), e.what());
    } catch (const std::bad_alloc &) {
        return fail(NEURON_ERR_OUT_OF_HOST_MEMORY, "out of host memory");
    } catch (const std::exception &e) {
        return fail(NEURON_ERR_INTERNAL, std::string("internal error: ") + e.what());
    } catch (...) {
        return fail(NEURON_ERR_INTERNAL, "internal error");
    }
}

#define NEED(p)                                                                                    \
    do {                                                                                           \
        if (!(p))                                                                                  \
            throw neuron::Error(neuron::errc::invalid_argument,                                    \
                                std::string(current_function) + ": " #p " is NULL");               \
    } while (0)

void copy_str(char *dst, size_t cap, const std::string &s) {
    size_t n = std::min(cap - 1, s.size());
    std::memcpy(dst, s.data(), n);
    dst[n] = 0;
}

neuron::BufferRange range_of(const neuron_job_arg &a) {
    if (a.allocation) {
        auto r = a.allocation->a.range();
        return r;
    }
    if (!a.buffer)
        throw neuron::Error(neuron::errc::invalid_argument,
                            std::string("argument '") + (a.name ? a.name : "?") +
                                "': neither a buffer nor an allocation");
    return a.buffer->buf.range(a.offset, a.size);
}

std::vector<neuron::Fence> fences(const neuron_fence *const *deps, size_t n) {
    std::vector<neuron::Fence> v;
    if (n)
        NEED(deps);
    for (size_t i = 0; i < n; i++) {
        NEED(deps[i]);
        v.push_back(deps[i]->fence);
    }
    return v;
}

} // namespace

neuron_device *neuron::detail::c_device(Device dev) {
    return new neuron_device{std::move(dev)};
}

extern "C" {

const char *neuron_last_error(void) {
    return last_error.c_str();
}

const char *neuron_status_string(neuron_status status) {
    if (status == NEURON_OK)
        return "success";
    if (status == NEURON_ERR_INTERNAL)
        return "internal error";
    thread_local std::string s;
    s = neuron::category().message(status);
    return s.c_str();
}

const char *neuron_version(void) {
    return neuron::version();
}

void neuron_free(void *p) {
    std::free(p);
}

neuron_status neuron_enumerate(neuron_device_entry *entries, size_t capacity, size_t *count) {
    return guard(__func__, [&] {
        NEED(count);
        if (capacity)
            NEED(entries);
        auto devs = neuron::enumerate();
        *count = devs.size();
        for (size_t i = 0; i < devs.size() && i < capacity; i++) {
            neuron_device_entry &e = entries[i];
            std::memset(&e, 0, sizeof(e));
            e.index = devs[i].index;
            e.numa_node = devs[i].numa_node;
            e.vendor_id = devs[i].vendor_id;
            e.device_id = devs[i].device_id;
            copy_str(e.node, sizeof(e.node), devs[i].node);
            copy_str(e.pci_address, sizeof(e.pci_address), devs[i].pci_address);
        }
    });
}

neuron_status neuron_device_open(const char *spec, neuron_device **out) {
    return guard(__func__, [&] {
        NEED(out);
        *out = nullptr;
        *out = new neuron_device{neuron::Device::open(std::string_view(spec ? spec : ""))};
    });
}

void neuron_device_close(neuron_device *dev) {
    delete dev;
}

neuron_status neuron_device_get_info(const neuron_device *dev, neuron_device_info *out) {
    return guard(__func__, [&] {
        NEED(dev);
        NEED(out);
        const auto &i = dev->dev.info();
        std::memset(out, 0, sizeof(*out));
        out->vendor_id = i.vendor_id;
        out->device_id = i.device_id;
        out->revision = i.revision;
        out->num_cores = i.num_cores;
        out->num_dma_engines = i.num_dma_engines;
        out->device_memory_size = i.device_memory_size;
        out->sbuf_size = i.sbuf_size;
        out->psum_size = i.psum_size;
        out->partitions = i.partitions;
        out->hw_version = i.hw_version;
        out->fw_version = i.fw_version;
        out->api_version = i.api_version;
        out->capabilities = i.capabilities;
        out->core_clock_mhz = i.core_clock_mhz;
        out->max_bindings = i.max_bindings;
        copy_str(out->pci_address, sizeof(out->pci_address), i.pci_address);
    });
}

neuron_status neuron_device_isa_version(const neuron_device *dev, uint32_t *out) {
    return guard(__func__, [&] {
        NEED(dev);
        NEED(out);
        *out = dev->dev.info().isa_version;
    });
}

neuron_status neuron_device_memory_used(const neuron_device *dev, uint64_t *out) {
    return guard(__func__, [&] {
        NEED(dev);
        NEED(out);
        auto used = dev->dev.memory_used();
        if (!used)
            throw neuron::Error(neuron::errc::not_supported,
                                dev->dev.path() +
                                    ": device memory in use cannot be read (no memory_used "
                                    "in the driver's sysfs)");
        *out = *used;
    });
}

neuron_status neuron_buffer_create(neuron_device *dev, uint64_t size, neuron_region region,
                                   uint32_t flags, neuron_buffer **out) {
    return guard(__func__, [&] {
        NEED(dev);
        NEED(out);
        *out = nullptr;
        *out =
            new neuron_buffer{dev->dev.allocate(size, static_cast<neuron::Region>(region), flags)};
    });
}

void neuron_buffer_destroy(neuron_buffer *buf) {
    delete buf;
}

uint64_t neuron_buffer_size(const neuron_buffer *buf) {
    return buf && buf->buf ? buf->buf.size() : 0;
}

neuron_status neuron_buffer_map(const neuron_buffer *buf, void **ptr, uint64_t *size) {
    return guard(__func__, [&] {
        NEED(buf);
        NEED(ptr);
        auto m = buf->buf.map();
        *ptr = m.data();
        if (size)
            *size = m.size();
    });
}

neuron_status neuron_copy(neuron_device *dev, const neuron_buffer *dst, uint64_t dst_offset,
                          const neuron_buffer *src, uint64_t src_offset, uint64_t size,
                          const neuron_fence *const *deps, size_t num_deps, neuron_fence **out) {
    return guard(__func__, [&] {
        NEED(dev);
        NEED(dst);
        NEED(src);
        NEED(out);
        *out = nullptr;
        if (size == 0)
            throw neuron::Error(neuron::errc::invalid_argument, "neuron_copy: size is 0");
        auto f = dev->dev.copy(dst->buf.range(dst_offset, size), src->buf.range(src_offset, size),
                               fences(deps, num_deps));
        *out = new neuron_fence{std::move(f)};
    });
}

neuron_status neuron_fence_wait(const neuron_fence *fence, int64_t timeout_ns) {
    if (!fence)
        return fail(NEURON_ERR_INVALID_ARGUMENT, "neuron_fence_wait: fence is NULL");
    auto t =
        timeout_ns < 0 ? std::chrono::nanoseconds::max() : std::chrono::nanoseconds(timeout_ns);
    auto ec = fence->fence.try_wait(t);
    if (!ec)
        return NEURON_OK;
    return fail(static_cast<neuron_status>(ec.value()), fence->fence.message());
}

neuron_status neuron_fence_completed_at(const neuron_fence *fence, int64_t *ns) {
    return guard("neuron_fence_completed_at", [&] {
        NEED(fence);
        NEED(ns);
        auto at = fence->fence.completed_at();
        if (!at)
            throw neuron::Error(neuron::errc::timeout, fence->fence.label() + ": still running");
        *ns = std::chrono::duration_cast<std::chrono::nanoseconds>(at->time_since_epoch()).count();
    });
}

void neuron_fence_destroy(neuron_fence *fence) {
    delete fence;
}

neuron_status neuron_pool_create(neuron_device *dev, neuron_region region, uint64_t chunk_size,
                                 uint64_t min_alignment, neuron_pool **out) {
    return guard(__func__, [&] {
        NEED(dev);
        NEED(out);
        *out = nullptr;
        neuron::SubAllocatorOptions o;
        if (chunk_size)
            o.chunk_size = chunk_size;
        if (min_alignment)
            o.min_alignment = min_alignment;
        *out =
            new neuron_pool{neuron::SubAllocator(dev->dev, static_cast<neuron::Region>(region), o)};
    });
}

void neuron_pool_destroy(neuron_pool *pool) {
    delete pool;
}

neuron_status neuron_pool_alloc(neuron_pool *pool, uint64_t size, uint64_t alignment,
                                neuron_allocation **out) {
    return guard(__func__, [&] {
        NEED(pool);
        NEED(out);
        *out = nullptr;
        *out = new neuron_allocation{pool->pool.allocate(size, alignment)};
    });
}

void neuron_allocation_free(neuron_allocation *a) {
    delete a;
}

const neuron_buffer *neuron_allocation_buffer(const neuron_allocation *a, uint64_t *offset,
                                              uint64_t *size) {
    if (!a || !a->a)
        return nullptr;
    if (offset)
        *offset = a->a.offset();
    if (size)
        *size = a->a.size();
    // neuron_buffer is a standard-layout struct whose only member is the
    // neuron::Buffer, so the two are pointer-interconvertible.
    static_assert(std::is_standard_layout_v<neuron_buffer>);
    return reinterpret_cast<const neuron_buffer *>(a->a.buffer());
}

neuron_status neuron_pool_get_stats(const neuron_pool *pool, neuron_pool_stats *out) {
    return guard(__func__, [&] {
        NEED(pool);
        NEED(out);
        auto s = pool->pool.stats();
        out->bytes_in_use = s.bytes_in_use;
        out->peak_bytes_in_use = s.peak_bytes_in_use;
        out->allocations = s.allocations;
        out->total_allocations = s.total_allocations;
        out->chunks = s.chunks;
        out->chunk_bytes = s.chunk_bytes;
    });
}

neuron_status neuron_program_validate(const void *data, size_t size, uint64_t *bad_offset) {
    if (!data && size)
        return fail(NEURON_ERR_INVALID_ARGUMENT, "neuron_program_validate: data is NULL");
    auto err = neuron::validate({static_cast<const std::byte *>(data), size});
    if (!err)
        return NEURON_OK;
    if (bad_offset)
        *bad_offset = err->offset;
    return fail(NEURON_ERR_INVALID_PROGRAM, "invalid program container: " + err->to_string());
}

neuron_status neuron_program_parse(const void *data, size_t size, neuron_program **out) {
    return guard(__func__, [&] {
        NEED(out);
        *out = nullptr;
        if (size)
            NEED(data);
        *out = new neuron_program{
            neuron::Program::parse({static_cast<const std::byte *>(data), size})};
    });
}

neuron_status neuron_program_load_file(const char *path, neuron_program **out) {
    return guard(__func__, [&] {
        NEED(path);
        NEED(out);
        *out = nullptr;
        *out = new neuron_program{neuron::Program::load_file(path)};
    });
}

void neuron_program_destroy(neuron_program *p) {
    delete p;
}

const char *neuron_program_name(const neuron_program *p) {
    return p ? p->p.name().c_str() : "";
}

size_t neuron_program_num_args(const neuron_program *p) {
    return p ? p->p.arguments().size() : 0;
}

neuron_status neuron_program_arg(const neuron_program *p, size_t index, neuron_arg_info *out) {
    return guard(__func__, [&] {
        NEED(p);
        NEED(out);
        auto args = p->p.arguments();
        if (index >= args.size())
            throw neuron::Error(neuron::errc::invalid_argument,
                                fmt::format("program '{}' has {} arguments, not {}", p->p.name(),
                                            args.size(), index + 1));
        const auto &a = args[index];
        std::memset(out, 0, sizeof(*out));
        out->name = a.name.c_str();
        out->dtype = static_cast<neuron_dtype>(a.dtype);
        out->direction = static_cast<neuron_direction>(a.direction);
        out->rank = static_cast<uint32_t>(a.shape.size());
        for (size_t i = 0; i < a.shape.size() && i < 6; i++)
            out->shape[i] = a.shape[i];
        out->slot = a.slot;
        out->size = a.size;
    });
}

neuron_status neuron_program_disassemble(const neuron_program *p, char **text) {
    return guard(__func__, [&] {
        NEED(p);
        NEED(text);
        std::string s = neuron::disassemble(p->p);
        char *m = static_cast<char *>(std::malloc(s.size() + 1));
        if (!m)
            throw std::bad_alloc();
        std::memcpy(m, s.c_str(), s.size() + 1);
        *text = m;
    });
}

neuron_status neuron_program_upload(neuron_device *dev, const neuron_program *p,
                                    neuron_loaded_program **out) {
    return guard(__func__, [&] {
        NEED(dev);
        NEED(p);
        NEED(out);
        *out = nullptr;
        *out = new neuron_loaded_program{dev->dev.load(p->p)};
    });
}

void neuron_loaded_program_destroy(neuron_loaded_program *lp) {
    delete lp;
}

neuron_status neuron_queue_create(neuron_device *dev, uint32_t core, neuron_queue **out) {
    return guard(__func__, [&] {
        NEED(dev);
        NEED(out);
        *out = nullptr;
        *out = new neuron_queue{dev->dev.queue(core)};
    });
}

void neuron_queue_destroy(neuron_queue *q) {
    delete q;
}

namespace {

// A job's arguments from the C array (inside guard(), which names the call).
neuron::Arguments arguments_of(const neuron_job_arg *args, size_t num_args) {
    if (num_args)
        NEED(args);
    neuron::Arguments a;
    for (size_t i = 0; i < num_args; i++) {
        NEED(args[i].name);
        a.bind(args[i].name, range_of(args[i]));
    }
    return a;
}

} // namespace

neuron_status neuron_submit(neuron_queue *q, const neuron_loaded_program *lp,
                            const neuron_job_arg *args, size_t num_args,
                            const neuron_fence *const *deps, size_t num_deps, neuron_fence **out) {
    return guard(__func__, [&] {
        NEED(q);
        NEED(lp);
        NEED(out);
        *out = nullptr;
        neuron::Arguments a = arguments_of(args, num_args);
        *out = new neuron_fence{q->q.submit(lp->lp, a, fences(deps, num_deps))};
    });
}

neuron_status neuron_submit_batch(neuron_queue *q, const neuron_batch_job *jobs, size_t count,
                                  neuron_fence **out) {
    return guard(__func__, [&] {
        NEED(q);
        NEED(out);
        if (count)
            NEED(jobs);
        std::vector<neuron::Arguments> args(count);
        std::vector<neuron::Queue::Job> batch;
        batch.reserve(count);
        for (size_t i = 0; i < count; i++) {
            NEED(jobs[i].program);
            args[i] = arguments_of(jobs[i].args, jobs[i].num_args);
            batch.push_back({jobs[i].program->lp, args[i], fences(jobs[i].deps, jobs[i].num_deps)});
        }
        std::vector<std::unique_ptr<neuron_fence>> made;
        for (auto &f : q->q.submit(batch))
            made.push_back(std::make_unique<neuron_fence>(neuron_fence{std::move(f)}));
        for (size_t i = 0; i < count; i++)
            out[i] = made[i].release();
    });
}

neuron_status neuron_profile_create(neuron_device *dev, uint64_t max_records,
                                    neuron_profile **out) {
    return guard(__func__, [&] {
        NEED(dev);
        NEED(out);
        *out = nullptr;
        *out = new neuron_profile{neuron::Profile(
            dev->dev, max_records ? max_records : neuron::Profile::default_records)};
    });
}

void neuron_profile_destroy(neuron_profile *p) {
    delete p;
}

neuron_status neuron_submit_profiled(neuron_queue *q, const neuron_loaded_program *lp,
                                     const neuron_job_arg *args, size_t num_args,
                                     const neuron_fence *const *deps, size_t num_deps,
                                     neuron_profile *profile, neuron_fence **out) {
    return guard(__func__, [&] {
        NEED(q);
        NEED(lp);
        NEED(profile);
        NEED(out);
        *out = nullptr;
        neuron::Arguments a = arguments_of(args, num_args);
        *out = new neuron_fence{q->q.submit(lp->lp, a, profile->p, fences(deps, num_deps))};
    });
}

neuron_status neuron_profile_info(const neuron_profile *p, neuron_trace_info *out) {
    return guard(__func__, [&] {
        NEED(p);
        NEED(out);
        neuron::Trace t = p->p.read();
        *out = neuron_trace_info{};
        out->records = t.records.size();
        out->instructions = t.instructions;
        out->cycles = t.cycles;
        out->dma_bytes = t.dma_bytes;
        out->flags = t.flags;
        out->status = t.status;
        out->sbuf_high = t.sbuf_high;
        out->psum_high = t.psum_high;
    });
}

neuron_status neuron_profile_trace(const neuron_profile *p, void *buf, size_t cap, size_t *size) {
    return guard(__func__, [&] {
        NEED(p);
        NEED(size);
        auto bytes = p->p.bytes();
        (void)neuron::parse_trace(bytes);
        *size = bytes.size();
        if (cap < bytes.size())
            throw neuron::Error(neuron::errc::invalid_argument,
                                std::string(current_function) + ": the trace has " +
                                    std::to_string(bytes.size()) + " bytes, the buffer " +
                                    std::to_string(cap));
        NEED(buf);
        std::memcpy(buf, bytes.data(), bytes.size());
    });
}

neuron_status neuron_comm_create(neuron_device *const *devices, const uint32_t *cores,
                                 size_t nranks, int64_t timeout_ms, uint64_t chunk_bytes,
                                 neuron_comm **out) {
    return guard(__func__, [&] {
        NEED(out);
        if (nranks) {
            NEED(devices);
            NEED(cores);
        }
        std::vector<neuron::Rank> ranks;
        for (size_t i = 0; i < nranks; i++) {
            if (!devices[i])
                throw neuron::Error(neuron::errc::invalid_argument, "neuron_comm_create: devices[" +
                                                                        std::to_string(i) +
                                                                        "] is NULL");
            ranks.push_back({devices[i]->dev, cores[i]});
        }
        neuron::CommunicatorOptions o;
        if (timeout_ms)
            o.timeout = std::chrono::milliseconds(timeout_ms);
        if (chunk_bytes)
            o.chunk_bytes = chunk_bytes;
        *out = new neuron_comm{neuron::Communicator(std::move(ranks), o)};
    });
}

void neuron_comm_destroy(neuron_comm *comm) {
    delete comm;
}

neuron_status neuron_collective(neuron_comm *comm, const neuron_collective_args *a,
                                neuron_work **out) {
    return guard(__func__, [&] {
        NEED(comm);
        NEED(a);
        NEED(out);
        auto range = [](const neuron_buffer *b, uint64_t off) {
            return b ? b->buf.range(off) : neuron::BufferRange{};
        };
        const auto send = range(a->send, a->send_offset), recv = range(a->recv, a->recv_offset);
        const auto dt = static_cast<neuron::DType>(a->dtype);
        const auto op = static_cast<neuron::CollectiveOp>(a->op);
        neuron::Communicator &c = comm->c;
        neuron::Work w;
        switch (a->kind) {
        case NEURON_ALL_REDUCE:
            w = c.all_reduce(a->rank, send, recv, a->count, dt, op);
            break;
        case NEURON_BROADCAST:
            w = c.broadcast(a->rank, send, a->count, dt, a->root);
            break;
        case NEURON_REDUCE:
            w = c.reduce(a->rank, send, recv, a->count, dt, op, a->root);
            break;
        case NEURON_ALL_GATHER:
            w = c.all_gather(a->rank, send, recv, a->count, dt);
            break;
        case NEURON_REDUCE_SCATTER:
            w = c.reduce_scatter(a->rank, send, recv, a->count, dt, op);
            break;
        case NEURON_ALL_TO_ALL:
            w = c.all_to_all(a->rank, send, recv, a->count, dt);
            break;
        case NEURON_SEND:
            w = c.send(a->rank, send, a->count, dt, a->root);
            break;
        case NEURON_RECV:
            w = c.recv(a->rank, recv, a->count, dt, a->root);
            break;
        case NEURON_BARRIER:
            w = c.barrier(a->rank);
            break;
        default:
            throw neuron::Error(neuron::errc::invalid_argument,
                                "neuron_collective: unknown kind " +
                                    std::to_string(static_cast<int>(a->kind)));
        }
        *out = new neuron_work{std::move(w)};
    });
}

neuron_status neuron_work_wait(const neuron_work *work, int64_t timeout_ns) {
    bool done = false;
    neuron_status s = guard(__func__, [&] {
        NEED(work);
        done = timeout_ns < 0 ? (work->w.wait(), true)
                              : work->w.wait_for(std::chrono::nanoseconds(timeout_ns));
    });
    if (s == NEURON_OK && !done)
        return fail(NEURON_ERR_TIMEOUT, work->w.label() + ": not done within the wait's timeout");
    return s;
}

void neuron_work_destroy(neuron_work *work) {
    delete work;
}

} // extern "C"
