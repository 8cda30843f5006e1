/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * neuron instruction set: the program image a NeuronCore executes and the
 * encoding of its instructions.
 *
 * A job's program image (read through a binding with NEURON_BIND_EXEC)
 * starts with struct neuron_prog_header, which locates one instruction
 * stream per engine (Tensor, Vector, Scalar, Sync). Every instruction is a
 * 64-byte struct neuron_insn. hw/isa.md is the prose reference: semantics,
 * validation order, fault statuses, numerics and the cycle cost model.
 *
 * All multi-byte fields are little endian. Every reserved field, every
 * unused operand and every flag bit not defined for an opcode must be zero,
 * else the instruction faults with NEURON_JOB_STATUS_DECODE.
 */
#ifndef NEURON_ISA_H
#define NEURON_ISA_H

#include <linux/types.h>
#ifdef __KERNEL__
#include <linux/build_bug.h>
#include <linux/stddef.h>
#else
#include <assert.h>
#include <stddef.h>
#endif

#define NEURON_ISA_VERSION_MAJOR	1
#define NEURON_ISA_VERSION_MINOR	2

/* On-core memories. SBUF bytes per core: NEURON_REG_SBUF_SIZE. */
#define NEURON_SBUF_DEFAULT_SIZE	(24u << 20) /* 192 KiB per partition */
#define NEURON_PSUM_SIZE		(2u << 20)  /* 16 KiB per partition */
#define NEURON_PSUM_BANK_SIZE		2048u	    /* per partition */
#define NEURON_PSUM_BANKS		8
#define NEURON_NUM_SEMAPHORES		16	    /* per core */
#define NEURON_NUM_LOOP_COUNTERS	8	    /* per engine stream */
/* Free-axis elements (count[0] * count[1]) of one operand, per partition. */
#define NEURON_MAX_FREE_ELEMS		65536u
#define NEURON_MM_MAX_K			128	    /* contraction: partitions */
#define NEURON_MM_MAX_M			128	    /* stationary free size */
#define NEURON_MM_MAX_N			512	    /* moving free size */

/*
 * Engines. Each has one instruction stream in the program image
 * (stream[NEURON_ENGINE_INDEX(engine)]); the ids are also the values of
 * neuron_cpl_entry.fault_engine, where 0 means "no engine" (a fault found
 * before any stream ran, e.g. in the program header).
 */
#define NEURON_ENGINE_NONE		0
#define NEURON_ENGINE_TENSOR		1 /* matmul, transpose */
#define NEURON_ENGINE_VECTOR		2 /* elementwise, reductions, iota */
#define NEURON_ENGINE_SCALAR		3 /* activation, elementwise */
#define NEURON_ENGINE_SYNC		4 /* DMA between bindings and SBUF */
#define NEURON_NUM_ENGINES		4
#define NEURON_ENGINE_INDEX(engine)	((engine) - 1)

/* ------------------------------------------------------------------------
 * Program image
 */

#define NEURON_PROG_MAGIC		0x4752504e /* "NPRG" in memory order */
#define NEURON_PROG_MAX_SIZE		(16u << 20)

/**
 * struct neuron_prog_stream - one engine's instruction stream
 * @offset: byte offset of the first instruction from the start of the
 *	image; a multiple of sizeof(struct neuron_insn), >= header_size
 * @count: instructions in the stream; 0 means the engine has nothing to do
 */
struct neuron_prog_stream {
	__le32 offset;
	__le32 count;
};

/**
 * struct neuron_prog_header - start of a program image
 * @magic: NEURON_PROG_MAGIC
 * @version_major: NEURON_ISA_VERSION_MAJOR
 * @version_minor: <= NEURON_ISA_VERSION_MINOR of the device
 * @header_size: sizeof(struct neuron_prog_header)
 * @image_size: bytes of the whole image, header included;
 *	<= the job's program_size and <= NEURON_PROG_MAX_SIZE
 * @stream: instruction streams, indexed by NEURON_ENGINE_INDEX()
 * @insn_limit: executed-instruction budget of the whole job (all streams,
 *	loop iterations included); 0 means no budget. Exceeding it ends the
 *	job with NEURON_JOB_STATUS_LIMIT.
 * @flags: must be zero
 * @reserved: must be zero
 *
 * Streams may share bytes (they are read-only).
 */
