/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * neuron device interface: PCI identity, register map, queue and DMA rings,
 * job descriptors, binding tables and status codes.
 *
 * This header is the single definition shared by the kernel driver (kmod/),
 * the emulated device (emu/) and the userspace library. hw/README.md is the
 * prose datasheet for everything here. All multi-byte fields are little
 * endian; all registers are 32 bits wide and must be accessed with aligned
 * 32-bit reads and writes.
 */
#ifndef NEURON_REGS_H
#define NEURON_REGS_H

#include <linux/types.h>
#ifdef __KERNEL__
#include <linux/build_bug.h>
#else
#include <assert.h>
#endif

/* PCI identity. 0x7f00 is used by no real Neuron device. */
#define NEURON_PCI_VENDOR_ID		0x1d0f
#define NEURON_PCI_DEVICE_ID		0x7f00
#define NEURON_PCI_CLASS		0x120000 /* processing accelerator */
#define NEURON_PCI_REVISION		0x01

/* BARs (each 64-bit, so they occupy two BAR slots). */
#define NEURON_BAR_REGS			0 /* registers, NEURON_REGS_SIZE bytes */
#define NEURON_BAR_MSIX			2 /* MSI-X table and PBA */
#define NEURON_BAR_MEM			4 /* device memory, prefetchable */
#define NEURON_REGS_SIZE		0x10000

#define NEURON_MAGIC			0x4e524e31 /* "NRN1" */
#define NEURON_VERSION_MAJOR		1
#define NEURON_VERSION_MINOR		1 /* 1.1: job profiling, NEURON_REG_ISA_VERSION */
#define NEURON_VERSION_MAJOR_OF(v)	((v) >> 16)
#define NEURON_VERSION_MINOR_OF(v)	((v) & 0xffff)

#define NEURON_MAX_CORES		16
#define NEURON_MAX_DMA_ENGINES		8
#define NEURON_PARTITIONS		128
#define NEURON_MAX_BINDINGS		64
#define NEURON_RING_MIN_ENTRIES		2
#define NEURON_RING_MAX_ENTRIES		4096
/* Device-memory and host addresses used by the device must fit 48 bits. */
#define NEURON_ADDR_BITS		48

/*
 * Global registers. 64-bit values are split into _LO/_HI; reading _LO
 * latches the matching _HI so that the pair is read atomically.
 */
#define NEURON_REG_MAGIC		0x0000 /* RO */
#define NEURON_REG_VERSION		0x0004 /* RO: major << 16 | minor */
#define NEURON_REG_CAPS			0x0008 /* RO: NEURON_CAP_* */
#define NEURON_REG_NUM_CORES		0x000c /* RO */
#define NEURON_REG_NUM_DMA		0x0010 /* RO: DMA engines */
#define NEURON_REG_SBUF_SIZE		0x0014 /* RO: SBUF bytes per core */
#define NEURON_REG_PSUM_SIZE		0x0018 /* RO: PSUM bytes per core */
#define NEURON_REG_FW_VERSION		0x001c /* RO: major << 16 | minor */
#define NEURON_REG_MEM_SIZE_LO		0x0020 /* RO: device memory bytes */
#define NEURON_REG_MEM_SIZE_HI		0x0024
#define NEURON_REG_CLOCK_MHZ		0x0028 /* RO: core clock for cycles */
#define NEURON_REG_PARTITIONS		0x002c /* RO: SBUF/PSUM partitions */
/*
 * RO: the instruction set the cores implement, NEURON_ISA_VERSION_MAJOR << 16
 * | NEURON_ISA_VERSION_MINOR (hw/isa.md). Since interface version 1.1; a 1.0
 * device implements ISA 1.0.
 */
#define NEURON_REG_ISA_VERSION		0x0030

#define NEURON_REG_DEV_CTRL		0x0040 /* RW */
#define NEURON_REG_DEV_STATUS		0x0044 /* RO */
#define NEURON_REG_FATAL_CAUSE		0x0048 /* RO: NEURON_FATAL_* */
#define NEURON_REG_RESET_COUNT		0x004c /* RO: completed device resets */
#define NEURON_REG_IRQ_STATUS		0x0050 /* RW1C: NEURON_IRQ_* */
#define NEURON_REG_IRQ_MASK		0x0054 /* RW: 1 = masked */
#define NEURON_REG_SCRATCH		0x0060 /* RW, no side effects */
#define NEURON_REG_INJECT		0x0070 /* WO: NEURON_INJECT_* (testing) */

