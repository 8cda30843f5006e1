#!/bin/sh
# SPDX-License-Identifier: MIT
# Reads every ring's debugfs view (core<N>, dma<N>) of every neuron device:
# each shows the unit's registers, the driver's indices, its resets and the
# jobs on it.
set -eu
fail() { echo "debugfs.sh: $*" >&2; exit 1; }

n=0
for dev in /sys/class/accel/accel*; do
	minor=${dev##*accel}
	dir=/sys/kernel/debug/accel/$minor
	[ -d "$dir" ] || dir=/sys/kernel/debug/accel/$(basename "$(readlink -f "$dev/device")")
	[ -d "$dir" ] || fail "no debugfs directory for $dev"
	for f in "$dir"/core* "$dir"/dma*; do
		[ -e "$f" ] || fail "$dir has no core<N> or dma<N> files"
		out=$(cat "$f") || fail "reading $f failed"
		for key in 'ctrl ' 'status ' 'driver ' 'resets: ' 'inflight:'; do
			printf '%s\n' "$out" | grep -q "^$key" || fail "$f lacks '$key': $out"
		done
		n=$((n + 1))
	done
done
[ "$n" -gt 0 ] || fail "no neuron device"
echo "debugfs.sh: ok ($n rings)"