struct neuron_prog_header {
	__le32 magic;
	__le16 version_major;
	__le16 version_minor;
	__le32 header_size;
	__le32 image_size;
	struct neuron_prog_stream stream[NEURON_NUM_ENGINES];
	__le64 insn_limit;
	__le32 flags;
	__le32 reserved;
};

/*
 * neuron_cpl_entry.info of a NEURON_JOB_STATUS_BAD_PROGRAM completion:
 * which check of the header failed.
 */
#define NEURON_PROG_ERR_SIZE		1 /* program_size / image_size */
#define NEURON_PROG_ERR_MAGIC		2
#define NEURON_PROG_ERR_VERSION		3
#define NEURON_PROG_ERR_HEADER		4 /* header_size, flags, reserved */
#define NEURON_PROG_ERR_STREAM		5 /* a stream outside the image */

/* ------------------------------------------------------------------------
 * Operands
 */

/* Data types. The element size is NEURON_DT_SIZE(). */
#define NEURON_DT_INVALID		0
#define NEURON_DT_FP32			1
#define NEURON_DT_BF16			2
#define NEURON_DT_FP16			3
#define NEURON_DT_INT32			4
/* ISA 1.2: unsigned 8-bit integer (0..255): bool and uint8 tensors, masks. */
#define NEURON_DT_U8			5
#define NEURON_DT_COUNT			6
#define NEURON_DT_COUNT_1_1		5 /* data types of ISA 1.0 and 1.1: 1..4 */
#define NEURON_DT_SIZE(dt)		((dt) == NEURON_DT_U8 ? 1 : \
					 (dt) == NEURON_DT_BF16 || (dt) == NEURON_DT_FP16 ? 2 : 4)

/* Address spaces of an on-core operand. */
#define NEURON_SPACE_NONE		0 /* operand absent: all fields zero */
#define NEURON_SPACE_SBUF		1
#define NEURON_SPACE_PSUM		2

/**
 * struct neuron_tap - an access pattern into SBUF or PSUM
 * @space: NEURON_SPACE_*
 * @dtype: NEURON_DT_*
 * @part_start: first partition, 0..127
 * @part_count: partitions, 1..128; part_start + part_count <= 128
 * @offset: byte offset of element 0 inside each partition; a multiple of
 *	the element size
 * @count: free-axis counts, [0] inner, [1] outer; each >= 1, product
 *	<= NEURON_MAX_FREE_ELEMS
 * @stride: free-axis strides in elements, [0] inner, [1] outer; 0
 *	repeats an element (broadcast)
 *
 * Element (p, j1, j0) of the operand, for p < part_count, j1 < count[1],
 * j0 < count[0], is at byte offset + (j1 * stride[1] + j0 * stride[0]) *
 * size of partition part_start + p. Its linear free index is
 * j1 * count[0] + j0.
 */
struct neuron_tap {
	__u8 space;
	__u8 dtype;
	__u8 part_start;
	__u8 part_count;
	__le32 offset;
	__le16 count[2];
	__le16 stride[2];
};

/**
 * struct neuron_dram - the memory side of a DMA instruction
 * @slot: binding slot, < the job's num_bindings
 * @reserved: must be zero
 * @part_stride: bytes between the data of consecutive SBUF partitions
 * @offset: byte offset inside the binding
 * @stride: free-axis strides in bytes, [0] inner, [1] outer
 *
 * Element (p, j1, j0) (see struct neuron_tap) is at byte
 * offset + p * part_stride + j1 * stride[1] + j0 * stride[0] of the
 * binding. offset and all strides must be multiples of the element size.
 */
struct neuron_dram {
	__u8 slot;
	__u8 reserved[3];
	__le32 part_stride;
	__le64 offset;
	__le32 stride[2];
};

/* ------------------------------------------------------------------------
 * Instructions
 */

/**
 * struct neuron_insn - one instruction (64 bytes)
 * @opcode: NEURON_OP_*
 * @flags: per-opcode NEURON_*_F_* bits
 * @func: per opcode: ALU op, activation function, reduce op, semaphore id,
 *	loop counter
 * @func2: TENSOR_SCALAR: second ALU op (0: none); else zero
 * @arg: per opcode: semaphore value, notify value, loop target, iota base
 * @op: compute operands: op[0] destination, op[1] and op[2] sources
 * @dma: DMA operands (NEURON_OP_DMA_LOAD, NEURON_OP_DMA_STORE)
 * @imm: per-opcode immediates (fp32 bit patterns or integers)
 */
