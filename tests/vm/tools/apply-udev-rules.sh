#!/bin/sh
# SPDX-License-Identifier: MIT
# Applies the effect of udev/70-neuron.rules in a system without udevd (the
# test VM): for every accel node whose device is bound to neuron, the group
# and mode the rule sets, and the /dev/neuron/by-path/<ID_PATH> link that
# path_id would give (pci-<BDF> for a PCI device).
#
# usage: apply-udev-rules.sh RULES_FILE
# Prints the gid used. When the rule's group does not exist on this system
# (the guest's root is the host's, read-only), NEURON_RENDER_GID (default
# 4242) stands in for it.
set -eu
rules=$1

# The assignments of the rule, comments excluded.
body=$(grep -v '^[[:space:]]*#' "$rules")
group=$(printf '%s\n' "$body" | sed -n 's/.*GROUP="\([^"]*\)".*/\1/p' | head -n1)
mode=$(printf '%s\n' "$body" | sed -n 's/.*MODE="\([0-7]*\)".*/\1/p' | head -n1)
[ -n "$group" ] && [ -n "$mode" ] || { echo "apply-udev-rules: no GROUP/MODE in $rules" >&2; exit 1; }
printf '%s\n' "$body" | grep -q 'DRIVERS=="neuron"' ||
	{ echo "apply-udev-rules: $rules does not match DRIVERS==\"neuron\"" >&2; exit 1; }

if gid=$(getent group "$group" | cut -d: -f3) && [ -n "$gid" ]; then
	:
else
	gid=${NEURON_RENDER_GID:-4242}
	echo "apply-udev-rules: group $group does not exist here: using gid $gid" >&2
fi

for sys in /sys/class/accel/accel*; do
	[ -e "$sys/device/driver" ] || continue
	[ "$(basename "$(readlink "$sys/device/driver")")" = neuron ] || continue
	name=$(basename "$sys")
	bdf=$(basename "$(readlink "$sys/device")")
	chgrp "$gid" "/dev/accel/$name"
	chmod "$mode" "/dev/accel/$name"
	mkdir -p /dev/neuron/by-path
	ln -sfn "../../accel/$name" "/dev/neuron/by-path/pci-$bdf"
	echo "apply-udev-rules: /dev/accel/$name group $gid mode $mode, /dev/neuron/by-path/pci-$bdf" >&2
done
echo "$gid"