#define NEURON_CAP_FP32			(1u << 0)
#define NEURON_CAP_BF16			(1u << 1)
#define NEURON_CAP_FP16			(1u << 2)
#define NEURON_CAP_HOST_BINDINGS	(1u << 3) /* bindings may be host SG */
#define NEURON_CAP_CORE_RESET		(1u << 4)
#define NEURON_CAP_PROFILE		(1u << 5) /* NEURON_JOB_F_PROFILE */

/* DEV_CTRL: writing RESET starts a whole-device reset. */
#define NEURON_DEV_CTRL_RESET		(1u << 0)

#define NEURON_DEV_STATUS_READY		(1u << 0)
#define NEURON_DEV_STATUS_RESETTING	(1u << 1)
#define NEURON_DEV_STATUS_FATAL		(1u << 2)

#define NEURON_FATAL_NONE		0
#define NEURON_FATAL_INJECTED		1 /* NEURON_INJECT_FATAL */
#define NEURON_FATAL_INTERNAL		2 /* model invariant broken */

/* IRQ_STATUS/IRQ_MASK bits: one per interrupt cause. */
#define NEURON_IRQ_QUEUE(core)		(1u << (core))		/* 0..15 */
#define NEURON_IRQ_DMA(engine)		(1u << (16 + (engine)))	/* 16..23 */
#define NEURON_IRQ_ERROR		(1u << 31)

/* INJECT: make the device misbehave on purpose, for driver tests. */
#define NEURON_INJECT_FATAL		(1u << 0) /* enter the fatal state */

/*
 * MSI-X vectors: one per core queue, one per DMA engine, then one for
 * errors (queue halts and fatal errors).
 */
#define NEURON_MSIX_QUEUE(core)		(core)
#define NEURON_MSIX_DMA(ncores, e)	((ncores) + (e))
#define NEURON_MSIX_ERROR(ncores, ndma)	((ncores) + (ndma))
#define NEURON_MSIX_COUNT(ncores, ndma)	((ncores) + (ndma) + 1)

/*
 * Per-core job queue registers, at NEURON_QUEUE_BASE(core) + NEURON_Q_*.
 *
 * Ring indices (TAIL, HEAD, CPL_TAIL, CPL_HEAD) are free-running 32-bit
 * counters; the slot of index i is i % entries. A job ring is empty when
 * HEAD == TAIL and full when TAIL - HEAD == entries.
 */
#define NEURON_QUEUE_BASE(core)		(0x1000 + (core) * 0x100)
#define NEURON_Q_RING_LO		0x00 /* RW: job ring bus address */
#define NEURON_Q_RING_HI		0x04
#define NEURON_Q_RING_ENTRIES		0x08 /* RW: power of two */
#define NEURON_Q_CTRL			0x0c /* RW: NEURON_Q_CTRL_* */
#define NEURON_Q_TAIL			0x10 /* RW: doorbell, producer index */
#define NEURON_Q_HEAD			0x14 /* RO: jobs taken by the core */
#define NEURON_Q_CPL_LO			0x18 /* RW: completion ring address */
#define NEURON_Q_CPL_HI			0x1c
#define NEURON_Q_CPL_ENTRIES		0x20 /* RW: power of two */
#define NEURON_Q_CPL_TAIL		0x24 /* RO: entries written */
#define NEURON_Q_CPL_HEAD		0x28 /* RW: entries consumed */
#define NEURON_Q_STATUS			0x2c /* RO: NEURON_Q_STATUS_* */
#define NEURON_Q_ERROR			0x30 /* RO: NEURON_Q_ERR_* when halted */
#define NEURON_Q_CUR_JOB_LO		0x34 /* RO: job_id of the running job */
#define NEURON_Q_CUR_JOB_HI		0x38
/* Counters (RO, 64-bit, reset only by a device reset). */
#define NEURON_Q_CNT_BUSY_NS_LO		0x40
#define NEURON_Q_CNT_BUSY_NS_HI		0x44
#define NEURON_Q_CNT_INSTR_LO		0x48
#define NEURON_Q_CNT_INSTR_HI		0x4c
#define NEURON_Q_CNT_FLOPS_LO		0x50
#define NEURON_Q_CNT_FLOPS_HI		0x54
#define NEURON_Q_CNT_DMA_BYTES_LO	0x58
#define NEURON_Q_CNT_DMA_BYTES_HI	0x5c
#define NEURON_Q_CNT_JOBS_LO		0x60
#define NEURON_Q_CNT_JOBS_HI		0x64
#define NEURON_Q_CNT_FAULTS_LO		0x68
#define NEURON_Q_CNT_FAULTS_HI		0x6c