struct neuron_insn {
	__u8 opcode;
	__u8 flags;
	__u8 func;
	__u8 func2;
	__le32 arg;
	union {
		struct neuron_tap op[3];
		struct {
			struct neuron_tap sbuf;
			struct neuron_dram dram;
			__le32 reserved[2];
		} dma;
	};
	__le32 imm[2];
};

#define NEURON_INSN_DST			0
#define NEURON_INSN_SRC0		1
#define NEURON_INSN_SRC1		2
#define NEURON_INSN_OPERANDS		3

/*
 * Opcodes. The engines on which each may run are in brackets; any other
 * stream faults with NEURON_JOB_STATUS_DECODE. 0x00 is never valid, so a
 * zeroed stream faults instead of running.
 */
/* Control [all engines]. */
#define NEURON_OP_END			0x01 /* the stream is done */
#define NEURON_OP_NOP			0x02
#define NEURON_OP_NOTIFY		0x03 /* post a NOTIFY completion, info = arg */
#define NEURON_OP_SEM_SIGNAL		0x04 /* sem[func] += arg */
#define NEURON_OP_SEM_WAIT		0x05 /* block until sem[func] >= arg */
#define NEURON_OP_LOOP			0x06 /* counted backward branch */
/* DMA [Sync]. */
#define NEURON_OP_DMA_LOAD		0x10 /* binding -> SBUF */
#define NEURON_OP_DMA_STORE		0x11 /* SBUF -> binding */
/*
 * ISA 1.1: rows of a binding-held table -> SBUF. Partition p of dma.sbuf
 * receives row idx[p] (the int32 at SBUF byte imm[0] of partition
 * dma.sbuf.part_start + p), at dram.offset + idx[p] * dram.part_stride;
 * imm[1] = rows of the table: an index outside [0, imm[1]) faults.
 */
#define NEURON_OP_DMA_GATHER		0x12
/*
 * ISA 1.2: SBUF -> rows of a binding, added (scatter-add). Partition p of
 * dma.sbuf is added, element by element in fp32, into row idx[p] (indices
 * as DMA_GATHER's, imm[0] and imm[1] as DMA_GATHER's), partitions in
 * increasing p, so repeated indices accumulate in that order. FP32 and BF16.
 */
#define NEURON_OP_DMA_SCATTER_ADD	0x13
/* Tensor engine [Tensor]. */
#define NEURON_OP_MATMUL		0x20 /* PSUM[M,N] (+)= op1[K,M]^T op2[K,N] */
#define NEURON_OP_TRANSPOSE		0x21 /* dst[f, p] = src[p, f] */
/* Elementwise. */
#define NEURON_OP_ACTIVATE		0x30 /* [Scalar] f(x * scale + bias) */
#define NEURON_OP_TENSOR_TENSOR		0x31 /* [Vector] dst = a op b */
#define NEURON_OP_TENSOR_SCALAR		0x32 /* [Vector, Scalar] */
#define NEURON_OP_REDUCE		0x33 /* [Vector] along the free axis */
#define NEURON_OP_COPY			0x34 /* [Vector, Scalar] with conversion */
#define NEURON_OP_MEMSET		0x35 /* [Vector, Scalar] */
#define NEURON_OP_IOTA			0x36 /* [Vector] */
#define NEURON_OP_SELECT		0x37 /* [Vector] ISA 1.1: mask ? a : b */
/*
 * [Vector] ISA 1.2: Philox-4x32-10 random numbers. Element (p, j) of op[0]
 * is word n % 4 of philox(counter = {n / 4 (64 bit), offset}, key = seed),
 * n = arg + p * imm[0] + j; seed and offset are the four int32 of op[1]
 * (seed lo, seed hi, offset lo, offset hi). FP32 destination: the uniform
 * (word >> 8) * 2^-24 in [0, 1); INT32: the word's bits.
 */
#define NEURON_OP_RANDOM		0x38

/* SEM_WAIT flags. */
#define NEURON_SEM_F_DECREMENT		(1u << 0) /* then sem[func] -= arg */

/*
 * LOOP: func = loop counter (< NEURON_NUM_LOOP_COUNTERS), arg = target
 * instruction index (< the LOOP's own index), imm[0] = iterations of the
 * body [target, LOOP] (NEURON_LOOP_INFINITE: never falls through).
 */
