#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Device test of the emulated neuron device through QEMU's qtest protocol.

No guest kernel runs: this script plays the driver. It starts
qemu-system-x86_64 (q35, qtest accelerator) with the device, enables it
through PCI config space (ports 0xcf8/0xcfc), assigns the BARs, enables
memory decoding, bus mastering and MSI-X, and points every MSI-X vector at
a guest RAM word so that an interrupt becomes a memory write it can read.

Then: identity registers and PCI identity; D3hot and back to D0 through
the power management capability (the register BAR off in D3hot, the
registers kept); a DMA copy host -> device ->
host checked byte for byte (and its throughput); a job that runs a small
program (two engine streams synchronised by semaphores, a host SG binding,
a notify) and raises its MSI-X vector; a fault status; an error interrupt
for a bad ring; a core reset that aborts a running job; an injected fatal
error; a device reset. Last, a robustness run writes random values to
every register and submits random DMA descriptors, job descriptors and
programs, and checks that QEMU stays alive and responsive.

usage: neuron_qtest.py --qemu PATH [--firmware DIR] [--seed N]
                       [--iterations N] [--keep-going]
Exit status 0 when every check passed, 1 otherwise.
"""

import argparse
import base64
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import time

# ---- hw/neuron_regs.h ------------------------------------------------------

VENDOR_ID, DEVICE_ID = 0x1D0F, 0x7F00
MAGIC = 0x4E524E31
REGS_SIZE = 0x10000

REG_MAGIC, REG_VERSION, REG_CAPS = 0x00, 0x04, 0x08
REG_NUM_CORES, REG_NUM_DMA, REG_SBUF_SIZE, REG_PSUM_SIZE = 0x0C, 0x10, 0x14, 0x18
REG_FW_VERSION, REG_MEM_SIZE_LO, REG_MEM_SIZE_HI = 0x1C, 0x20, 0x24
REG_CLOCK_MHZ, REG_PARTITIONS, REG_ISA_VERSION = 0x28, 0x2C, 0x30
REG_DEV_CTRL, REG_DEV_STATUS, REG_FATAL_CAUSE, REG_RESET_COUNT = 0x40, 0x44, 0x48, 0x4C
REG_IRQ_STATUS, REG_IRQ_MASK, REG_SCRATCH, REG_INJECT = 0x50, 0x54, 0x60, 0x70

DEV_STATUS_READY, DEV_STATUS_RESETTING, DEV_STATUS_FATAL = 1, 2, 4
IRQ_ERROR = 1 << 31


def QUEUE(core):
    return 0x1000 + core * 0x100


def DMA(engine):
    return 0x4000 + engine * 0x100


Q_RING_LO, Q_RING_HI, Q_RING_ENTRIES, Q_CTRL, Q_TAIL, Q_HEAD = 0x00, 0x04, 0x08, 0x0C, 0x10, 0x14
Q_CPL_LO, Q_CPL_HI, Q_CPL_ENTRIES, Q_CPL_TAIL, Q_CPL_HEAD = 0x18, 0x1C, 0x20, 0x24, 0x28
Q_STATUS, Q_ERROR, Q_CUR_JOB_LO = 0x2C, 0x30, 0x34
Q_CNT_BUSY_NS_LO, Q_CNT_INSTR_LO, Q_CNT_FLOPS_LO = 0x40, 0x48, 0x50
Q_CNT_DMA_BYTES_LO, Q_CNT_JOBS_LO, Q_CNT_FAULTS_LO = 0x58, 0x60, 0x68
Q_CTRL_ENABLE, Q_CTRL_RESET = 1, 2
Q_STATUS_ENABLED, Q_STATUS_BUSY, Q_STATUS_HALTED = 1, 2, 4
Q_ERR_RING_CONFIG = 1

DMA_RING_LO, DMA_RING_HI, DMA_RING_ENTRIES, DMA_CTRL = 0x00, 0x04, 0x08, 0x0C
DMA_TAIL, DMA_HEAD, DMA_STATUS, DMA_ERROR = 0x10, 0x14, 0x18, 0x1C
DMA_CNT_BYTES_LO = 0x40
DMA_F_SRC_HOST, DMA_F_DST_HOST, DMA_F_IRQ = 1, 2, 4
DMA_DONE = 1 << 31
DMA_ERR_SRC_RANGE = 3

JOB_F_IRQ = 1
CPL_F_PHASE, CPL_F_FINAL = 1, 2
ST_OK, ST_NOTIFY, ST_ABORTED, ST_BINDING_RANGE = 0x00, 0x01, 0x02, 0x15
BIND_READ, BIND_WRITE, BIND_EXEC, BIND_HOST_SG = 1, 2, 4, 8
FATAL_INJECTED = 1

# ---- hw/neuron_isa.h -------------------------------------------------------

PROG_MAGIC = 0x4752504E
ENGINE_TENSOR, ENGINE_VECTOR, ENGINE_SCALAR, ENGINE_SYNC = 1, 2, 3, 4
OP_END, OP_NOP, OP_NOTIFY, OP_SEM_SIGNAL, OP_SEM_WAIT, OP_LOOP = 1, 2, 3, 4, 5, 6
OP_DMA_LOAD, OP_DMA_STORE, OP_TENSOR_SCALAR = 0x10, 0x11, 0x32
OPCODES = [1, 2, 3, 4, 5, 6, 0x10, 0x11, 0x20, 0x21, 0x30, 0x31, 0x32, 0x33, 0x34,
           0x35, 0x36]
SPACE_SBUF, DT_FP32, ALU_MUL = 1, 1, 3


def tap(space=0, dtype=0, part_start=0, part_count=0, offset=0, count=(0, 0),
        stride=(0, 0)):
    """struct neuron_tap (16 bytes)."""
    return struct.pack("<BBBBIHHHH", space, dtype, part_start, part_count, offset,
                       count[0], count[1], stride[0], stride[1])


def insn(opcode, flags=0, func=0, func2=0, arg=0, ops=b"", imm=(0, 0)):
    """struct neuron_insn (64 bytes): ops are the 48 operand bytes."""
    ops = ops.ljust(48, b"\0")
    return struct.pack("<BBBBI", opcode, flags, func, func2, arg) + ops + \
        struct.pack("<II", *imm)


def dma_insn(opcode, sbuf, slot, part_stride, offset, stride):
    dram = struct.pack("<B3xIQII", slot, part_stride, offset, stride[0], stride[1])
    return insn(opcode, ops=sbuf + dram + bytes(8))


def program(streams, insn_limit=0):
    """A program image: streams maps engine id -> list of instructions."""
    header_size = 64
    body = b""
    desc = []
    for engine in (ENGINE_TENSOR, ENGINE_VECTOR, ENGINE_SCALAR, ENGINE_SYNC):
        code = b"".join(streams.get(engine, []))
        desc.append((header_size + len(body) if code else 0, len(code) // 64))
        body += code
    image_size = header_size + len(body)
    hdr = struct.pack("<IHHII", PROG_MAGIC, 1, 0, header_size, image_size)
    for off, cnt in desc:
        hdr += struct.pack("<II", off, cnt)
    hdr += struct.pack("<QII", insn_limit, 0, 0)
    assert len(hdr) == 64
    return hdr + body


def f32(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


# ---- guest physical layout ---------------------------------------------------

BAR0 = 0xFE000000
BAR2 = 0xFE100000
BAR4 = 0xE0000000
MSI_BASE = 0x00100000   # vector v writes MSI_DATA + v to MSI_BASE + 4 * v
MSI_DATA = 0x4E000000
JOB_RING = 0x00200000
CPL_RING = 0x00210000
BIND_TAB = 0x00220000
DMA_RING = 0x00230000
SG_LIST = 0x00240000
OUT_BUF = 0x00250000
SRC_BUF = 0x01000000
DST_BUF = 0x02000000
RAM_SIZE = 256 << 20
DEV_MEM = 64 << 20
CORES, ENGINES = 2, 2


class QemuDied(Exception):
    pass


class QTest:
    """qemu-system-x86_64 driven through the qtest protocol on a unix socket."""

    def __init__(self, qemu, firmware, device_args, tmpdir, extra=()):
        path = os.path.join(tmpdir, "qtest.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(1)
        self.stderr = open(os.path.join(tmpdir, "qemu.stderr"), "w+")
        argv = [qemu, "-machine", "q35", "-accel", "qtest", "-qtest", f"unix:{path}",
                "-qtest-log", "none", "-display", "none", "-nodefaults", "-m", f"{RAM_SIZE >> 20}M",
                *extra, "-device", device_args]
        if firmware:
            argv[1:1] = ["-L", firmware]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.stderr)
        self.listener.settimeout(30)
        try:
            self.sock, _ = self.listener.accept()
        except socket.timeout:
            raise QemuDied("QEMU did not connect to the qtest socket: " + self.log())
        self.sock.settimeout(60)
        self.buf = b""
        self.commands = 0

    def log(self):
        self.stderr.flush()
        self.stderr.seek(0)
        return self.stderr.read().strip()

    def alive(self):
        return self.proc.poll() is None

    def cmd(self, line):
        self.commands += 1
        try:
            self.sock.sendall(line.encode() + b"\n")
            while True:
                while b"\n" not in self.buf:
                    data = self.sock.recv(1 << 20)
                    if not data:
                        raise QemuDied(f"QEMU closed the connection after {line[:60]!r}")
                    self.buf += data
                reply, self.buf = self.buf.split(b"\n", 1)
                reply = reply.decode()
                if reply.startswith("IRQ"):
                    continue
                words = reply.split()
                if not words or words[0] != "OK":
                    raise RuntimeError(f"{line[:60]!r} failed: {reply.strip()}")
                return words[1] if len(words) > 1 else None
        except (BrokenPipeError, ConnectionResetError, socket.timeout) as e:
            raise QemuDied(f"{e} after {line[:60]!r}")

    def readl(self, addr):
        return int(self.cmd(f"readl {addr:#x}"), 0)

    def writel(self, addr, val):
        self.cmd(f"writel {addr:#x} {val & 0xFFFFFFFF:#x}")

    def outl(self, port, val):
        self.cmd(f"outl {port:#x} {val:#x}")

    def inl(self, port):
        return int(self.cmd(f"inl {port:#x}"), 0)

    def write(self, addr, data):
        for off in range(0, len(data), 1 << 20):
            chunk = data[off:off + (1 << 20)]
            self.cmd(f"b64write {addr + off:#x} {len(chunk):#x} "
                     + base64.b64encode(chunk).decode())

    def read(self, addr, size):
        out = b""
        for off in range(0, size, 1 << 20):
            n = min(1 << 20, size - off)
            out += base64.b64decode(self.cmd(f"b64read {addr + off:#x} {n:#x}"))
        return out

    def close(self):
        """Stop QEMU as libqtest does (SIGTERM); returns its exit status."""
        try:
            self.sock.close()
        except OSError:
            pass
        if self.alive():
            self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.listener.close()
        return self.proc.returncode


class Pci:
    """Configuration mechanism #1 for one function on bus 0."""

    def __init__(self, qt, dev):
        self.qt, self.bdf = qt, dev << 11

    def read(self, reg):
        self.qt.outl(0xCF8, 0x80000000 | self.bdf | reg)
        return self.qt.inl(0xCFC)

    def write(self, reg, val):
        self.qt.outl(0xCF8, 0x80000000 | self.bdf | reg)
        self.qt.outl(0xCFC, val)

    def find_cap(self, cap_id):
        ptr = self.read(0x34) & 0xFC
        while ptr:
            v = self.read(ptr)
            if v & 0xFF == cap_id:
                return ptr
            ptr = (v >> 8) & 0xFC
        return None