/*
 * Q_CTRL: ENABLE starts fetching jobs; ring addresses and sizes may only be
 * changed while disabled. RESET aborts the running job (its completion
 * carries NEURON_JOB_STATUS_ABORTED), discards queued jobs, clears all
 * indices and disables the queue; it reads back as set until done.
 */
#define NEURON_Q_CTRL_ENABLE		(1u << 0)
#define NEURON_Q_CTRL_RESET		(1u << 1)

#define NEURON_Q_STATUS_ENABLED		(1u << 0)
#define NEURON_Q_STATUS_BUSY		(1u << 1) /* a job is running */
#define NEURON_Q_STATUS_HALTED		(1u << 2) /* see Q_ERROR */
#define NEURON_Q_STATUS_RESETTING	(1u << 3)

/* Queue errors halt the queue until a core reset. */
#define NEURON_Q_ERR_NONE		0
#define NEURON_Q_ERR_RING_CONFIG	1 /* bad ring address or size */
#define NEURON_Q_ERR_RING_FETCH		2 /* job ring read failed */
#define NEURON_Q_ERR_CPL_WRITE		3 /* completion write failed */
#define NEURON_Q_ERR_TAIL		4 /* TAIL moved past HEAD + entries */

/**
 * struct neuron_job_desc - one entry of a core's job ring (host memory)
 * @bindings_addr: bus address of the job's binding table (host memory)
 * @num_bindings: entries in the binding table, 1..NEURON_MAX_BINDINGS
 * @flags: NEURON_JOB_F_*
 * @program_binding: binding slot that holds the program image
 * @program_size: bytes of the program image
 * @program_offset: byte offset of the program image in that binding
 * @job_id: opaque value echoed in the job's completion entries
 * @trace_binding: with NEURON_JOB_F_PROFILE, the binding slot that receives
 *	the job's trace (struct neuron_trace_header); else zero
 * @reserved32: must be zero
 * @reserved: must be zero
 *
 * The program image itself is read through the binding table, with
 * NEURON_BIND_EXEC rights, so the device never uses an address that the
 * binding table does not grant.
 */
struct neuron_job_desc {
	__le64 bindings_addr;
	__le32 num_bindings;
	__le32 flags;
	__le32 program_binding;
	__le32 program_size;
	__le64 program_offset;
	__le64 job_id;
	__le32 trace_binding;
	__le32 reserved32;
	__le64 reserved[2];
};

/* Raise the queue's MSI-X vector when the job completes. */
#define NEURON_JOB_F_IRQ		(1u << 0)
/* Record a trace of every instruction into slot trace_binding (CAP_PROFILE). */
#define NEURON_JOB_F_PROFILE		(1u << 1)
#define NEURON_JOB_F_ALL		(NEURON_JOB_F_IRQ | NEURON_JOB_F_PROFILE)

/**
 * struct neuron_binding - one slot of a job's binding table
 * @addr: device-memory offset, or with NEURON_BIND_HOST_SG the bus address
 *	of an array of @sg_count struct neuron_sg_entry (host memory)
 * @size: bytes the program may access, starting at offset 0 of the slot
 * @flags: NEURON_BIND_* access rights and address space
 * @sg_count: entries in the SG array (NEURON_BIND_HOST_SG only, else 0)
 * @reserved: must be zero
 *
 * Every access a program makes is (slot, offset, length); the device
 * checks slot < num_bindings, offset + length <= size and the rights
 * before it touches memory, and fails the job otherwise.
 */
