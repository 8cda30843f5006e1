#!/bin/sh
# SPDX-License-Identifier: MIT
# Reads every ring's debugfs view (core<N>, dma<N>) of every neuron device:
# each shows the unit's registers, the driver's indices, its resets and the
# jobs on it. Shell builtins only: on the debug kernel every program started
# from the host's root costs seconds.
set -eu
fail() { echo "debugfs.sh: $*" >&2; exit 1; }

n=0
for dir in /sys/kernel/debug/accel/*; do
	[ -e "$dir/device" ] || continue
	for f in "$dir"/core* "$dir"/dma*; do
		[ -e "$f" ] || fail "$dir has no core<N> or dma<N> files"
		ctrl='' status='' driver='' resets='' inflight=''
		while IFS= read -r line; do
			case "$line" in
			'ctrl '*) ctrl=1 ;;
			'status '*) status=1 ;;
			'driver '*) driver=1 ;;
			'resets: '*) resets=1 ;;
			'inflight:'*) inflight=1 ;;
			esac
		done <"$f" || fail "reading $f failed"
		[ -n "$ctrl" ] && [ -n "$status" ] && [ -n "$driver" ] && [ -n "$resets" ] &&
			[ -n "$inflight" ] || fail "$f lacks one of ctrl, status, driver, resets:, inflight:"
		n=$((n + 1))
	done
done
[ "$n" -gt 0 ] || fail "no neuron device in /sys/kernel/debug/accel"
echo "debugfs.sh: ok ($n rings)"
