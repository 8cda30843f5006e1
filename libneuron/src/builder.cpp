// SPDX-License-Identifier: MIT
// The program builder.
#include <cstring>
#include <set>

#include <fmt/format.h>

#include <neuron/builder.hpp>

#include "format_internal.hpp"
#include "neuron_isa.h"
#include "neuron_regs.h"

namespace neuron {

using namespace detail;

static_assert(static_cast<int>(AluOp::div) == NEURON_ALU_DIV);
static_assert(static_cast<int>(Activation::silu) == NEURON_ACT_SILU);
static_assert(static_cast<int>(ReduceOp::min) == NEURON_RED_MIN);
static_assert(static_cast<int>(Space::psum) == NEURON_SPACE_PSUM);

namespace {

[[noreturn]] void invalid(const std::string &msg) {
    throw Error(errc::invalid_argument, msg);
}

uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

void put_tap(std::byte *insn, unsigned k, const Tap &t, const char *what) {
    auto w = std::span<std::byte>(insn, 64);
    size_t T = 8 + 16 * k;
    if (t.part_count == 0 || t.part_start + t.part_count > NEURON_PARTITIONS)
        invalid(fmt::format("{}: operand {} has partitions {}+{} (must lie in 0..127)", what, k,
                            t.part_start, t.part_count));
    for (int i = 0; i < 2; i++)
        if (t.count[i] == 0 || t.count[i] > 0xffff || t.stride[i] > 0xffff)
            invalid(fmt::format("{}: operand {}: count[{}] {} / stride[{}] {} do not fit the "
                                "encoding (count 1..65535, stride 0..65535)",
                                what, k, i, t.count[i], i, t.stride[i]));
    if (uint64_t{t.count[0]} * t.count[1] > NEURON_MAX_FREE_ELEMS)
        invalid(fmt::format("{}: operand {} has {}x{} free elements, more than {}", what, k,
                            t.count[0], t.count[1], NEURON_MAX_FREE_ELEMS));
    wr8(w, T, static_cast<uint8_t>(t.space));
    wr8(w, T + 1, static_cast<uint8_t>(t.dtype));
    wr8(w, T + 2, static_cast<uint8_t>(t.part_start));
    wr8(w, T + 3, static_cast<uint8_t>(t.part_count));
    wr32(w, T + 4, t.offset);
    wr16(w, T + 8, static_cast<uint16_t>(t.count[0]));
    wr16(w, T + 10, static_cast<uint16_t>(t.count[1]));
    wr16(w, T + 12, static_cast<uint16_t>(t.stride[0]));
    wr16(w, T + 14, static_cast<uint16_t>(t.stride[1]));
}

} // namespace

// --- taps --------------------------------------------------------------------------

Tap Tile::tap() const {
    return view(0, elems);
}

Tap Tile::view(uint32_t first, uint32_t count0, uint32_t stride0, uint32_t count1,
               uint32_t stride1) const {
    uint64_t last = first + (uint64_t{count1} - 1) * stride1 + (uint64_t{count0} - 1) * stride0;
    if (count0 == 0 || count1 == 0 || last >= elems)
        invalid(fmt::format("a view of element {} + {}x{} (strides {}, {}) does not fit a tile of "
                            "{} elements",
                            first, count1, count0, stride1, stride0, elems));
    Tap t;
    t.space = space;
    t.dtype = dtype;
    t.part_start = part_start;
    t.part_count = part_count;
    t.offset = offset + first * dtype_size(dtype);
    t.count = {count0, count1};
    t.stride = {stride0, stride1};
    return t;
}

Tile Tile::partitions(uint32_t start, uint32_t count) const {
    if (count == 0 || start + count > part_count)
        invalid(
            fmt::format("partitions {}+{} of a tile of {} partitions", start, count, part_count));
    Tile t = *this;
    t.part_start = part_start + start;
    t.part_count = count;
    return t;
}

Tile Tile::as(DType t) const {
    Tile r = *this;
    r.dtype = t;
    r.elems = elems * dtype_size(dtype) / dtype_size(t);
    return r;
}

DramRef ArgRef::at(uint64_t byte_offset, uint32_t part_stride, std::optional<uint32_t> stride0,
                   uint32_t stride1) const {
    if (byte_offset > size)
        invalid(fmt::format("offset {} is beyond the argument's {} bytes", byte_offset, size));
    DramRef r;
    r.slot = slot;
    r.offset = base + byte_offset;
    r.part_stride = part_stride;
    r.stride = {stride0.value_or(dtype_size(dtype)), stride1};
    return r;
}

// --- streams -----------------------------------------------------------------------

std::byte *StreamBuilder::emit(uint8_t opcode) {
    if ((code_.size() + 64) + 64 > NEURON_PROG_MAX_SIZE)
        invalid(fmt::format("the {} stream exceeds the device's program size limit",
                            to_string(engine_)));
    const uint32_t index = size();
    code_.resize(code_.size() + 64);
    std::byte *p = code_.data() + code_.size() - 64;
    p[0] = std::byte{opcode};
    // The instruction's origin: extend the last range, or start one.
    if (const std::string &o = owner_->origin(); !o.empty()) {
        if (!origins_.empty() && origins_.back().name == o &&
            origins_.back().first + origins_.back().count == index)
            origins_.back().count++;
        else
            origins_.push_back(OriginInfo{o, engine_, index, 1});
    }
    return p;
}

#define W(p) std::span<std::byte>(p, 64)

StreamBuilder &StreamBuilder::end() {
    emit(NEURON_OP_END);
    return *this;
}
StreamBuilder &StreamBuilder::nop() {
    emit(NEURON_OP_NOP);
    return *this;
}
StreamBuilder &StreamBuilder::notify(uint32_t value) {
    wr32(W(emit(NEURON_OP_NOTIFY)), 4, value);
    return *this;
}
StreamBuilder &StreamBuilder::signal(Semaphore s, uint32_t value) {
    if (s.id >= NEURON_NUM_SEMAPHORES)
        invalid(fmt::format("semaphore {} does not exist", s.id));
    auto p = W(emit(NEURON_OP_SEM_SIGNAL));
    wr8(p, 2, static_cast<uint8_t>(s.id));
    wr32(p, 4, value);
    return *this;
}
StreamBuilder &StreamBuilder::wait(Semaphore s, uint32_t value, bool decrement) {
    if (s.id >= NEURON_NUM_SEMAPHORES)
        invalid(fmt::format("semaphore {} does not exist", s.id));
    auto p = W(emit(NEURON_OP_SEM_WAIT));
    wr8(p, 1, decrement ? NEURON_SEM_F_DECREMENT : 0);
    wr8(p, 2, static_cast<uint8_t>(s.id));
    wr32(p, 4, value);
    return *this;
}
StreamBuilder &StreamBuilder::loop(Label target, uint32_t iterations, uint32_t counter) {
    if (target.index >= size())
        invalid(fmt::format("loop target {} is not before the loop at {}", target.index, size()));
    if (counter >= NEURON_NUM_LOOP_COUNTERS)
        invalid(fmt::format("loop counter {} does not exist (0..{})", counter,
                            NEURON_NUM_LOOP_COUNTERS - 1));
    auto p = W(emit(NEURON_OP_LOOP));
    wr8(p, 2, static_cast<uint8_t>(counter));
    wr32(p, 4, target.index);
    wr32(p, 56, iterations);
    return *this;
}

static void put_dram(std::span<std::byte> p, const DramRef &d) {
    if (d.slot > 0xff)
        invalid(fmt::format("binding slot {} does not fit the encoding", d.slot));
    wr8(p, 24, static_cast<uint8_t>(d.slot));
    wr32(p, 28, d.part_stride);
    wr64(p, 32, d.offset);
    wr32(p, 40, d.stride[0]);
    wr32(p, 44, d.stride[1]);
}

StreamBuilder &StreamBuilder::dma_load(const Tap &dst, const DramRef &src) {
    if (dst.space != Space::sbuf)
        invalid("dma_load: the destination must be in SBUF");
    auto p = W(emit(NEURON_OP_DMA_LOAD));
    put_tap(p.data(), 0, dst, "dma_load");
    put_dram(p, src);
    return *this;
}
StreamBuilder &StreamBuilder::dma_gather(const Tap &dst, const DramRef &table,
                                         uint32_t index_offset, uint32_t rows) {
    if (dst.space != Space::sbuf)
        invalid("dma_gather: the destination must be in SBUF");
    if (index_offset % 4)
        invalid(fmt::format("dma_gather: index offset {:#x} is not a multiple of 4", index_offset));
    auto p = W(emit(NEURON_OP_DMA_GATHER));
    put_tap(p.data(), 0, dst, "dma_gather");
    put_dram(p, table);
    wr32(p, 56, index_offset);
    wr32(p, 60, rows);
    return *this;
}
StreamBuilder &StreamBuilder::dma_scatter_add(const DramRef &table, const Tap &src,
                                              uint32_t index_offset, uint32_t rows) {
    if (src.space != Space::sbuf)
        invalid("dma_scatter_add: the source must be in SBUF");
    if (index_offset % 4)
        invalid(fmt::format("dma_scatter_add: index offset {:#x} is not a multiple of 4",
                            index_offset));
    auto p = W(emit(NEURON_OP_DMA_SCATTER_ADD));
    put_tap(p.data(), 0, src, "dma_scatter_add");
    put_dram(p, table);
    wr32(p, 56, index_offset);
    wr32(p, 60, rows);
    return *this;
}
StreamBuilder &StreamBuilder::dma_store(const DramRef &dst, const Tap &src) {
    if (src.space != Space::sbuf)
        invalid("dma_store: the source must be in SBUF");
    auto p = W(emit(NEURON_OP_DMA_STORE));
    put_tap(p.data(), 0, src, "dma_store");
    put_dram(p, dst);
    return *this;
}
StreamBuilder &StreamBuilder::matmul(const Tap &dst, const Tap &stationary, const Tap &moving,
                                     bool accumulate) {
    if (dst.space != Space::psum || stationary.space != Space::sbuf || moving.space != Space::sbuf)
        invalid("matmul: the destination must be in PSUM and both sources in SBUF");
    auto p = W(emit(NEURON_OP_MATMUL));
    wr8(p, 1, accumulate ? NEURON_MM_F_ACCUMULATE : 0);
    put_tap(p.data(), 0, dst, "matmul");
    put_tap(p.data(), 1, stationary, "matmul");
    put_tap(p.data(), 2, moving, "matmul");
    return *this;
}
StreamBuilder &StreamBuilder::transpose(const Tap &dst, const Tap &src) {
    auto p = W(emit(NEURON_OP_TRANSPOSE));
    put_tap(p.data(), 0, dst, "transpose");
    put_tap(p.data(), 1, src, "transpose");
    return *this;
}
StreamBuilder &StreamBuilder::activate(Activation fn, const Tap &dst, const Tap &src, float scale,
                                       float bias) {
    auto p = W(emit(NEURON_OP_ACTIVATE));
    wr8(p, 2, static_cast<uint8_t>(fn));
    put_tap(p.data(), 0, dst, "activate");
    put_tap(p.data(), 1, src, "activate");
    wr32(p, 56, f32_bits(scale));
    wr32(p, 60, f32_bits(bias));
    return *this;
}
StreamBuilder &StreamBuilder::activate(Activation fn, const Tap &dst, const Tap &src, float scale,
                                       const Tap &bias) {
    auto p = W(emit(NEURON_OP_ACTIVATE));
    wr8(p, 2, static_cast<uint8_t>(fn));
    put_tap(p.data(), 0, dst, "activate");
    put_tap(p.data(), 1, src, "activate");
    put_tap(p.data(), 2, bias, "activate");
    wr32(p, 56, f32_bits(scale));
    return *this;
}
StreamBuilder &StreamBuilder::tensor_tensor(AluOp op, const Tap &dst, const Tap &a, const Tap &b) {
    if (op == AluOp::none)
        invalid("tensor_tensor: an operation is required");
    auto p = W(emit(NEURON_OP_TENSOR_TENSOR));
    wr8(p, 2, static_cast<uint8_t>(op));
    put_tap(p.data(), 0, dst, "tensor_tensor");
    put_tap(p.data(), 1, a, "tensor_tensor");
    put_tap(p.data(), 2, b, "tensor_tensor");
    return *this;
}

StreamBuilder &StreamBuilder::tensor_tensor_int(AluOp op, const Tap &dst, const Tap &a,
                                                const Tap &b) {
    if (op == AluOp::div)
        invalid("tensor_tensor_int: there is no integer division");
    for (const Tap *t : {&dst, &a, &b})
        if (t->dtype != DType::int32)
            invalid(fmt::format("tensor_tensor_int: a {} operand (all must be int32)",
                                to_string(t->dtype)));
    tensor_tensor(op, dst, a, b);
    wr8(W(code_.data() + code_.size() - 64), 1, NEURON_TT_F_INT32);
    return *this;
}

static std::span<std::byte> ts_common(StreamBuilder &s, std::byte *raw, AluOp op0, AluOp op1,
                                      bool r0, bool r1) {
    (void)s;
    if (op0 == AluOp::none)
        invalid("tensor_scalar: the first operation is required");
    if (op1 == AluOp::none && r1)
        invalid("tensor_scalar: reverse1 without a second operation");
    auto p = W(raw);
    wr8(p, 1,
        static_cast<uint8_t>((r0 ? NEURON_TS_F_REVERSE0 : 0) | (r1 ? NEURON_TS_F_REVERSE1 : 0)));
    wr8(p, 2, static_cast<uint8_t>(op0));
    wr8(p, 3, static_cast<uint8_t>(op1));
    return p;
}

StreamBuilder &StreamBuilder::tensor_scalar(const Tap &dst, const Tap &src, AluOp op0, float s0,
                                            AluOp op1, float s1, bool reverse0, bool reverse1) {
    if (op0 == AluOp::none)
        invalid("tensor_scalar: the first operation is required");
    auto p = ts_common(*this, emit(NEURON_OP_TENSOR_SCALAR), op0, op1, reverse0, reverse1);
    put_tap(p.data(), 0, dst, "tensor_scalar");
    put_tap(p.data(), 1, src, "tensor_scalar");
    wr32(p, 56, f32_bits(s0));
    wr32(p, 60, op1 == AluOp::none ? 0 : f32_bits(s1));
    return *this;
}
StreamBuilder &StreamBuilder::tensor_scalar(const Tap &dst, const Tap &src, AluOp op0,
                                            const Tap &s0, AluOp op1, float s1, bool reverse0,
                                            bool reverse1) {
    if (op0 == AluOp::none)
        invalid("tensor_scalar: the first operation is required");
    auto p = ts_common(*this, emit(NEURON_OP_TENSOR_SCALAR), op0, op1, reverse0, reverse1);
    put_tap(p.data(), 0, dst, "tensor_scalar");
    put_tap(p.data(), 1, src, "tensor_scalar");
    put_tap(p.data(), 2, s0, "tensor_scalar");
    wr32(p, 60, op1 == AluOp::none ? 0 : f32_bits(s1));
    return *this;
}
StreamBuilder &StreamBuilder::tensor_scalar_int(const Tap &dst, const Tap &src, AluOp op0,
                                                int32_t s0, AluOp op1, int32_t s1, bool reverse0,
                                                bool reverse1) {
    if (op0 == AluOp::div || op1 == AluOp::div)
        invalid("tensor_scalar_int: there is no integer division");
    if (dst.dtype != DType::int32 || src.dtype != DType::int32)
        invalid("tensor_scalar_int: the operands must be int32");
    auto p = ts_common(*this, emit(NEURON_OP_TENSOR_SCALAR), op0, op1, reverse0, reverse1);
    wr8(p, 1, static_cast<uint8_t>(rd8(p, 1) | NEURON_TS_F_INT32));
    put_tap(p.data(), 0, dst, "tensor_scalar_int");
    put_tap(p.data(), 1, src, "tensor_scalar_int");
    wr32(p, 56, static_cast<uint32_t>(s0));
    wr32(p, 60, op1 == AluOp::none ? 0 : static_cast<uint32_t>(s1));
    return *this;
}
StreamBuilder &StreamBuilder::reduce(ReduceOp op, const Tap &dst, const Tap &src) {
    auto p = W(emit(NEURON_OP_REDUCE));
    wr8(p, 2, static_cast<uint8_t>(op));
    put_tap(p.data(), 0, dst, "reduce");
    put_tap(p.data(), 1, src, "reduce");
    return *this;
}
StreamBuilder &StreamBuilder::copy(const Tap &dst, const Tap &src) {
    auto p = W(emit(NEURON_OP_COPY));
    put_tap(p.data(), 0, dst, "copy");
    put_tap(p.data(), 1, src, "copy");
    return *this;
}
StreamBuilder &StreamBuilder::copy_trunc(const Tap &dst, const Tap &src) {
    copy(dst, src);
    wr8(W(code_.data() + code_.size() - 64), 1, NEURON_COPY_F_TRUNC);
    return *this;
}
StreamBuilder &StreamBuilder::memset(const Tap &dst, float value) {
    if (dst.dtype == DType::int32)
        invalid("memset: use memset_bits() for int32 operands");
    return memset_bits(dst, f32_bits(value));
}
StreamBuilder &StreamBuilder::memset_bits(const Tap &dst, uint32_t bits) {
    auto p = W(emit(NEURON_OP_MEMSET));
    put_tap(p.data(), 0, dst, "memset");
    wr32(p, 56, bits);
    return *this;
}
std::string mnemonic(Activation f) {
    return mnemonic(NEURON_OP_ACTIVATE, static_cast<uint8_t>(f));
}

unsigned isa_minor_of(Activation f) noexcept {
    return neuron_insn_isa_minor(NEURON_OP_ACTIVATE, static_cast<uint8_t>(f), 0);
}

std::string mnemonic_tensor_scalar(AluOp op) {
    return mnemonic(NEURON_OP_TENSOR_SCALAR, static_cast<uint8_t>(op));
}

unsigned isa_minor_of(AluOp op) noexcept {
    return neuron_insn_isa_minor(NEURON_OP_TENSOR_SCALAR, static_cast<uint8_t>(op), 0);
}

std::string mnemonic_select() {
    return mnemonic(NEURON_OP_SELECT);
}

unsigned isa_minor_of_select() noexcept {
    return neuron_insn_isa_minor(NEURON_OP_SELECT, 0, 0);
}

StreamBuilder &StreamBuilder::select(const Tap &dst, const Tap &mask, const Tap &on_true,
                                     float on_false) {
    auto p = W(emit(NEURON_OP_SELECT));
    put_tap(p.data(), 0, dst, "select");
    put_tap(p.data(), 1, mask, "select");
    put_tap(p.data(), 2, on_true, "select");
    uint32_t bits;
    std::memcpy(&bits, &on_false, 4);
    wr32(p, 56, bits);
    return *this;
}
StreamBuilder &StreamBuilder::select_keep(const Tap &dst, const Tap &mask, const Tap &on_true) {
    auto p = W(emit(NEURON_OP_SELECT));
    wr8(p, 1, NEURON_SEL_F_KEEP);
    put_tap(p.data(), 0, dst, "select");
    put_tap(p.data(), 1, mask, "select");
    put_tap(p.data(), 2, on_true, "select");
    return *this;
}
StreamBuilder &StreamBuilder::iota(const Tap &dst, int32_t base, int32_t partition_step,
                                   int32_t free_step) {
    auto p = W(emit(NEURON_OP_IOTA));
    put_tap(p.data(), 0, dst, "iota");
    wr32(p, 4, static_cast<uint32_t>(base));
    wr32(p, 56, static_cast<uint32_t>(partition_step));
    wr32(p, 60, static_cast<uint32_t>(free_step));
    return *this;
}
StreamBuilder &StreamBuilder::random(const Tap &dst, const Tap &key, uint32_t base,
                                     uint32_t partition_step) {
    auto p = W(emit(NEURON_OP_RANDOM));
    put_tap(p.data(), 0, dst, "random");
    put_tap(p.data(), 1, key, "random");
    wr32(p, 4, base);
    wr32(p, 56, partition_step);
    return *this;
}
StreamBuilder &StreamBuilder::raw(std::span<const std::byte, 64> insn) {
    std::byte *p = emit(static_cast<uint8_t>(insn[0]));
    std::memcpy(p, insn.data(), 64);
    return *this;
}

#undef W

// --- program -----------------------------------------------------------------------

struct ProgramBuilder::Impl {
    std::string name;
    std::vector<ArgumentInfo> args;
    std::vector<SymbolInfo> symbols;
    std::set<std::string> names, symbol_names;
    std::vector<std::byte> constants;
    uint32_t next_slot = 0;
    uint32_t const_slot = format::no_slot;
    uint32_t sbuf_next = 0, psum_next = 0, sem_next = 0;
    uint64_t insn_limit = 0;
    std::string origin; ///< of the instructions appended now (set_origin)
    std::vector<LiveRange> live;
    std::vector<std::unique_ptr<StreamBuilder>> streams;
};

ProgramBuilder::ProgramBuilder(std::string name, BuilderLimits limits)
    : impl_(std::make_unique<Impl>()), limits_(limits) {
    for (char c : name)
        if (c < 0x20 || c > 0x7e)
            invalid("program names are printable ASCII");
    impl_->name = std::move(name);
    for (unsigned e = 1; e <= num_engines; e++)
        impl_->streams.emplace_back(new StreamBuilder(static_cast<Engine>(e), this));
}

ProgramBuilder::~ProgramBuilder() = default;

static void check_name(const std::string &name, std::set<std::string> &names, const char *what) {
    if (name.empty())
        invalid(fmt::format("{} names must not be empty", what));
    for (char c : name)
        if (c < 0x20 || c > 0x7e)
            invalid(fmt::format("{} '{}': names are printable ASCII", what, name));
    if (!names.insert(name).second)
        invalid(fmt::format("{} '{}' is declared twice", what, name));
}

static uint64_t shape_bytes(const std::string &name, DType dtype,
                            const std::vector<uint32_t> &shape) {
    if (shape.empty() || shape.size() > format::max_rank)
        invalid(fmt::format("argument '{}': rank {} is outside 1..{}", name, shape.size(),
                            format::max_rank));
    uint64_t n = 1;
    for (uint32_t d : shape) {
        if (d == 0 || n > (1ull << 48) / d)
            invalid(fmt::format("argument '{}': bad shape", name));
        n *= d;
    }
    return n * dtype_size(dtype);
}

ArgRef ProgramBuilder::argument(const std::string &name, DType dtype, std::vector<uint32_t> shape,
                                Direction direction) {
    if (direction == Direction::constant)
        invalid(fmt::format("argument '{}': use constant() for constants", name));
    check_name(name, impl_->names, "argument");
    if (impl_->next_slot >= NEURON_MAX_BINDINGS - 1)
        invalid(fmt::format("argument '{}': too many binding slots", name));
    ArgumentInfo a;
    a.name = name;
    a.dtype = dtype;
    a.direction = direction;
    a.size = shape_bytes(name, dtype, shape);
    a.shape = std::move(shape);
    a.slot = impl_->next_slot++;
    impl_->args.push_back(a);
    return ArgRef{a.slot, 0, a.size, dtype};
}

ArgRef ProgramBuilder::constant(const std::string &name, DType dtype, std::vector<uint32_t> shape,
                                std::span<const std::byte> data) {
    check_name(name, impl_->names, "constant");
    uint64_t size = shape_bytes(name, dtype, shape);
    if (data.size() != size)
        invalid(fmt::format("constant '{}': {} bytes of data for a shape of {} bytes", name,
                            data.size(), size));
    if (impl_->const_slot == format::no_slot) {
        if (impl_->next_slot >= NEURON_MAX_BINDINGS - 1)
            invalid(fmt::format("constant '{}': too many binding slots", name));
        impl_->const_slot = impl_->next_slot++;
    }
    ArgumentInfo a;
    a.name = name;
    a.dtype = dtype;
    a.direction = Direction::constant;
    a.shape = std::move(shape);
    a.slot = impl_->const_slot;
    a.offset = align_up(impl_->constants.size(), 64);
    a.size = size;
    impl_->constants.resize(a.offset);
    impl_->constants.insert(impl_->constants.end(), data.begin(), data.end());
    impl_->args.push_back(a);
    return ArgRef{a.slot, a.offset, a.size, dtype};
}

ArgRef ProgramBuilder::constant(const std::string &name, std::vector<uint32_t> shape,
                                std::span<const float> data) {
    return constant(name, DType::fp32, std::move(shape), std::as_bytes(data));
}

Tile ProgramBuilder::sbuf(const std::string &name, DType dtype, uint32_t elems,
                          uint32_t partitions) {
    check_name(name, impl_->symbol_names, "SBUF allocation");
    uint64_t bytes = uint64_t{elems} * dtype_size(dtype);
    uint64_t off = align_up(impl_->sbuf_next, 64);
    if (elems == 0 || partitions == 0 || partitions > limits_.partitions ||
        off + bytes > limits_.sbuf_bytes)
        invalid(fmt::format("SBUF allocation '{}' of {} bytes x {} partitions does not fit: {} of "
                            "{} bytes per partition are in use",
                            name, bytes, partitions, impl_->sbuf_next, limits_.sbuf_bytes));
    impl_->sbuf_next = static_cast<uint32_t>(off + bytes);
    Tile t{Space::sbuf, dtype, 0, partitions, static_cast<uint32_t>(off), elems};
    impl_->symbols.push_back(SymbolInfo{name, format::symbol_sbuf, dtype, 0, partitions, t.offset,
                                        static_cast<uint32_t>(bytes)});
    return t;
}

Tile ProgramBuilder::psum(const std::string &name, DType dtype, uint32_t elems,
                          uint32_t partitions) {
    check_name(name, impl_->symbol_names, "PSUM allocation");
    uint64_t bytes = uint64_t{elems} * dtype_size(dtype);
    uint64_t off = align_up(impl_->psum_next, NEURON_PSUM_BANK_SIZE);
    if (elems == 0 || partitions == 0 || partitions > limits_.partitions ||
        off + bytes > limits_.psum_bytes)
        invalid(fmt::format("PSUM allocation '{}' of {} bytes x {} partitions does not fit: {} of "
                            "{} bytes per partition are in use",
                            name, bytes, partitions, impl_->psum_next, limits_.psum_bytes));
    impl_->psum_next = static_cast<uint32_t>(off + bytes);
    Tile t{Space::psum, dtype, 0, partitions, static_cast<uint32_t>(off), elems};
    impl_->symbols.push_back(SymbolInfo{name, format::symbol_psum, dtype, 0, partitions, t.offset,
                                        static_cast<uint32_t>(bytes)});
    return t;
}

Semaphore ProgramBuilder::semaphore(const std::string &name) {
    check_name(name, impl_->symbol_names, "semaphore");
    if (impl_->sem_next >= NEURON_NUM_SEMAPHORES)
        invalid(fmt::format("semaphore '{}': all {} semaphores are in use", name,
                            NEURON_NUM_SEMAPHORES));
    Semaphore s{impl_->sem_next++};
    impl_->symbols.push_back(
        SymbolInfo{name, format::symbol_semaphore, DType::fp32, 0, 0, s.id, 0});
    return s;
}

void ProgramBuilder::set_insn_limit(uint64_t limit) {
    impl_->insn_limit = limit;
}

void ProgramBuilder::set_origin(std::string name) {
    for (char c : name)
        if (c < 0x20 || c > 0x7e)
            invalid(fmt::format("origin '{}': names are printable ASCII", name));
    impl_->origin = std::move(name);
}

const std::string &ProgramBuilder::origin() const {
    return impl_->origin;
}

void ProgramBuilder::live_range(LiveRange r) {
    for (char c : r.name)
        if (c < 0x20 || c > 0x7e)
            invalid(fmt::format("live range '{}': names are printable ASCII", r.name));
    impl_->live.push_back(std::move(r));
}

StreamBuilder &ProgramBuilder::stream(Engine e) {
    unsigned i = static_cast<unsigned>(e) - 1;
    if (i >= num_engines)
        invalid(fmt::format("engine {} does not exist", i + 1));
    return *impl_->streams[i];
}

std::vector<std::byte> ProgramBuilder::build() const {
    ContainerContents c;
    c.name = impl_->name;
    c.insn_limit = impl_->insn_limit;
    c.num_slots = impl_->next_slot;
    c.args = impl_->args;
    c.symbols = impl_->symbols;
    c.constants = impl_->constants;
    c.live = impl_->live;
    if (!c.constants.empty() && c.constants.size() % 64)
        c.constants.resize(align_up(c.constants.size(), 64));
    // A stream must not run off its end: only END and an infinite LOOP
    // never fall through.
    auto ends_stream = [](std::span<const std::byte> insn) {
        const auto op = static_cast<uint8_t>(insn[0]);
        return op == NEURON_OP_END ||
               (op == NEURON_OP_LOOP && rd32(insn, 56) == NEURON_LOOP_INFINITE);
    };
    for (unsigned e = 0; e < num_engines; e++) {
        auto code = impl_->streams[e]->code_;
        if (!code.empty() && !ends_stream(std::span(code).last(64))) {
            code.resize(code.size() + 64);
            code[code.size() - 64] = std::byte{NEURON_OP_END};
        }
        c.streams[e] = std::move(code);
        const auto &o = impl_->streams[e]->origins_;
        c.origins.insert(c.origins.end(), o.begin(), o.end());
    }
    auto out = write_container(c);
    if (auto err = parse_container(out, nullptr))
        throw Error(errc::invalid_argument,
                    fmt::format("program '{}' is invalid: {}", impl_->name, err->to_string()));
    return out;
}

} // namespace neuron