struct neuron_binding {
	__le64 addr;
	__le64 size;
	__le32 flags;
	__le32 sg_count;
	__le64 reserved;
};

#define NEURON_BIND_READ		(1u << 0)
#define NEURON_BIND_WRITE		(1u << 1)
#define NEURON_BIND_EXEC		(1u << 2) /* may hold a program image */
#define NEURON_BIND_HOST_SG		(1u << 3) /* host memory via SG list */
#define NEURON_BIND_ALL			(NEURON_BIND_READ | NEURON_BIND_WRITE | \
					 NEURON_BIND_EXEC | NEURON_BIND_HOST_SG)

/**
 * struct neuron_sg_entry - one contiguous piece of a host-memory binding
 * @addr: bus address
 * @len: bytes, non-zero
 *
 * The pieces are concatenated in order; their lengths add up to at least
 * the binding's size.
 */
struct neuron_sg_entry {
	__le64 addr;
	__le64 len;
};

/**
 * struct neuron_cpl_entry - one entry of a core's completion ring
 * @job_id: the job's neuron_job_desc.job_id
 * @status: NEURON_JOB_STATUS_*
 * @info: status detail: the fault's instruction index, the binding slot of
 *	an access fault, or the notify value
 * @cycles: core cycles the job took, at NEURON_REG_CLOCK_MHZ
 * @flags: NEURON_CPL_F_*
 * @fault_engine: engine stream that faulted (NEURON_ENGINE_*), else 0
 * @reserved: zero
 *
 * A job posts zero or more NEURON_JOB_STATUS_NOTIFY entries and then
 * exactly one final entry (NEURON_CPL_F_FINAL).
 */
struct neuron_cpl_entry {
	__le64 job_id;
	__le32 status;
	__le32 info;
	__le64 cycles;
	__le16 flags;
	__le16 fault_engine;
	__le32 reserved;
};

/*
 * PHASE is 1 in entries written during the first pass over the ring, 0 in
 * the second, and so on, so a driver can find new entries without reading
 * CPL_TAIL.
 */
#define NEURON_CPL_F_PHASE		(1u << 0)
#define NEURON_CPL_F_FINAL		(1u << 1)

/*
 * Job status codes. 0x10..0x3f are faults raised by checks on the job or
 * its program; the core stays usable after any of them.
 */
#define NEURON_JOB_STATUS_OK			0x00
#define NEURON_JOB_STATUS_NOTIFY		0x01 /* not final */
#define NEURON_JOB_STATUS_ABORTED		0x02 /* core reset (Q_CTRL.RESET) */
#define NEURON_JOB_STATUS_BAD_DESC		0x10 /* job descriptor fields */
#define NEURON_JOB_STATUS_BAD_BINDING		0x11 /* binding table entry */
#define NEURON_JOB_STATUS_BAD_PROGRAM		0x12 /* program image header */
#define NEURON_JOB_STATUS_DECODE		0x13 /* unknown opcode/encoding */
#define NEURON_JOB_STATUS_BINDING_INDEX		0x14 /* slot >= num_bindings */
#define NEURON_JOB_STATUS_BINDING_RANGE		0x15 /* outside a binding */
#define NEURON_JOB_STATUS_BINDING_ACCESS	0x16 /* missing rights */
#define NEURON_JOB_STATUS_PARTITION		0x17 /* partition out of range */
#define NEURON_JOB_STATUS_SBUF_RANGE		0x18 /* SBUF overflow */
#define NEURON_JOB_STATUS_PSUM_RANGE		0x19 /* PSUM overflow */
#define NEURON_JOB_STATUS_DTYPE			0x1a /* bad or unsupported dtype */
#define NEURON_JOB_STATUS_ALIGN			0x1b /* unaligned operand */
#define NEURON_JOB_STATUS_SHAPE			0x1c /* operand shapes disagree */
#define NEURON_JOB_STATUS_SEMAPHORE		0x1d /* bad semaphore or deadlock */
#define NEURON_JOB_STATUS_HOST_DMA		0x1e /* host memory access failed */
#define NEURON_JOB_STATUS_LIMIT			0x1f /* instruction budget spent */