#define NEURON_LOOP_INFINITE		0

/*
 * COPY flags. ISA 1.2: TRUNC converts to an INT32 or U8 destination by
 * rounding toward zero (then saturating, NaN giving 0) instead of to
 * nearest-even; float destinations are unaffected.
 */
#define NEURON_COPY_F_TRUNC		(1u << 0)

/*
 * TENSOR_TENSOR flags. ISA 1.2: INT32 computes in 32-bit two's complement
 * on INT32 operands (all three INT32, else NEURON_JOB_STATUS_DTYPE): add,
 * sub and mul wrap modulo 2^32, max and min, the comparisons give 1 or 0;
 * div faults with NEURON_JOB_STATUS_DECODE.
 */
#define NEURON_TT_F_INT32		(1u << 0)

/* MATMUL flags. */
#define NEURON_MM_F_ACCUMULATE		(1u << 0) /* add to PSUM, else overwrite */

/* ALU ops: TENSOR_TENSOR func, TENSOR_SCALAR func/func2. */
#define NEURON_ALU_NONE			0 /* TENSOR_SCALAR func2 only */
#define NEURON_ALU_ADD			1
#define NEURON_ALU_SUB			2
#define NEURON_ALU_MUL			3
#define NEURON_ALU_MAX			4
#define NEURON_ALU_MIN			5
#define NEURON_ALU_DIV			6
/* ISA 1.1: comparisons, 1.0 when true, else 0.0 (NaN: only NE is true). */
#define NEURON_ALU_IS_EQ		7
#define NEURON_ALU_IS_NE		8
#define NEURON_ALU_IS_LT		9
#define NEURON_ALU_IS_LE		10
#define NEURON_ALU_IS_GT		11
#define NEURON_ALU_IS_GE		12
#define NEURON_ALU_COUNT		13
#define NEURON_ALU_COUNT_1_0		7 /* ALU ops of ISA 1.0: 1..6 */

/* TENSOR_SCALAR flags: swap the operands of op0 / op1 (scalar op x). */
#define NEURON_TS_F_REVERSE0		(1u << 0)
#define NEURON_TS_F_REVERSE1		(1u << 1)
/*
 * ISA 1.2: integer arithmetic as NEURON_TT_F_INT32, on INT32 operands (the
 * per-partition scalar too); imm[0] and imm[1] are int32 scalars.
 */
#define NEURON_TS_F_INT32		(1u << 2)

/* Activation functions: ACTIVATE func. */
#define NEURON_ACT_IDENTITY		1
#define NEURON_ACT_RELU			2
#define NEURON_ACT_GELU_TANH		3 /* tanh approximation */
#define NEURON_ACT_GELU			4 /* exact, erf form */
#define NEURON_ACT_SIGMOID		5
#define NEURON_ACT_TANH			6
#define NEURON_ACT_EXP			7
#define NEURON_ACT_SILU			8
/* ISA 1.1. */
#define NEURON_ACT_RSQRT		9  /* 1 / sqrt(z) */
#define NEURON_ACT_RECIPROCAL		10 /* 1 / z */
/* ISA 1.2. */
#define NEURON_ACT_LN			11 /* natural logarithm */
#define NEURON_ACT_ERF			12 /* error function */
#define NEURON_ACT_SQRT			13 /* square root */
#define NEURON_ACT_ABS			14 /* |z| */
#define NEURON_ACT_COUNT		15
#define NEURON_ACT_COUNT_1_0		9  /* functions of ISA 1.0: 1..8 */
#define NEURON_ACT_COUNT_1_1		11 /* functions of ISA 1.1: 1..10 */

/*
 * SELECT flags. dst = op[1] != 0 ? op[2] : imm[0] (fp32); with KEEP the
 * false case keeps the destination's element (and imm[0] must be 0).
 */
#define NEURON_SEL_F_KEEP		(1u << 0)

/*
 * Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC11; Random123's philox4x32): the multipliers, the Weyl key
 * increments and the round count RANDOM uses.
 */
#define NEURON_PHILOX_M0		0xD2511F53u
#define NEURON_PHILOX_M1		0xCD9E8D57u
#define NEURON_PHILOX_W0		0x9E3779B9u
#define NEURON_PHILOX_W1		0xBB67AE85u
#define NEURON_PHILOX_ROUNDS		10
/* RANDOM's key operand: int32 [seed lo, seed hi, offset lo, offset hi]. */
#define NEURON_RANDOM_KEY_WORDS		4

