#!/bin/sh
# SPDX-License-Identifier: MIT
# What every VM test may rely on: see tests/vm/neuron-vm and docs/development.md.
set -eu
fail() { echo "env.sh: $*" >&2; exit 1; }

[ "${NEURON_VM:-}" = 1 ] || fail "NEURON_VM is not 1"
[ -c /dev/null ] && [ -c /dev/kmsg ] || fail "/dev is not populated"
[ -r /proc/self/status ] || fail "/proc is not mounted"
[ -d /sys/bus/pci/devices ] || fail "/sys is not mounted"
[ -d /sys/kernel/debug ] || fail "debugfs is not mounted"
[ -z "$(ls -A .)" ] || fail "the working directory $PWD is not empty"
echo data >file && [ "$(cat file)" = data ] || fail "the working directory is not writable"
mkdir -p /tmp/neuron-vm-env-check && rmdir /tmp/neuron-vm-env-check || fail "/tmp is not writable"
[ -d /dev/shm ] && : >/dev/shm/neuron-vm-env && rm /dev/shm/neuron-vm-env || fail "/dev/shm is not writable"
if touch /usr/neuron-vm-env 2>/dev/null; then fail "the host's root is writable"; fi
echo "env.sh: ok (kernel $(uname -r), cwd $PWD)"