/*
 * The trace of a profiled job (NEURON_JOB_F_PROFILE), written by the device
 * into binding slot trace_binding, from offset 0: a header, then one record
 * per executed instruction in execution order. hw/README.md, section 4.8.
 */
#define NEURON_TRACE_MAGIC		0x4652504e /* "NPRF" in memory order */
#define NEURON_TRACE_VERSION_MAJOR	1
#define NEURON_TRACE_VERSION_MINOR	0

/* neuron_trace_header.flags */
#define NEURON_TRACE_F_TRUNCATED	(1u << 0) /* the slot filled up */
#define NEURON_TRACE_F_WRITE_ERROR	(1u << 1) /* a record could not be written */

/**
 * struct neuron_trace_header - start of a job's trace
 * @magic: NEURON_TRACE_MAGIC
 * @version_major: NEURON_TRACE_VERSION_MAJOR
 * @version_minor: NEURON_TRACE_VERSION_MINOR
 * @header_size: sizeof(struct neuron_trace_header)
 * @record_size: sizeof(struct neuron_trace_record)
 * @records: records written after the header
 * @instructions: instructions the job executed (records plus those not
 *	recorded after the slot filled up); the job's Q_CNT_INSTR share
 * @cycles: the job's cycles, as in its final completion entry
 * @dma_bytes: bytes the job's DMA instructions moved (Q_CNT_DMA_BYTES share)
 * @flags: NEURON_TRACE_F_*
 * @status: the job's final NEURON_JOB_STATUS_*
 * @sbuf_high: bytes per partition of SBUF the job wrote, from offset 0
 *	(the high-water mark of every write's end)
 * @psum_high: the same for PSUM
 */
struct neuron_trace_header {
	__le32 magic;
	__le16 version_major;
	__le16 version_minor;
	__le32 header_size;
	__le32 record_size;
	__le64 records;
	__le64 instructions;
	__le64 cycles;
	__le64 dma_bytes;
	__le32 flags;
	__le32 status;
	__le32 sbuf_high;
	__le32 psum_high;
};

/* neuron_trace_record.flags */
#define NEURON_TRACE_R_SIGNAL		(1u << 0) /* @signal is valid */

/**
 * struct neuron_trace_record - one executed instruction
 * @engine: NEURON_ENGINE_* of its stream
 * @opcode: NEURON_OP_*
 * @sem: SEM_SIGNAL and SEM_WAIT: the semaphore; else 0
 * @flags: NEURON_TRACE_R_*
 * @index: the instruction's index in its engine's stream
 * @start: the stream's cycle clock when the instruction started
 * @end: the stream's clock after it (hw/isa.md section 7)
 * @wait: SEM_WAIT: cycles the stream's clock moved to the signal that
 *	released it (hw/isa.md section 7), i.e. cycles spent waiting; else 0
 * @bytes: DMA_LOAD, DMA_STORE: bytes moved; else 0
 * @signal: SEM_WAIT with NEURON_TRACE_R_SIGNAL: the record number (its
 *	position in the trace, 0-based) of the SEM_SIGNAL whose time the wait
 *	took: the one that brought the count to the value waited for
 * @sbuf_high: neuron_trace_header.sbuf_high after this instruction
 * @psum_high: neuron_trace_header.psum_high after this instruction
 */
struct neuron_trace_record {
	__u8 engine;
	__u8 opcode;
	__u8 sem;
	__u8 flags;
	__le32 index;
	__le64 start;
	__le64 end;
	__le64 wait;
	__le32 bytes;
	__le32 signal;
	__le32 sbuf_high;
	__le32 psum_high;
};

/*
 * DMA engine registers, at NEURON_DMA_BASE(engine) + NEURON_DMA_*.
 * Indices behave as for job queues.
 */