/* Reductions: REDUCE func. */
#define NEURON_RED_SUM			1
#define NEURON_RED_MAX			2
#define NEURON_RED_MIN			3
#define NEURON_RED_COUNT		4

static_assert(sizeof(struct neuron_prog_stream) == 8, "stream layout");
static_assert(sizeof(struct neuron_prog_header) == 64, "program header layout");
static_assert(sizeof(struct neuron_tap) == 16, "SBUF/PSUM operand layout");
static_assert(sizeof(struct neuron_dram) == 24, "DRAM operand layout");
static_assert(sizeof(struct neuron_insn) == 64, "instruction layout");
static_assert(offsetof(struct neuron_insn, op) == 8, "instruction operands");
static_assert(offsetof(struct neuron_insn, dma.dram) == 24, "DMA operand");
static_assert(offsetof(struct neuron_insn, imm) == 56, "instruction immediates");
static_assert(NEURON_PSUM_BANK_SIZE * NEURON_PSUM_BANKS * 128 == NEURON_PSUM_SIZE,
	      "PSUM banks");

/*
 * The opcode table: the one description of each opcode's encoding, read by
 * the device model's decoder, libneuron's validator and its disassembler.
 * Semantics (function ranges, semaphores, loop targets, DMA bindings) are
 * checked by each opcode's own code; hw/isa.md, section 4, is the text.
 */

/* Header fields an opcode uses (neuron_opcode_info.uses); the others must be 0. */
#define NEURON_FIELD_FUNC		(1u << 0)
#define NEURON_FIELD_FUNC2		(1u << 1)
#define NEURON_FIELD_ARG		(1u << 2)
#define NEURON_FIELD_IMM0		(1u << 3)
#define NEURON_FIELD_IMM1		(1u << 4)

/* What an operand slot op[k] holds (neuron_opcode_info.operand[k]). */
#define NEURON_OPERAND_NONE		0 /* absent: all 16 bytes zero */
#define NEURON_OPERAND_SBUF		1
#define NEURON_OPERAND_PSUM		2
#define NEURON_OPERAND_ONCHIP		3 /* SBUF or PSUM */
#define NEURON_OPERAND_ONCHIP_OPT	4 /* SBUF, PSUM or absent */
#define NEURON_OPERAND_DRAM		5 /* op[1..2]: struct neuron_dram */

/**
 * struct neuron_opcode_info - the encoding of one opcode
 * @opcode: NEURON_OP_*
 * @flags: the flag bits the opcode defines; any other flag bit is invalid
 * @uses: NEURON_FIELD_* the opcode reads; the other header fields must be 0
 * @engines: bit NEURON_ENGINE_* of each engine that may run it
 * @operand: NEURON_OPERAND_* of op[0], op[1], op[2]
 * @name: lower-case mnemonic, as the disassembler prints it
 * @isa_minor: the NEURON_ISA_VERSION_MINOR that introduced the opcode
 *	(see neuron_insn_isa_minor() for functions added to older opcodes)
 */
struct neuron_opcode_info {
	__u8 opcode;
	__u8 flags;
	__u8 uses;
	__u8 engines;
	__u8 operand[3];
	const char *name;
	__u8 isa_minor;
};

#define NEURON_ENGINES_ALL	((1u << NEURON_ENGINE_TENSOR) | \
				 (1u << NEURON_ENGINE_VECTOR) | \
				 (1u << NEURON_ENGINE_SCALAR) | \
				 (1u << NEURON_ENGINE_SYNC))
#define NEURON_ENGINES_VS	((1u << NEURON_ENGINE_VECTOR) | \
				 (1u << NEURON_ENGINE_SCALAR))

