#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Lifetime of neuron.ko: unbind and rebind the device while a process has it
# open with a buffer mapped, then unload and reload the module N times
# (default 50). The kernel log verdict of the harness catches KASAN,
# lockdep, kmemleak and DMA-API reports.
#
# usage: lifecycle.sh [CYCLES]
# The module reloaded is $NEURON_KMOD, else the neuron.ko the harness
# loaded (from $NEURON_VM_MODULES).
set -eu
cycles=${1:-50}
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

# Unbind under an open file (and an mmapped host buffer held by python).
python3 - "$bdf" <<'PY'
import ctypes, fcntl, mmap, os, struct, sys
bdf = sys.argv[1]
fd = os.open("/dev/accel/accel0", os.O_RDWR)
def iowr(nr, size):
    return (3 << 30) | (size << 16) | (ord('d') << 8) | (0x40 + nr)
create = bytearray(struct.pack("QIIII", 8192, 1, 0, 0, 0))
fcntl.ioctl(fd, iowr(1, 24), create)
handle = struct.unpack_from("I", create, 16)[0]
info = bytearray(struct.pack("IIQQQII", handle, 0, 0, 0, 0, 0, 0))
fcntl.ioctl(fd, iowr(2, 40), info)
off = struct.unpack_from("Q", info, 8)[0]
m = mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=off)
m[0:4] = b"abcd"
with open("/sys/bus/pci/drivers/neuron/unbind", "w") as f:
    f.write(bdf)
# The file still works for what needs no device; host memory stays mapped.
assert m[0:4] == b"abcd"
try:
    fcntl.ioctl(fd, iowr(1, 24), bytearray(struct.pack("QIIII", 4096, 1, 0, 0, 0)))
    print("lifecycle.sh: BO_CREATE after unbind succeeded")
except OSError as e:
    print("lifecycle.sh: BO_CREATE after unbind:", e.strerror)
m.close()
os.close(fd)
PY
echo "$bdf" >"$drv/bind"
wait_node
say "unbind/bind with an open file: ok"

cycle=0
while [ $cycle -lt "$cycles" ]; do
	rmmod neuron
	insmod "$ko"
	wait_node
	cycle=$((cycle + 1))
done
say "$cycles load/unload cycles: ok"