#define NEURON_DMA_BASE(engine)		(0x4000 + (engine) * 0x100)
#define NEURON_DMA_RING_LO		0x00 /* RW: descriptor ring address */
#define NEURON_DMA_RING_HI		0x04
#define NEURON_DMA_RING_ENTRIES		0x08 /* RW: power of two */
#define NEURON_DMA_CTRL			0x0c /* RW: NEURON_DMA_CTRL_* */
#define NEURON_DMA_TAIL			0x10 /* RW: doorbell */
#define NEURON_DMA_HEAD			0x14 /* RO: descriptors completed */
#define NEURON_DMA_STATUS		0x18 /* RO: NEURON_DMA_STATUS_* */
#define NEURON_DMA_ERROR		0x1c /* RO: NEURON_Q_ERR_* when halted */
#define NEURON_DMA_CNT_BYTES_LO		0x40 /* RO counters */
#define NEURON_DMA_CNT_BYTES_HI		0x44
#define NEURON_DMA_CNT_DESCS_LO		0x48
#define NEURON_DMA_CNT_DESCS_HI		0x4c
#define NEURON_DMA_CNT_ERRORS_LO	0x50
#define NEURON_DMA_CNT_ERRORS_HI	0x54

#define NEURON_DMA_CTRL_ENABLE		(1u << 0)
#define NEURON_DMA_CTRL_RESET		(1u << 1)

#define NEURON_DMA_STATUS_ENABLED	(1u << 0)
#define NEURON_DMA_STATUS_BUSY		(1u << 1)
#define NEURON_DMA_STATUS_HALTED	(1u << 2)
#define NEURON_DMA_STATUS_RESETTING	(1u << 3)

/**
 * struct neuron_dma_desc - one entry of a DMA engine's descriptor ring
 * @src: source: device-memory offset, or bus address with
 *	NEURON_DMA_F_SRC_HOST
 * @dst: destination, likewise with NEURON_DMA_F_DST_HOST
 * @len: bytes to copy, 1..NEURON_DMA_MAX_LEN
 * @flags: NEURON_DMA_F_*
 * @cookie: opaque, for the driver
 * @status: written by the device when the descriptor is done:
 *	NEURON_DMA_DONE | NEURON_DMA_ERR_*
 *
 * Descriptors are processed in ring order; HEAD advances past a
 * descriptor only after its copy and its status write are complete.
 */
struct neuron_dma_desc {
	__le64 src;
	__le64 dst;
	__le32 len;
	__le32 flags;
	__le32 cookie;
	__le32 status;
};

#define NEURON_DMA_MAX_LEN		(1u << 30)
#define NEURON_DMA_F_SRC_HOST		(1u << 0)
#define NEURON_DMA_F_DST_HOST		(1u << 1)
#define NEURON_DMA_F_IRQ		(1u << 2) /* MSI-X when done */
#define NEURON_DMA_F_ALL		(NEURON_DMA_F_SRC_HOST | \
					 NEURON_DMA_F_DST_HOST | NEURON_DMA_F_IRQ)

#define NEURON_DMA_DONE			(1u << 31)
#define NEURON_DMA_ERR_MASK		0xff
#define NEURON_DMA_ERR_NONE		0
#define NEURON_DMA_ERR_LEN		1 /* zero or too long */
#define NEURON_DMA_ERR_FLAGS		2 /* unknown flag */
#define NEURON_DMA_ERR_SRC_RANGE	3 /* beyond device memory */
#define NEURON_DMA_ERR_DST_RANGE	4
#define NEURON_DMA_ERR_HOST		5 /* host access failed */
#define NEURON_DMA_ERR_ABORTED		6 /* engine reset (DMA_CTRL.RESET) */

static_assert(sizeof(struct neuron_job_desc) == 64, "job descriptor layout");
static_assert(sizeof(struct neuron_binding) == 32, "binding layout");
static_assert(sizeof(struct neuron_sg_entry) == 16, "SG entry layout");
static_assert(sizeof(struct neuron_cpl_entry) == 32, "completion layout");
static_assert(sizeof(struct neuron_dma_desc) == 32, "DMA descriptor layout");
static_assert(sizeof(struct neuron_trace_header) == 64, "trace header layout");
static_assert(sizeof(struct neuron_trace_record) == 48, "trace record layout");
static_assert(NEURON_QUEUE_BASE(NEURON_MAX_CORES) <= NEURON_DMA_BASE(0),
	      "queue blocks overlap DMA blocks");
static_assert(NEURON_DMA_BASE(NEURON_MAX_DMA_ENGINES) <= NEURON_REGS_SIZE,
	      "DMA blocks exceed the register BAR");

#endif /* NEURON_REGS_H */
