#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Lifetime of neuron.ko: unbind and rebind the device while a process has it
# open with a buffer mapped, then while jobs and copies are in flight, then
# unload and reload the module N times (default 50). The kernel log verdict
# of the harness catches KASAN, lockdep, kmemleak and DMA-API reports.
#
# usage: lifecycle.sh [CYCLES [NEURON_BENCH]]
# With NEURON_BENCH (the neuron-bench binary), its submission and copy
# sections are the load that the device is unbound under.
# The module reloaded is $NEURON_KMOD, else the neuron.ko the harness
# loaded (from $NEURON_VM_MODULES).
set -eu
cycles=${1:-50}
bench=${2:-}
ko=${NEURON_KMOD:-}
if [ -z "$ko" ]; then
	for m in ${NEURON_VM_MODULES:-}; do
		case "$m" in */neuron.ko) ko=$m ;; esac
	done
fi
[ -n "$ko" ] && [ -f "$ko" ] || { echo "lifecycle.sh: set NEURON_KMOD to neuron.ko" >&2; exit 2; }

bdf=$(basename "$(readlink -f /sys/class/accel/accel0/device)")
drv=/sys/bus/pci/drivers/neuron
say() { echo "lifecycle.sh: $*"; }

wait_node() {
	tries=0
	while [ ! -e /dev/accel/accel0 ]; do
		tries=$((tries + 1))
		[ $tries -lt 50 ] || { say "no /dev/accel/accel0"; exit 1; }
		sleep 0.1
	done
}

# Sets $sum to the sum of the counters in the sysfs files "$@" (builtins
# only: on the debug kernel every program started costs seconds).
counter_sum() {
	sum=0
	for file in "$@"; do
		read -r value <"$file"
		sum=$((sum + value))
	done
}

# Unbind under an open file, with a host buffer and a device buffer
# mapped by python. Host memory stays mapped; the device buffer's mapping
# (the BAR) is zapped, a later access gets SIGBUS, and unmapping it must
# not upset the kernel (the harness fails on any warning).
python3 - "$bdf" <<'PY'
import ctypes, fcntl, mmap, os, signal, struct, sys
bdf = sys.argv[1]
fd = os.open("/dev/accel/accel0", os.O_RDWR)
def iowr(nr, size):
    return (3 << 30) | (size << 16) | (ord('d') << 8) | (0x40 + nr)
def mapped_bo(region, size):
    create = bytearray(struct.pack("QIIII", size, region, 0, 0, 0))
    fcntl.ioctl(fd, iowr(1, 24), create)
    handle = struct.unpack_from("I", create, 16)[0]
    info = bytearray(struct.pack("IIQQQII", handle, 0, 0, 0, 0, 0, 0))
    fcntl.ioctl(fd, iowr(2, 40), info)
    off = struct.unpack_from("Q", info, 8)[0]
    return mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=off)
host = mapped_bo(1, 8192)
host[0:4] = b"abcd"
device = mapped_bo(0, 3 * 4096)
device[4096:4100] = b"wxyz"
assert device[4096:4100] == b"wxyz"
# The mapping must not be tracked by the VMA as one remapped range (x86's
# VM_PAT, "ar" in smaps): on 6.12 untracking it when the unbind zaps the
# mapping races with munmap or exit and warns in get_pat_info().
view = ctypes.c_char.from_buffer(device)
start = f"{ctypes.addressof(view):x}-"
del view
smaps = open("/proc/self/smaps").read().splitlines()
at = next(i for i, line in enumerate(smaps) if line.startswith(start))
flags = next(line for line in smaps[at:] if line.startswith("VmFlags:")).split()[1:]
if "ar" in flags:
    sys.exit(f"lifecycle.sh: the device mapping is PAT-tracked as a whole: {' '.join(flags)}")
with open("/sys/bus/pci/drivers/neuron/unbind", "w") as f:
    f.write(bdf)