class Report:
    def __init__(self, keep_going):
        self.failed = 0
        self.passed = 0
        self.keep_going = keep_going

    def check(self, cond, what):
        if cond:
            self.passed += 1
            print(f"ok   {what}")
        else:
            self.failed += 1
            print(f"FAIL {what}")
            if not self.keep_going:
                raise AssertionError(what)
        return cond


class Device:
    def __init__(self, qt, rep):
        self.qt, self.rep = qt, rep
        self.pci = None
        self.msix_table = None

    def reg(self, off):
        return self.qt.readl(BAR0 + off)

    def wreg(self, off, val):
        self.qt.writel(BAR0 + off, val)

    def reg64(self, lo):
        low = self.reg(lo)
        return low | self.reg(lo + 4) << 32

    def wait(self, off, mask, want, timeout=20.0):
        end = time.monotonic() + timeout
        while True:
            v = self.reg(off)
            if v & mask == want:
                return v
            if time.monotonic() > end:
                return v
            time.sleep(0.0005)

    # -- bring-up: what a driver's probe does --
    def probe(self):
        qt, rep = self.qt, self.rep
        for dev in range(32):
            p = Pci(qt, dev)
            if p.read(0) == (DEVICE_ID << 16) | VENDOR_ID:
                self.pci = p
                break
        rep.check(self.pci is not None, "PCI: device 1d0f:7f00 on bus 0")
        p = self.pci
        rep.check(p.read(0x08) >> 8 == 0x120000, "PCI: class 0x120000 (processing accelerator)")
        rep.check(p.read(0x08) & 0xFF == 0x01, "PCI: revision 1")
        p.write(0x10, BAR0)
        p.write(0x14, 0)
        p.write(0x18, BAR2)
        p.write(0x1C, 0)
        p.write(0x20, BAR4)
        p.write(0x24, 0)
        rep.check(p.read(0x20) & 0xF == 0xC, "PCI: BAR4 is 64-bit prefetchable")
        p.write(0x04, p.read(0x04) | 0x6)  # memory + bus master
        cap = p.find_cap(0x11)
        rep.check(cap is not None, "PCI: MSI-X capability present")
        ctrl = p.read(cap)
        nvec = ((ctrl >> 16) & 0x7FF) + 1
        rep.check(nvec == CORES + ENGINES + 1,
                  f"MSI-X: {nvec} vectors (a queue per core, one per DMA engine, error)")
        table = p.read(cap + 4)
        rep.check(table & 7 == 2, "MSI-X: table in BAR2")
        self.msix_table = BAR2 + (table & ~7)
        p.write(cap, (ctrl & 0xFFFF0000 & ~(1 << 30)) | (1 << 31))  # enable, unmask function
        for v in range(nvec):
            e = self.msix_table + 16 * v
            qt.writel(e + 0, MSI_BASE + 4 * v)
            qt.writel(e + 4, 0)
            qt.writel(e + 8, MSI_DATA + v)
            qt.writel(e + 12, 0)  # unmask
        self.nvec = nvec
        self.clear_msi()

    def clear_msi(self):
        self.qt.write(MSI_BASE, bytes(4 * 32))

    def msi_seen(self, v, timeout=10.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.qt.readl(MSI_BASE + 4 * v) == MSI_DATA + v:
                self.qt.writel(MSI_BASE + 4 * v, 0)
                return True
            time.sleep(0.0005)
        return False

    # -- rings --
    def setup_queue(self, core, entries=16, cpl_entries=16):
        b = QUEUE(core)
        self.qt.write(CPL_RING, bytes(32 * cpl_entries))
        self.wreg(b + Q_RING_LO, JOB_RING)
        self.wreg(b + Q_RING_HI, 0)
        self.wreg(b + Q_RING_ENTRIES, entries)
        self.wreg(b + Q_CPL_LO, CPL_RING)
        self.wreg(b + Q_CPL_HI, 0)
        self.wreg(b + Q_CPL_ENTRIES, cpl_entries)
        self.wreg(b + Q_CTRL, Q_CTRL_ENABLE)
        return self.reg(b + Q_STATUS)

    def setup_dma(self, engine, entries=16):
        b = DMA(engine)
        self.wreg(b + DMA_RING_LO, DMA_RING)
        self.wreg(b + DMA_RING_HI, 0)
        self.wreg(b + DMA_RING_ENTRIES, entries)
        self.wreg(b + DMA_CTRL, 1)

    def cpl(self, idx, entries=16):
        raw = self.qt.read(CPL_RING + 32 * (idx % entries), 32)
        job_id, status, info, cycles, flags, engine = struct.unpack("<QIIQHH4x", raw)
        return dict(job_id=job_id, status=status, info=info, cycles=cycles, flags=flags,
                    engine=engine)


def job_desc(bindings, nbind, prog_slot, prog_size, prog_off, job_id, flags=0):
    return struct.pack("<QIIIIQQ24x", bindings, nbind, flags, prog_slot, prog_size, prog_off,
                       job_id)


def binding(addr, size, flags, sg_count=0):
    return struct.pack("<QQII8x", addr, size, flags, sg_count)


def dma_desc(src, dst, length, flags, cookie=0):
    return struct.pack("<QQIIII", src, dst, length, flags, cookie, 0)


# ---- the tests -------------------------------------------------------------

def test_identity(d, rep):
    rep.check(d.reg(REG_MAGIC) == MAGIC, "MAGIC reads 0x4e524e31")
    rep.check(d.reg(REG_VERSION) == 0x00010001, "VERSION 1.1")
    rep.check(d.reg(REG_CAPS) & (1 << 5) != 0, "CAPS.PROFILE (bit 5)")
    rep.check(d.reg(REG_NUM_CORES) == CORES, f"NUM_CORES {CORES}")
    rep.check(d.reg(REG_NUM_DMA) == ENGINES, f"NUM_DMA {ENGINES}")
    rep.check(d.reg(REG_MEM_SIZE_LO) == DEV_MEM and d.reg(REG_MEM_SIZE_HI) == 0,
              f"MEM_SIZE {DEV_MEM >> 20} MiB")
    rep.check(d.reg(REG_SBUF_SIZE) == 24 << 20, "SBUF_SIZE 24 MiB")
    rep.check(d.reg(REG_PSUM_SIZE) == 2 << 20, "PSUM_SIZE 2 MiB")
    rep.check(d.reg(REG_PARTITIONS) == 128, "PARTITIONS 128")
    rep.check(d.reg(REG_ISA_VERSION) == 0x00010002, "ISA_VERSION 1.2")
    rep.check(d.reg(REG_CLOCK_MHZ) > 0, "CLOCK_MHZ non-zero")
    rep.check(d.reg(REG_DEV_STATUS) == DEV_STATUS_READY, "DEV_STATUS READY")
    rep.check(d.reg(REG_RESET_COUNT) == 0, "RESET_COUNT 0")
    d.wreg(REG_SCRATCH, 0x12345678)
    d.wreg(REG_MAGIC, 0)
    rep.check(d.reg(REG_SCRATCH) == 0x12345678 and d.reg(REG_MAGIC) == MAGIC,
              "SCRATCH is RW, MAGIC ignores writes")


def test_power_management(d, rep):
    """D3hot turns the register BAR off; back in D0 the registers are as
    they were (No_Soft_Reset)."""
    p = d.pci
    cap = p.find_cap(0x01)
    if not rep.check(cap is not None, "PCI: power management capability present"):
        return
    pmcsr = p.read(cap + 4) & 0xFFFF
    rep.check(pmcsr & 0x3 == 0, "PM: in D0")
    rep.check(pmcsr & 0x8 != 0, "PM: No_Soft_Reset set")
    d.wreg(REG_SCRATCH, 0xA5A5F00D)
    p.write(cap + 4, (pmcsr & ~0x3) | 0x3)
    rep.check(p.read(cap + 4) & 0x3 == 3, "PM: D3hot entered")
    rep.check(d.reg(REG_MAGIC) != MAGIC, "PM: register BAR not decoded in D3hot")
    p.write(cap + 4, pmcsr & ~0x3)
    rep.check(p.read(cap + 4) & 0x3 == 0, "PM: back in D0")
    rep.check(d.reg(REG_MAGIC) == MAGIC and d.reg(REG_SCRATCH) == 0xA5A5F00D,
              "PM: registers kept across D3hot")


def test_dma(d, rep, size):
    qt = d.qt
    data = random.Random(1).randbytes(size)
    qt.write(SRC_BUF, data)
    qt.write(DST_BUF, bytes(size))
    d.setup_dma(0)
    qt.write(DMA_RING, dma_desc(SRC_BUF, 0x100000, size, DMA_F_SRC_HOST, 1)
             + dma_desc(0x100000, DST_BUF, size, DMA_F_DST_HOST | DMA_F_IRQ, 2))
    t0 = time.monotonic()
    d.wreg(DMA(0) + DMA_TAIL, 2)
    head = d.wait(DMA(0) + DMA_HEAD, 0xFFFFFFFF, 2)
    dt = time.monotonic() - t0
    rep.check(head == 2, "DMA: HEAD advanced past both descriptors")
    st = struct.unpack("<28xI28xI", qt.read(DMA_RING, 64))
    rep.check(st == (DMA_DONE, DMA_DONE), "DMA: both descriptors written back DONE")
    rep.check(qt.read(BAR4 + 0x100000, size) == data, "DMA: device memory (via BAR4) matches")
    rep.check(qt.read(DST_BUF, size) == data,
              f"DMA: {size >> 20} MiB host -> device -> host, byte for byte")
    rep.check(d.msi_seen(CORES + 0), "DMA: MSI-X vector of engine 0 written")
    rep.check(d.reg64(DMA(0) + DMA_CNT_BYTES_LO) == 2 * size, "DMA: CNT_BYTES counts both")
    mbs = 2 * size / dt / 1e6
    print(f"     DMA throughput: {2 * size >> 20} MiB in {dt * 1000:.1f} ms = {mbs:.0f} MB/s "
          "(doorbell to HEAD, polled over qtest)")
    # A range error is a per-descriptor status, not a halt.
    qt.write(DMA_RING + 64, dma_desc(DEV_MEM - 4, 0, 8, 0))
    d.wreg(DMA(0) + DMA_TAIL, 3)
    d.wait(DMA(0) + DMA_HEAD, 0xFFFFFFFF, 3)
    st = struct.unpack("<I", qt.read(DMA_RING + 64 + 28, 4))[0]
    rep.check(st == DMA_DONE | DMA_ERR_SRC_RANGE, "DMA: beyond device memory -> SRC_RANGE")
    rep.check(d.msi_seen(CORES + 0), "DMA: errors always interrupt")
    return mbs


N = 16      # fp32 elements per partition
P = 4       # partitions


def scale_program():
    """Sync loads, Vector doubles, Sync stores (semaphores order them), notify."""
    sb_in = tap(SPACE_SBUF, DT_FP32, 0, P, 0, (N, 1), (1, N))
    sb_out = tap(SPACE_SBUF, DT_FP32, 0, P, N * 4, (N, 1), (1, N))
    sync = [
        dma_insn(OP_DMA_LOAD, sb_in, 1, N * 4, 0, (4, N * 4)),
        insn(OP_SEM_SIGNAL, func=0, arg=1),
        insn(OP_SEM_WAIT, func=1, arg=1),
        dma_insn(OP_DMA_STORE, sb_out, 2, N * 4, 0, (4, N * 4)),
        insn(OP_NOTIFY, arg=0x77),
        insn(OP_END),
    ]
    vector = [
        insn(OP_SEM_WAIT, func=0, arg=1),
        insn(OP_TENSOR_SCALAR, func=ALU_MUL, ops=sb_out + sb_in, imm=(f32(2.0), 0)),
        insn(OP_SEM_SIGNAL, func=1, arg=1),
        insn(OP_END),
    ]
    return program({ENGINE_SYNC: sync, ENGINE_VECTOR: vector})


def test_job(d, rep):
    qt = d.qt
    prog = scale_program()
    values = [float(i) - 20.0 for i in range(P * N)]
    qt.write(BAR4 + 0, prog)                                  # program image
    qt.write(BAR4 + 0x10000, struct.pack(f"<{P * N}f", *values))  # input
    qt.write(OUT_BUF, bytes(P * N * 4))
    qt.write(SG_LIST, struct.pack("<QQ", OUT_BUF, P * N * 4))
    qt.write(BIND_TAB, binding(0, 0x10000, BIND_READ | BIND_EXEC)
             + binding(0x10000, P * N * 4, BIND_READ)
             + binding(SG_LIST, P * N * 4, BIND_WRITE | BIND_HOST_SG, 1))
    st = d.setup_queue(1)
    rep.check(st == Q_STATUS_ENABLED, "queue 1 enabled")
    qt.write(JOB_RING, job_desc(BIND_TAB, 3, 0, len(prog), 0, 0xC0FFEE, JOB_F_IRQ))
    d.wreg(QUEUE(1) + Q_TAIL, 1)
    rep.check(d.msi_seen(1), "job: MSI-X vector of queue 1 written")
    d.wait(QUEUE(1) + Q_CPL_TAIL, 0xFFFFFFFF, 2)
    n, f = d.cpl(0), d.cpl(1)
    rep.check(n["status"] == ST_NOTIFY and n["info"] == 0x77 and n["job_id"] == 0xC0FFEE
              and n["flags"] == CPL_F_PHASE, "job: NOTIFY entry with value 0x77")
    rep.check(f["status"] == ST_OK and f["flags"] == CPL_F_PHASE | CPL_F_FINAL
              and f["job_id"] == 0xC0FFEE and f["cycles"] > 0,
              f"job: final entry OK, {f['cycles']} cycles")
    out = struct.unpack(f"<{P * N}f", qt.read(OUT_BUF, P * N * 4))
    rep.check(list(out) == [2 * v for v in values],
              "job: output (host SG binding) = 2 x input, computed by Sync + Vector streams")
    rep.check(d.reg64(QUEUE(1) + Q_CNT_JOBS_LO) == 1, "job: CNT_JOBS 1")
    rep.check(d.reg64(QUEUE(1) + Q_CNT_INSTR_LO) == 10, "job: CNT_INSTR 10")
    rep.check(d.reg64(QUEUE(1) + Q_CNT_FLOPS_LO) == P * N, f"job: CNT_FLOPS {P * N}")
    rep.check(d.reg64(QUEUE(1) + Q_CNT_DMA_BYTES_LO) == 2 * P * N * 4, "job: CNT_DMA_BYTES")
    d.wreg(QUEUE(1) + Q_CPL_HEAD, 2)

    # A fault: the load reads past the end of binding 1.
    bad = program({ENGINE_SYNC: [
        dma_insn(OP_DMA_LOAD, tap(SPACE_SBUF, DT_FP32, 0, 1, 0, (N, 1), (1, N)), 1, 0,
                 P * N * 4 - 8, (4, 0)),
        insn(OP_END)]})
    qt.write(BAR4 + 0x2000, bad)
    qt.write(JOB_RING + 64, job_desc(BIND_TAB, 3, 0, len(bad), 0x2000, 0xBAD, JOB_F_IRQ))
    d.wreg(QUEUE(1) + Q_TAIL, 2)
    rep.check(d.msi_seen(1), "fault: MSI-X vector of queue 1 written")
    d.wait(QUEUE(1) + Q_CPL_TAIL, 0xFFFFFFFF, 3)
    f = d.cpl(2)
    print(f"     fault entry: {f}")
    rep.check(f["status"] == ST_BINDING_RANGE and f["info"] == 1 and f["engine"] == ENGINE_SYNC
              and f["flags"] & CPL_F_FINAL,
              "fault: BINDING_RANGE, info = slot 1, engine Sync")
    rep.check(d.reg64(QUEUE(1) + Q_CNT_FAULTS_LO) == 1, "fault: CNT_FAULTS 1")
    rep.check(d.reg(QUEUE(1) + Q_STATUS) == Q_STATUS_ENABLED, "fault: the queue keeps running")
    d.wreg(QUEUE(1) + Q_CPL_HEAD, 3)


def test_ring_error(d, rep):
    d.wreg(QUEUE(0) + Q_RING_ENTRIES, 3)
    d.wreg(QUEUE(0) + Q_CTRL, Q_CTRL_ENABLE)
    rep.check(d.reg(QUEUE(0) + Q_STATUS) == Q_STATUS_HALTED
              and d.reg(QUEUE(0) + Q_ERROR) == Q_ERR_RING_CONFIG,
              "ring error: 3 entries halts queue 0 with RING_CONFIG")
    rep.check(d.msi_seen(CORES + ENGINES), "ring error: error MSI-X vector written")
    rep.check(d.reg(REG_IRQ_STATUS) & IRQ_ERROR, "ring error: IRQ_STATUS.ERROR set")
    d.wreg(REG_IRQ_STATUS, IRQ_ERROR)
    rep.check(not d.reg(REG_IRQ_STATUS) & IRQ_ERROR, "IRQ_STATUS is write-1-to-clear")
    d.wreg(QUEUE(0) + Q_CTRL, Q_CTRL_RESET)
    d.wait(QUEUE(0) + Q_CTRL, Q_CTRL_RESET, 0)
    rep.check(d.reg(QUEUE(0) + Q_STATUS) == 0, "ring error: core reset clears the halt")


def test_core_reset(d, rep):
    qt = d.qt
    forever = program({ENGINE_SYNC: [insn(OP_NOP), insn(OP_LOOP, func=0, arg=0, imm=(0, 0))]})
    qt.write(BAR4 + 0x3000, forever)
    d.setup_queue(0, 16, 16)
    qt.write(JOB_RING, job_desc(BIND_TAB, 3, 0, len(forever), 0x3000, 0x42, JOB_F_IRQ))
    d.wreg(QUEUE(0) + Q_TAIL, 1)
    busy = d.wait(QUEUE(0) + Q_STATUS, Q_STATUS_BUSY, Q_STATUS_BUSY)
    rep.check(busy & Q_STATUS_BUSY and d.reg(QUEUE(0) + Q_CUR_JOB_LO) == 0x42,
              "core reset: endless job 0x42 is running")
    time.sleep(0.05)
    rep.check(d.reg64(QUEUE(0) + Q_CNT_BUSY_NS_LO) > 0, "core reset: BUSY_NS grows while it runs")
    d.wreg(QUEUE(0) + Q_CTRL, Q_CTRL_RESET)
    ctrl = d.wait(QUEUE(0) + Q_CTRL, Q_CTRL_RESET, 0)
    rep.check(ctrl == 0, "core reset: Q_CTRL.RESET clears when done")
    e = d.cpl(0)
    rep.check(e["status"] == ST_ABORTED and e["job_id"] == 0x42 and e["flags"] & CPL_F_FINAL,
              "core reset: the job completed with ABORTED")
    rep.check(d.reg(QUEUE(0) + Q_HEAD) == 0 and d.reg(QUEUE(0) + Q_CPL_TAIL) == 0
              and d.reg(QUEUE(0) + Q_STATUS) == 0, "core reset: indices cleared, queue disabled")


def test_fatal_and_reset(d, rep):
    d.wreg(REG_INJECT, 1)
    rep.check(d.reg(REG_DEV_STATUS) == DEV_STATUS_FATAL, "fatal: DEV_STATUS FATAL, not READY")
    rep.check(d.reg(REG_FATAL_CAUSE) == FATAL_INJECTED, "fatal: FATAL_CAUSE INJECTED")
    rep.check(d.msi_seen(CORES + ENGINES), "fatal: error MSI-X vector written")
    d.wreg(REG_DEV_CTRL, 1)
    st = d.wait(REG_DEV_STATUS, 0xFFFFFFFF, DEV_STATUS_READY)
    rep.check(st == DEV_STATUS_READY, "device reset: READY again")
    rep.check(d.reg(REG_RESET_COUNT) == 1, "device reset: RESET_COUNT 1")
    rep.check(d.reg(REG_FATAL_CAUSE) == 0 and d.reg(REG_SCRATCH) == 0
              and d.reg(QUEUE(1) + Q_RING_ENTRIES) == 0
              and d.reg64(QUEUE(1) + Q_CNT_JOBS_LO) == 0
              and d.reg64(DMA(0) + DMA_CNT_BYTES_LO) == 0,
              "device reset: registers and counters back to reset values")


def robustness(d, rep, seed, iterations):
    """Random registers, descriptors and programs; QEMU must survive."""
    qt = d.qt
    rng = random.Random(seed)
    t0 = time.monotonic()
    writes = 0
    # Every register offset of the BAR once, with random values. DEV_CTRL
    # and INJECT included; queue/DMA rings aimed at guest RAM sometimes.
    for off in range(0, REGS_SIZE, 4):
        v = rng.getrandbits(32)
        if rng.random() < 0.3:
            v = rng.choice([0, 1, 2, 3, 4, 16, 0xFFFFFFFF, JOB_RING, DMA_RING, CPL_RING])
        d.wreg(off, v)
        writes += 1
    rep.check(qt.alive() and d.reg(REG_MAGIC) == MAGIC,
              f"robustness: {REGS_SIZE // 4} register offsets written, MAGIC still reads")

    def rand_addr():
        return rng.choice([
            rng.getrandbits(64), rng.getrandbits(48), rng.randrange(0, RAM_SIZE),
            rng.randrange(0, DEV_MEM), BAR0 + rng.randrange(0, REGS_SIZE), BAR4,
            0xFEE00000, DEV_MEM - rng.randrange(0, 64)])

    def rand_prog():
        kind = rng.randrange(3)
        if kind == 0:
            return rng.randbytes(rng.randrange(1, 1024))
        streams = {}
        for eng in (ENGINE_TENSOR, ENGINE_VECTOR, ENGINE_SCALAR, ENGINE_SYNC):
            code = []
            for _ in range(rng.randrange(0, 6)):
                op = rng.choice(OPCODES)
                if kind == 1:
                    raw = bytearray(rng.randbytes(64))
                    raw[0] = op
                    code.append(bytes(raw))
                else:
                    t = tap(rng.randrange(3), rng.randrange(5), rng.randrange(130),
                            rng.randrange(130), rng.choice([0, 4, rng.getrandbits(32)]),
                            (rng.randrange(1, 600), rng.randrange(1, 4)),
                            (rng.randrange(0, 3), rng.randrange(0, 600)))
                    code.append(insn(op, func=rng.randrange(10), arg=rng.randrange(4),
                                     ops=t * 3, imm=(rng.getrandbits(32), 0)))
            code.append(insn(OP_END))
            streams[eng] = code
        return program(streams, insn_limit=rng.choice([0, 1000, 100000]))

    jobs = descs = 0
    for it in range(iterations):
        if not qt.alive():
            break
        d.wreg(REG_DEV_CTRL, 1)
        d.wait(REG_DEV_STATUS, 0xFFFFFFFF, DEV_STATUS_READY, timeout=10)
        # Random DMA descriptors on a random engine.
        eng = rng.randrange(ENGINES)
        ring = b"".join(dma_desc(rand_addr() & rng.choice([(1 << 64) - 1, (1 << 26) - 1]),
                                 rand_addr() & rng.choice([(1 << 64) - 1, (1 << 26) - 1]),
                                 rng.choice([0, 1, 4096, rng.getrandbits(20), rng.getrandbits(32)]),
                                 rng.choice([rng.getrandbits(32), rng.randrange(8)]))
                        for _ in range(8))
        qt.write(DMA_RING, ring)
        d.setup_dma(eng, 8)
        d.wreg(DMA(eng) + DMA_TAIL, rng.choice([8, rng.getrandbits(32)]))
        descs += 8
        # Random programs and job descriptors on a random core.
        core = rng.randrange(CORES)
        for k in range(4):
            qt.write(BAR4 + 0x8000 * k, rand_prog())
        qt.write(BIND_TAB, binding(0, 0x20000, BIND_READ | BIND_EXEC)
                 + binding(rng.randrange(0, DEV_MEM), rng.randrange(0, 1 << 16),
                           rng.randrange(16))
                 + binding(SG_LIST, rng.randrange(1, 1 << 14), BIND_WRITE | BIND_HOST_SG, 1)
                 + rng.randbytes(32))
        qt.write(SG_LIST, struct.pack("<QQ", rand_addr() & ((1 << 28) - 1),
                                      rng.randrange(0, 1 << 14)))
        descs_raw = b""
        for j in range(8):
            if rng.random() < 0.8:
                descs_raw += job_desc(BIND_TAB, rng.randrange(0, 5), rng.randrange(3),
                                      rng.choice([64, 4096, 0x8000, rng.getrandbits(32)]),
                                      0x8000 * rng.randrange(4), j, rng.randrange(2))
            else:
                descs_raw += rng.randbytes(64)
        qt.write(JOB_RING, descs_raw)
        d.setup_queue(core, 8, rng.choice([2, 8]))
        d.wreg(QUEUE(core) + Q_TAIL, rng.choice([8, 3, rng.getrandbits(32)]))
        jobs += 8
        # Let them run a little, consume completions, then reset the core.
        time.sleep(0.01)
        d.wreg(QUEUE(core) + Q_CPL_HEAD, d.reg(QUEUE(core) + Q_CPL_TAIL))
        d.wreg(QUEUE(core) + Q_CTRL, Q_CTRL_RESET)
        if d.wait(QUEUE(core) + Q_CTRL, Q_CTRL_RESET, 0, timeout=10) & Q_CTRL_RESET:
            rep.check(False, f"robustness: core {core} reset did not finish (iteration {it})")
            break
    d.wreg(REG_DEV_CTRL, 1)
    st = d.wait(REG_DEV_STATUS, 0xFFFFFFFF, DEV_STATUS_READY, timeout=20)
    dt = time.monotonic() - t0
    rep.check(qt.alive() and d.reg(REG_MAGIC) == MAGIC and st == DEV_STATUS_READY,
              f"robustness: {iterations} rounds, {jobs} random jobs, {descs} random DMA "
              f"descriptors in {dt:.1f} s: QEMU alive, MAGIC reads, device READY after reset")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qemu", default=os.environ.get("NEURON_QEMU"),
                    help="qemu-system-x86_64 with the device (default: $NEURON_QEMU)")
    ap.add_argument("--firmware", default=os.environ.get("NEURON_QEMU_FIRMWARE"),
                    help="firmware directory for -L (default: $NEURON_QEMU_FIRMWARE)")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("NEURON_QTEST_SEED", 1)))
    ap.add_argument("--iterations", type=int, default=60,
                    help="rounds of the robustness run (default: 60)")
    ap.add_argument("--dma-mib", type=int, default=16, help="size of the DMA copy (MiB)")
    ap.add_argument("--keep-going", action="store_true", help="continue after a failure")
    ap.add_argument("--iommu", action="store_true",
                    help="put an intel-iommu in front of the device (DMA remapping left "
                         "off by this test: every access still goes through it)")
    args = ap.parse_args()
    if not args.qemu:
        ap.error("--qemu is required")
    if not args.firmware:
        fw = os.path.join(os.path.dirname(args.qemu), "firmware")
        args.firmware = fw if os.path.isdir(fw) else None

    rep = Report(args.keep_going)
    print(f"neuron qtest: {args.qemu}, seed {args.seed}")
    with tempfile.TemporaryDirectory(prefix="neuron-qtest-") as tmp:
        qt = None
        try:
            # Bad properties are refused with a message.
            argv = [args.qemu, "-machine", "q35", "-accel", "qtest", "-display", "none",
                    "-nodefaults", "-S", "-device", "neuron,cores=17"]
            if args.firmware:
                argv[1:1] = ["-L", args.firmware]
            bad = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                                 stdin=subprocess.DEVNULL)
            rep.check(bad.returncode != 0 and "cores must be" in bad.stderr,
                      "cores=17 is refused: " + (bad.stderr.strip().splitlines() or [""])[-1])
            qt = QTest(args.qemu, args.firmware,
                       f"neuron,cores={CORES},dma-engines={ENGINES},mem-size={DEV_MEM >> 20}M",
                       tmp, ["-device", "intel-iommu"] if args.iommu else [])
            d = Device(qt, rep)
            d.probe()
            test_identity(d, rep)
            test_power_management(d, rep)
            test_dma(d, rep, args.dma_mib << 20)
            test_job(d, rep)
            test_ring_error(d, rep)
            test_core_reset(d, rep)
            test_fatal_and_reset(d, rep)
            robustness(d, rep, args.seed, args.iterations)
        except (AssertionError, QemuDied, RuntimeError) as e:
            if not isinstance(e, AssertionError):
                rep.check(False, f"{type(e).__name__}: {e}")
        finally:
            if qt:
                alive = qt.alive()
                rc = qt.close()
                log = qt.log()
                if not alive or rc != 0:
                    rep.failed += 1
                    print(f"FAIL QEMU exited with status {rc}")
                if log:
                    print("---- QEMU stderr ----\n" + log[-4000:])
                print(f"     {qt.commands} qtest commands")
    print(f"neuron qtest: {rep.passed} passed, {rep.failed} failed")
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
