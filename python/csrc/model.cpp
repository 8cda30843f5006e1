// SPDX-License-Identifier: MIT
#include "model.hpp"

#include "runtime/cores.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <span>
#include <sstream>

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include <neuron/compiler/compile.hpp>
#include <neuron/compiler/text.hpp>
#include <neuron/neuron.hpp>

namespace neuron::torch_bridge {

namespace fs = std::filesystem;
namespace nc = neuron::compiler;

namespace {

// A job that has not completed after this long is reported as hung; the
// driver's own job timeout (which resets the core) is shorter.
constexpr auto job_wait_limit = std::chrono::seconds(120);

// torch's Python names ("float32"), which users see.
std::string dtype_name(at::ScalarType t) {
    switch (t) {
    case at::kFloat:
        return "float32";
    case at::kBFloat16:
        return "bfloat16";
    case at::kHalf:
        return "float16";
    case at::kInt:
        return "int32";
    case at::kDouble:
        return "float64";
    case at::kLong:
        return "int64";
    default:
        return c10::toString(t);
    }
}

std::string shape_text(c10::IntArrayRef shape) {
    return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::vector<int64_t> torch_shape(const ArgumentInfo &a) {
    return {a.shape.begin(), a.shape.end()};
}

std::string type_text(const ArgumentInfo &a) {
    return fmt::format("{}{}", dtype_name(torch_dtype(a.dtype)), shape_text(torch_shape(a)));
}

std::string type_text(const at::Tensor &t) {
    return fmt::format("{}{}", dtype_name(t.scalar_type()), shape_text(t.sizes()));
}

// The graph of @p ir with the inputs named in @p weights turned into
// constants holding those tensors' values.
nc::Graph with_weights(const nc::Graph &parsed, const std::map<std::string, at::Tensor> &weights) {
    nc::Graph g = parsed;
    for (uint32_t i = 0; i < g.nodes().size(); i++) {
        const nc::Node &n = g.node(i);
        auto w = weights.find(n.name);
        if (n.op != nc::Op::input || w == weights.end())
            continue;
        const at::Tensor &t = w->second;
        TORCH_CHECK(t.sizes().vec() == n.type.shape, "neuron: weight '", n.name, "' is ",
                    shape_text(t.sizes()), ", the graph declares ", nc::to_string(n.type));
        at::Tensor f = t.detach().to(at::kCPU, at::kFloat).contiguous();
        std::span<const float> v(f.data_ptr<float>(), static_cast<size_t>(f.numel()));
        nc::ConstantInit init;
        init.values.assign(v.begin(), v.end());
        g.make_constant(i, std::move(init));
    }
    return g;
}

// Copies @p src to @p dst (the same size) in pieces of at most 1 KiB.
// glibc's memcpy moves a larger block with `rep movsb`, which TCG (the
// emulated CPU of the VM) runs four times slower than the vector loop
// glibc uses below its threshold: the 393 KB input of SimpleLLMBlock took
// 0.82 ms in one memcpy and 0.19 ms with the threshold raised past it
// (glibc.cpu.x86_rep_movsb_threshold; torch's copy_ took 0.73-0.81 ms).
// On the host the pieces cost about one memcpy (9.1 us against 7.8 us).
void copy_in_pieces(std::span<std::byte> dst, std::span<const std::byte> src) {
    TORCH_CHECK(dst.size() == src.size(), "neuron: copying ", src.size(), " bytes into ",
                dst.size());
    constexpr size_t piece = 1024;
    for (size_t o = 0; o < src.size(); o += piece)
        std::memcpy(dst.data() + o, src.data() + o, std::min(piece, src.size() - o));
}

// The host buffers of one output that calls return tensors over: a call
// takes a free one (else allocates one), and the tensor's deleter gives it
// back when torch frees the tensor, so a buffer is never bound by a job
// while a returned tensor still uses it.
class BufferPool {
  public:
    BufferPool(Device device, uint64_t size) : device_(std::move(device)), size_(size) {}

    Buffer take() {
        {
            std::lock_guard lock(mutex_);
            leased_++;
            if (!free_.empty()) {
                Buffer b = std::move(free_.back());
                free_.pop_back();
                return b;
            }
        }
        try {
            return device_.allocate(size_, Region::host);
        } catch (...) {
            std::lock_guard lock(mutex_);
            leased_--;
            throw;
        }
    }

    void give(Buffer b) noexcept {
        std::lock_guard lock(mutex_);
        leased_--;
        if (free_.size() < max_free) {
            try {
                free_.push_back(std::move(b));
            } catch (const std::bad_alloc &) { // b is released instead
            }
        }
    }

    /// Buffers taken and not given back.
    size_t leased() const {
        std::lock_guard lock(mutex_);
        return leased_;
    }

    /// Free buffers kept for later calls; the others are released.
    static constexpr size_t max_free = 4;

  private:
    mutable std::mutex mutex_;
    Device device_;
    uint64_t size_;
    std::vector<Buffer> free_;
    size_t leased_ = 0;
};

// A buffer taken from a pool, given back when the Lease goes: what a
// returned tensor's storage holds on to (its data is the buffer's mapping).
class Lease {
  public:
    explicit Lease(std::shared_ptr<BufferPool> pool)
        : pool_(std::move(pool)), buffer_(pool_->take()) {}
    ~Lease() { pool_->give(std::move(buffer_)); }
    Lease(const Lease &) = delete;
    Lease &operator=(const Lease &) = delete;

    const Buffer &buffer() const { return buffer_; }
    const BufferPool &pool() const { return *pool_; }

  private:
    std::shared_ptr<BufferPool> pool_;
    Buffer buffer_;
};

void give_back(void *context) noexcept {
    delete static_cast<Lease *>(context);
}

// The lease of a tensor that a call returned over a buffer of @p device,
// when @p t is all of that buffer's data in order (so that a job can bind
// the buffer in its place); else nullptr.
const Lease *lease_of(const at::Tensor &t, const Device &device) {
    if (!t.has_storage())
        return nullptr;
    const auto *lease = t.storage().data_ptr().cast_context<Lease>(&give_back);
    if (!lease || lease->buffer().device().fd() != device.fd() || !t.is_contiguous() ||
        t.data_ptr() != lease->buffer().map().data())
        return nullptr;
    return lease;
}

// Returned tensors a model's output may have over its buffers at once;
// past that, calls return copies, which bounds the pinned memory a caller
// keeping every result holds.
constexpr size_t max_leased = 16;

} // namespace

at::ScalarType torch_dtype(DType t) {
    switch (t) {
    case DType::fp32:
        return at::kFloat;
    case DType::bf16:
        return at::kBFloat16;
    case DType::fp16:
        return at::kHalf;
    case DType::int32:
        return at::kInt;
    case DType::u8: // 0 or 1: the masks of comparisons, torch's bool
        return at::kBool;
    }
    TORCH_CHECK(false, "neuron: unknown program dtype ", static_cast<int>(t));
}

struct Model::Runtime {
    Device device;
    unsigned core;
    LoadedProgram loaded;
    Queue queue;
    std::vector<Buffer> inputs; ///< in call order; reused by every call
    /// Per output, in call order: the pool of the buffers calls return
    /// tensors over (host memory), or else the one buffer every call reuses
    /// and copies out of (device memory).
    std::vector<std::shared_ptr<BufferPool>> output_pools;
    std::vector<Buffer> outputs;
    Arguments args;
};

Model::Model(Program program, std::vector<std::string> inputs, std::vector<std::string> outputs)
    : program_(std::move(program)), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
    for (const auto &n : inputs_)
        TORCH_CHECK(argument(n).direction == Direction::in, "neuron: program argument '", n,
                    "' is not an input");
    for (const auto &n : outputs_)
        TORCH_CHECK(argument(n).direction == Direction::out, "neuron: program argument '", n,
                    "' is not an output");
}

Model::~Model() = default;

const ArgumentInfo &Model::argument(const std::string &name) const {
    const ArgumentInfo *a = program_.find_argument(name);
    TORCH_CHECK(a, "neuron: program '", program_.name(), "' has no argument '", name, "'");
    return *a;
}

c10::intrusive_ptr<Model>
Model::compile(const c10::intrusive_ptr<Graph> &graph,
               const std::vector<std::string> &constant_names,
               const std::vector<at::Tensor> &constants, const std::vector<std::string> &inputs,
               const std::vector<std::string> &outputs, const std::string &workdir,
               const std::vector<std::string> &compiler_args) {
    nc::CompileOptions options;
    for (const auto &a : compiler_args) {
        TORCH_CHECK(a == "--no-fuse", "neuron compiler: unknown compiler argument '", a,
                    "' (supported: --no-fuse)");
        options.fuse = false;
    }
    TORCH_CHECK(constant_names.size() == constants.size(), "neuron: ", constant_names.size(),
                " weight names for ", constants.size(), " weights");
    std::map<std::string, at::Tensor> weights;
    for (size_t i = 0; i < constants.size(); i++)
        weights.emplace(constant_names[i], constants[i]);
    try {
        nc::Graph g = with_weights(graph->graph(), weights);
        nc::Compiled c = nc::compile(g, options);
        if (!workdir.empty()) {
            fs::create_directories(workdir);
            std::ofstream(fs::path(workdir) / "model.nir") << nc::print(g);
            c.program.save(fs::path(workdir) / "model.nprog");
            std::ofstream log(fs::path(workdir) / "compile.log");
            log << "graph " << g.name() << ": " << g.nodes().size() << " nodes, "
                << constants.size() << " weights\n";
            for (const auto &t : c.times)
                log << fmt::format("pass {:<8} {:8.2f} ms\n", t.pass, t.ms);
            log << c.plan;
            log << fmt::format("program: {} bytes\n", c.program.bytes().size());
        }
        return c10::make_intrusive<Model>(std::move(c.program), inputs, outputs);
    } catch (const nc::GraphError &e) {
        TORCH_CHECK(false, "neuron compiler: ", e.what());
    } catch (const Error &e) {
        TORCH_CHECK(false, "neuron compiler: ", e.what());
    }
}

std::vector<int64_t> visible_cores() {
    try {
        Device dev = open_device("models");
        std::vector<unsigned> cores = visible_cores_of(dev.info().num_cores);
        return {cores.begin(), cores.end()};
    } catch (const Error &e) {
        TORCH_CHECK(false, "neuron: ", e.what());
    }
}

void Model::bind_core(int64_t core) {
    std::lock_guard lock(mutex_);
    TORCH_CHECK(core >= 0, "neuron: core ", core, " is not a core index");
    TORCH_CHECK(!runtime_ || runtime_->core == static_cast<unsigned>(core), "neuron: model '",
                program_.name(), "' already runs on core ", runtime_ ? runtime_->core : 0,
                "; bind it to a core before its first call");
    core_ = static_cast<unsigned>(core);
}

Model::Runtime &Model::runtime() {
    if (runtime_)
        return *runtime_;
    std::optional<Device> dev = open_device("'" + program_.name() + "'");
    const unsigned num_cores = dev->info().num_cores;
    TORCH_CHECK(!core_ || *core_ < num_cores, "neuron: model '", program_.name(),
                "' is bound to core ", core_.value_or(0), ", the device has ", num_cores);
    const unsigned core = core_ ? *core_ : visible_cores_of(num_cores).front();
    // Host memory when jobs may bind it: the CPU reads results at full
    // speed there, and device memory is mapped write-combined.
    const Region region = dev->info().has(cap_host_bindings) || !dev->info().device_memory_size
                              ? Region::host
                              : Region::device;
    LoadedProgram loaded = dev->load(program_);
    Queue queue = dev->queue(core);
    auto rt = std::unique_ptr<Runtime>(
        new Runtime{*dev, core, std::move(loaded), std::move(queue), {}, {}, {}, {}});
    for (const auto &n : inputs_)
        rt->inputs.push_back(rt->device.allocate(argument(n).size, region));
    for (const auto &n : outputs_) {
        if (region == Region::host)
            rt->output_pools.push_back(std::make_shared<BufferPool>(rt->device, argument(n).size));
        else
            rt->outputs.push_back(rt->device.allocate(argument(n).size, region));
    }
    // Ranges point at the Buffers: bind once the vectors no longer grow.
    // Each call binds the inputs again (a returned tensor is bound in
    // place of a copy) and the outputs' pool buffers.
    for (size_t i = 0; i < rt->outputs.size(); i++)
        rt->args.bind(outputs_[i], rt->outputs[i].range(0, argument(outputs_[i]).size));
    runtime_ = std::move(rt);
    return *runtime_;
}

std::vector<at::Tensor> Model::forward(const std::vector<at::Tensor> &inputs) {
    TORCH_CHECK(inputs.size() == inputs_.size(), "neuron: model '", program_.name(), "' takes ",
                inputs_.size(), " input(s) (traced), got ", inputs.size());
    for (size_t i = 0; i < inputs.size(); i++) {
        const ArgumentInfo &a = argument(inputs_[i]);
        const at::Tensor &t = inputs[i];
        TORCH_CHECK(t.defined(), "neuron: input ", i, " ('", a.name, "') is undefined");
        TORCH_CHECK(t.device().is_cpu(), "neuron: input ", i, " ('", a.name, "') is on ",
                    t.device().str(), "; the model takes CPU tensors");
        TORCH_CHECK(t.scalar_type() == torch_dtype(a.dtype) && t.sizes().vec() == torch_shape(a),
                    "neuron: input ", i, " ('", a.name, "') of model '", program_.name(),
                    "': expected ", type_text(a), " (the traced type), got ", type_text(t));
    }
    using clock = std::chrono::steady_clock;
    auto ms = [](clock::time_point a, clock::time_point b) {
        return std::chrono::duration<double, std::milli>(b - a).count();
    };
    std::lock_guard lock(mutex_);
    try {
        Runtime &rt = runtime();
        const auto t0 = clock::now();
        for (size_t i = 0; i < inputs.size(); i++) {
            const uint64_t size = argument(inputs_[i]).size;
            // An output of an earlier call of this model (held by the
            // caller, so no call writes it) is bound as it is.
            if (const Lease *lease = lease_of(inputs[i], rt.device)) {
                rt.args.bind(inputs_[i], lease->buffer().range(0, size));
                continue;
            }
            // Else copied straight into the bound buffer: a strided input
            // by torch's copy (no contiguous() copy first).
            std::span<std::byte> dst = rt.inputs[i].map().first(size);
            const at::Tensor &t = inputs[i];
            if (t.is_contiguous())
                copy_in_pieces(dst,
                               std::span(static_cast<const std::byte *>(t.data_ptr()), t.nbytes()));
            else
                at::from_blob(dst.data(), t.sizes(), t.options()).copy_(t.detach());
            rt.args.bind(inputs_[i], rt.inputs[i].range(0, size));
        }
        std::vector<std::unique_ptr<Lease>> leases;
        for (size_t i = 0; i < rt.output_pools.size(); i++) {
            leases.push_back(std::make_unique<Lease>(rt.output_pools[i]));
            rt.args.bind(outputs_[i], leases[i]->buffer().range(0, argument(outputs_[i]).size));
        }
        const auto t1 = clock::now();
        Fence f = rt.queue.submit(rt.loaded, rt.args);
        TORCH_CHECK(f.wait_for(job_wait_limit), "neuron: ", f.label(), " did not complete in ",
                    job_wait_limit.count(), " s");
        const auto t2 = clock::now();
        std::vector<at::Tensor> out;
        for (size_t i = 0; i < outputs_.size(); i++) {
            const ArgumentInfo &a = argument(outputs_[i]);
            const auto options = at::TensorOptions().dtype(torch_dtype(a.dtype));
            if (i < leases.size() && leases[i]->pool().leased() <= max_leased) {
                // The tensor is the buffer's mapping; its deleter gives the
                // buffer back to the pool (it owns the lease from here on).
                void *data = leases[i]->buffer().map().data();
                out.push_back(at::for_blob(data, torch_shape(a))
                                  .context(leases[i].release(), &give_back)
                                  .options(options)
                                  .make_tensor());
                continue;
            }
            const Buffer &b = i < leases.size() ? leases[i]->buffer() : rt.outputs[i];
            at::Tensor t = at::empty(torch_shape(a), options);
            copy_in_pieces(std::span(static_cast<std::byte *>(t.data_ptr()), t.nbytes()),
                           b.map().first(t.nbytes()));
            out.push_back(std::move(t));
        }
        inputs_ms_ = ms(t0, t1);
        job_ms_ = ms(t1, t2);
        outputs_ms_ = ms(t2, clock::now());
        return out;
    } catch (const Error &e) {
        TORCH_CHECK(false, "neuron: running '", program_.name(), "': ", e.what());
    }
}

ModelState Model::state() const {
    std::span<const std::byte> b = program_.bytes();
    at::Tensor bytes = at::empty({static_cast<int64_t>(b.size())}, at::kByte);
    std::memcpy(bytes.data_ptr(), b.data(), b.size());
    return {model_state_version, bytes, inputs_, outputs_};
}

c10::intrusive_ptr<Model> Model::from_state(ModelState state) {
    auto &[version, bytes, inputs, outputs] = state;
    TORCH_CHECK(version == model_state_version, "neuron: saved model has state version ", version,
                ", this library reads version ", model_state_version);
    at::Tensor b = bytes.contiguous();
    TORCH_CHECK(b.scalar_type() == at::kByte && b.dim() == 1,
                "neuron: saved model's program is not a uint8 vector");
    try {
        Program p = Program::parse(std::span(static_cast<const std::byte *>(b.data_ptr()),
                                             static_cast<size_t>(b.numel())));
        return c10::make_intrusive<Model>(std::move(p), std::move(inputs), std::move(outputs));
    } catch (const Error &e) {
        TORCH_CHECK(false, "neuron: saved model's program is invalid: ", e.what());
    }
}

std::string Model::describe() const {
    std::vector<std::string> in, out;
    for (const auto &n : inputs_)
        in.push_back(n + " " + type_text(argument(n)));
    for (const auto &n : outputs_)
        out.push_back(n + " " + type_text(argument(n)));
    return fmt::format("{}: {} -> {}, program of {} bytes", program_.name(), fmt::join(in, ", "),
                       fmt::join(out, ", "), program_.bytes().size());
}

std::vector<double> Model::last_call_ms() const {
    std::lock_guard lock(mutex_);
    return {inputs_ms_, job_ms_, outputs_ms_};
}

std::string Model::placement() const {
    if (!runtime_)
        return "";
    return fmt::format("{} core {}", runtime_->device.path(), runtime_->core);
}

} // namespace neuron::torch_bridge