/* The entry of opcode @op, or NULL for an unknown opcode. */
static inline const struct neuron_opcode_info *neuron_opcode_lookup(__u8 op)
{
	static const struct neuron_opcode_info table[] = {
		{NEURON_OP_END, 0,
		 0,
		 NEURON_ENGINES_ALL,
		 {NEURON_OPERAND_NONE, NEURON_OPERAND_NONE, NEURON_OPERAND_NONE},
		 "end", 0},
		{NEURON_OP_NOP, 0,
		 0,
		 NEURON_ENGINES_ALL,
		 {NEURON_OPERAND_NONE, NEURON_OPERAND_NONE, NEURON_OPERAND_NONE},
		 "nop", 0},
		{NEURON_OP_NOTIFY, 0,
		 NEURON_FIELD_ARG,
		 NEURON_ENGINES_ALL,
		 {NEURON_OPERAND_NONE, NEURON_OPERAND_NONE, NEURON_OPERAND_NONE},
		 "notify", 0},
		{NEURON_OP_SEM_SIGNAL, 0,
		 NEURON_FIELD_FUNC | NEURON_FIELD_ARG,
		 NEURON_ENGINES_ALL,
		 {NEURON_OPERAND_NONE, NEURON_OPERAND_NONE, NEURON_OPERAND_NONE},
		 "signal", 0},
		{NEURON_OP_SEM_WAIT, NEURON_SEM_F_DECREMENT,
		 NEURON_FIELD_FUNC | NEURON_FIELD_ARG,
		 NEURON_ENGINES_ALL,
		 {NEURON_OPERAND_NONE, NEURON_OPERAND_NONE, NEURON_OPERAND_NONE},
		 "wait", 0},
		{NEURON_OP_LOOP, 0,
		 NEURON_FIELD_FUNC | NEURON_FIELD_ARG | NEURON_FIELD_IMM0,
		 NEURON_ENGINES_ALL,
		 {NEURON_OPERAND_NONE, NEURON_OPERAND_NONE, NEURON_OPERAND_NONE},
		 "loop", 0},
		{NEURON_OP_DMA_LOAD, 0,
		 0,
		 (1u << NEURON_ENGINE_SYNC),
		 {NEURON_OPERAND_SBUF, NEURON_OPERAND_DRAM, NEURON_OPERAND_DRAM},
		 "dma_load", 0},
		{NEURON_OP_DMA_STORE, 0,
		 0,
		 (1u << NEURON_ENGINE_SYNC),
		 {NEURON_OPERAND_SBUF, NEURON_OPERAND_DRAM, NEURON_OPERAND_DRAM},
		 "dma_store", 0},
		{NEURON_OP_DMA_GATHER, 0,
		 NEURON_FIELD_IMM0 | NEURON_FIELD_IMM1,
		 (1u << NEURON_ENGINE_SYNC),
		 {NEURON_OPERAND_SBUF, NEURON_OPERAND_DRAM, NEURON_OPERAND_DRAM},
		 "dma_gather", 1},
		{NEURON_OP_DMA_SCATTER_ADD, 0,
		 NEURON_FIELD_IMM0 | NEURON_FIELD_IMM1,
		 (1u << NEURON_ENGINE_SYNC),
		 {NEURON_OPERAND_SBUF, NEURON_OPERAND_DRAM, NEURON_OPERAND_DRAM},
		 "dma_scatter_add", 2},
		{NEURON_OP_MATMUL, NEURON_MM_F_ACCUMULATE,
		 0,
		 (1u << NEURON_ENGINE_TENSOR),
		 {NEURON_OPERAND_PSUM, NEURON_OPERAND_SBUF, NEURON_OPERAND_SBUF},
		 "matmul", 0},
		{NEURON_OP_TRANSPOSE, 0,
		 0,
		 (1u << NEURON_ENGINE_TENSOR),
		 {NEURON_OPERAND_ONCHIP, NEURON_OPERAND_ONCHIP, NEURON_OPERAND_NONE},
		 "transpose", 0},
		{NEURON_OP_ACTIVATE, 0,
		 NEURON_FIELD_FUNC | NEURON_FIELD_IMM0 | NEURON_FIELD_IMM1,
		 (1u << NEURON_ENGINE_SCALAR),
		 {NEURON_OPERAND_ONCHIP, NEURON_OPERAND_ONCHIP, NEURON_OPERAND_ONCHIP_OPT},
		 "activate", 0},
		{NEURON_OP_TENSOR_TENSOR, NEURON_TT_F_INT32,
		 NEURON_FIELD_FUNC,
		 (1u << NEURON_ENGINE_VECTOR),
		 {NEURON_OPERAND_ONCHIP, NEURON_OPERAND_ONCHIP, NEURON_OPERAND_ONCHIP},
		 "tensor_tensor", 0},
		{NEURON_OP_TENSOR_SCALAR,
		 NEURON_TS_F_REVERSE0 | NEURON_TS_F_REVERSE1 | NEURON_TS_F_INT32,
		 NEURON_FIELD_FUNC | NEURON_FIELD_FUNC2 | NEURON_FIELD_IMM0 | NEURON_FIELD_IMM1,
		 NEURON_ENGINES_VS,
		 {NEURON_OPERAND_ONCHIP, NEURON_OPERAND_ONCHIP, NEURON_OPERAND_ONCHIP_OPT},
		 "tensor_scalar", 0},
		{NEURON_OP_REDUCE, 0,
		 NEURON_FIELD_FUNC,
		 (1u << NEURON_ENGINE_VECTOR),
		 {NEURON_OPERAND_ONCHIP, NEURON_OPERAND_ONCHIP, NEURON_OPERAND_NONE},
		 "reduce", 0},
		{NEURON_OP_COPY, NEURON_COPY_F_TRUNC,
		 0,
		 NEURON_ENGINES_VS,
		 {NEURON_OPERAND_ONCHIP, NEURON_OPERAND_ONCHIP, NEURON_OPERAND_NONE},
		 "copy", 0},
		{NEURON_OP_MEMSET, 0,
		 NEURON_FIELD_IMM0,
		 NEURON_ENGINES_VS,
		 {NEURON_OPERAND_ONCHIP, NEURON_OPERAND_NONE, NEURON_OPERAND_NONE},
		 "memset", 0},
		{NEURON_OP_IOTA, 0,
		 NEURON_FIELD_ARG | NEURON_FIELD_IMM0 | NEURON_FIELD_IMM1,
		 (1u << NEURON_ENGINE_VECTOR),
		 {NEURON_OPERAND_ONCHIP, NEURON_OPERAND_NONE, NEURON_OPERAND_NONE},
		 "iota", 0},
		{NEURON_OP_SELECT, NEURON_SEL_F_KEEP,
		 NEURON_FIELD_IMM0,
		 (1u << NEURON_ENGINE_VECTOR),
		 {NEURON_OPERAND_ONCHIP, NEURON_OPERAND_ONCHIP, NEURON_OPERAND_ONCHIP},
		 "select", 1},
		{NEURON_OP_RANDOM, 0,
		 NEURON_FIELD_ARG | NEURON_FIELD_IMM0,
		 (1u << NEURON_ENGINE_VECTOR),
		 {NEURON_OPERAND_ONCHIP, NEURON_OPERAND_ONCHIP, NEURON_OPERAND_NONE},
		 "random", 2},
		{0, 0, 0, 0, {0, 0, 0}, NULL, 0}, /* end of the table */
	};
	unsigned int i;

	for (i = 0; table[i].name; i++)
		if (table[i].opcode == op)
			return &table[i];
	return NULL;
}