# The file still works for what needs no device; host memory stays mapped.
assert host[0:4] == b"abcd"
try:
    fcntl.ioctl(fd, iowr(1, 24), bytearray(struct.pack("QIIII", 4096, 1, 0, 0, 0)))
    print("lifecycle.sh: BO_CREATE after unbind succeeded")
except OSError as e:
    print("lifecycle.sh: BO_CREATE after unbind:", e.strerror)
pid = os.fork()
if pid == 0:
    device[0:1]
    os._exit(0)
_, status = os.waitpid(pid, 0)
if not os.WIFSIGNALED(status) or os.WTERMSIG(status) != signal.SIGBUS:
    sys.exit(f"lifecycle.sh: reading the device mapping after unbind: status {status:#x}, not SIGBUS")
print("lifecycle.sh: the device mapping after unbind: SIGBUS")
device.close()
host.close()
os.close(fd)
PY
echo "$bdf" >"$drv/bind"
wait_node
say "unbind/bind with an open file: ok"

# Unbind under load: up to 64 no-op jobs queued on a core in one process,
# 16 MiB copies on the DMA engines in another. Both must end (their waits
# fail, nothing hangs, no signal), and the rebound device must work.
if [ -n "$bench" ]; then
	sys=/sys/bus/pci/devices/$bdf/neuron
	counter_sum "$sys"/core*/jobs
	jobs_before=$sum
	counter_sum "$sys"/dma*/bytes
	bytes_before=$sum
	"$bench" --sections submit --max-depth 64 --repeat 1000 >load-jobs.log 2>&1 &
	jobs_pid=$!
	"$bench" --sections dma --min-copy 16M --max-copy 16M --repeat 1000 >load-copies.log 2>&1 &
	copies_pid=$!
	# Unbind once both processes have reached the device (the cores'
	# job counters and the engines' byte counters have grown), however
	# long they take to start on a slow kernel.
	read -r up _ </proc/uptime
	started=${up%.*}
	deadline=$((started + 300))
	while :; do
		kill -0 $jobs_pid && kill -0 $copies_pid ||
			{ say "the load ended before the unbind"; cat load-*.log; exit 1; }
		read -r up _ </proc/uptime
		counter_sum "$sys"/core*/jobs
		jobs_done=$((sum - jobs_before))
		counter_sum "$sys"/dma*/bytes
		bytes_done=$((sum - bytes_before))
		[ $jobs_done -gt 0 ] && [ $bytes_done -gt 0 ] && break
		[ "${up%.*}" -lt $deadline ] ||
			{ say "the load did not reach the device in 300 s ($jobs_done jobs, $bytes_done bytes copied)"; cat load-*.log; exit 1; }
		sleep 0.1
	done
	say "the load reached the device in $((${up%.*} - started)) s"
	echo "$bdf" >"$drv/unbind"
	for pid in $jobs_pid $copies_pid; do
		tries=0
		while kill -0 "$pid" 2>/dev/null; do
			tries=$((tries + 1))
			[ $tries -lt 300 ] || { say "a process of the load hangs after the unbind"; cat load-*.log; exit 1; }
			sleep 0.1
		done
		rc=0
		wait "$pid" || rc=$?
		[ "$rc" -gt 0 ] && [ "$rc" -lt 128 ] ||
			{ say "the load exited with $rc after the unbind"; cat load-*.log; exit 1; }
	done
	say "the load failed cleanly: $(tail -n1 load-jobs.log); $(tail -n1 load-copies.log)"
	echo "$bdf" >"$drv/bind"
	wait_node
	"$bench" --quick --repeat 1 --sections submit,dma --min-copy 1M --max-copy 1M \
		--max-depth 2 >after.log 2>&1 ||
		{ say "the rebound device does not work"; cat after.log; exit 1; }
	say "unbind/bind under load: ok"
fi

cycle=0
while [ $cycle -lt "$cycles" ]; do
	rmmod neuron
	insmod "$ko"
	wait_node
	cycle=$((cycle + 1))
done
say "$cycles load/unload cycles: ok"