/* The engines (bit NEURON_ENGINE_*) that may run opcode @op; 0 if unknown. */
static inline unsigned int neuron_opcode_engines(__u8 op)
{
	const struct neuron_opcode_info *info = neuron_opcode_lookup(op);

	return info ? info->engines : 0;
}

/* Whether @v is one of the values [@first, @end) that a revision added. */
static inline int neuron_isa_added(unsigned int v, unsigned int first, unsigned int end)
{
	return v >= first && v < end;
}

/*
 * The ISA minor version an instruction needs: its opcode's, or that of the
 * function (@func, @func2) it names when a later revision added it to an
 * older opcode. 0 for an unknown opcode or function (which no revision
 * decodes).
 */
static inline unsigned int neuron_insn_isa_minor(__u8 op, __u8 func, __u8 func2)
{
	const struct neuron_opcode_info *info = neuron_opcode_lookup(op);
	unsigned int minor = info ? info->isa_minor : 0;

	switch (op) {
	case NEURON_OP_ACTIVATE:
		if (neuron_isa_added(func, NEURON_ACT_COUNT_1_1, NEURON_ACT_COUNT) &&
		    minor < 2)
			minor = 2;
		else if (neuron_isa_added(func, NEURON_ACT_COUNT_1_0, NEURON_ACT_COUNT_1_1) &&
			 minor < 1)
			minor = 1;
		break;
	case NEURON_OP_TENSOR_TENSOR:
	case NEURON_OP_TENSOR_SCALAR:
		if ((neuron_isa_added(func, NEURON_ALU_COUNT_1_0, NEURON_ALU_COUNT) ||
		     neuron_isa_added(func2, NEURON_ALU_COUNT_1_0, NEURON_ALU_COUNT)) &&
		    minor < 1)
			minor = 1;
		break;
	default:
		break;
	}
	return minor;
}

/*
 * The ISA minor version an encoded instruction needs: that of its opcode
 * and functions (neuron_insn_isa_minor()), of the flag bits it sets and of
 * its operands' data types, when a later revision added them.
 */
static inline unsigned int neuron_insn_isa_minor_of(const struct neuron_insn *in)
{
	unsigned int minor = neuron_insn_isa_minor(in->opcode, in->func, in->func2);
	const struct neuron_opcode_info *info = neuron_opcode_lookup(in->opcode);
	unsigned int k;

	if (!info)
		return minor;
	if ((in->opcode == NEURON_OP_COPY && (in->flags & NEURON_COPY_F_TRUNC)) ||
	    (in->opcode == NEURON_OP_TENSOR_TENSOR && (in->flags & NEURON_TT_F_INT32)) ||
	    (in->opcode == NEURON_OP_TENSOR_SCALAR && (in->flags & NEURON_TS_F_INT32)))
		minor = minor < 2 ? 2 : minor;
	for (k = 0; k < NEURON_INSN_OPERANDS; k++) {
		if (info->operand[k] == NEURON_OPERAND_NONE ||
		    info->operand[k] == NEURON_OPERAND_DRAM)
			continue;
		if (in->op[k].dtype == NEURON_DT_U8)
			minor = minor < 2 ? 2 : minor;
	}
	return minor;
}

/*
 * Philox-4x32 with @rounds rounds (10 for RANDOM): the 4 words of the
 * counter @ctr under the key @key, into @out. Each round multiplies words 0
 * and 2 by M0 and M1 (64-bit products), mixes the high halves with the
 * other words and the key, and the key advances by the Weyl increments
 * between rounds. @out may be @ctr.
 */
static inline void neuron_philox4x32(const __u32 ctr[4], const __u32 key[2], unsigned int rounds,
				     __u32 out[4])
{
	__u32 x0 = ctr[0], x1 = ctr[1], x2 = ctr[2], x3 = ctr[3];
	__u32 k0 = key[0], k1 = key[1];
	const __u64 m0 = NEURON_PHILOX_M0, m1 = NEURON_PHILOX_M1;
	unsigned int r;

	for (r = 0; r < rounds; r++) {
		/* 64-bit products; the assignments below keep 32 bits. */
		__u64 p0 = m0 * x0;
		__u64 p1 = m1 * x2;
		__u32 hi0 = p0 >> 32, lo0 = p0 & 0xffffffffu;
		__u32 hi1 = p1 >> 32, lo1 = p1 & 0xffffffffu;

		x0 = hi1 ^ x1 ^ k0;
		x1 = lo1;
		x2 = hi0 ^ x3 ^ k1;
		x3 = lo0;
		k0 += NEURON_PHILOX_W0;
		k1 += NEURON_PHILOX_W1;
	}
	out[0] = x0;
	out[1] = x1;
	out[2] = x2;
	out[3] = x3;
}

/*
 * Word @n of RANDOM's stream for @seed and @offset (hw/isa.md, RANDOM):
 * word n % 4 of Philox-4x32-10 of the counter {n / 4, offset} (each 64
 * bits, low word first) under the key @seed.
 */
static inline __u32 neuron_random_word(__u64 seed, __u64 offset, __u64 n)
{
	__u64 q = n >> 2;
	__u32 ctr[4], key[2], out[4];

	ctr[0] = q & 0xffffffffu;
	ctr[1] = q >> 32;
	ctr[2] = offset & 0xffffffffu;
	ctr[3] = offset >> 32;
	key[0] = seed & 0xffffffffu;
	key[1] = seed >> 32;
	neuron_philox4x32(ctr, key, NEURON_PHILOX_ROUNDS, out);
	return out[n & 3];
}

/*
 * RANDOM's uniform value of a word, as an integer: (word >> 8), so that
 * the fp32 value is this times 2^-24 (exact), in [0, 1 - 2^-24].
 */
static inline __u32 neuron_random_uniform24(__u32 word)
{
	return word >> 8;
}

#endif /* NEURON_ISA_H */
