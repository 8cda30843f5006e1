#!/bin/sh
# SPDX-License-Identifier: MIT
# The VM has NEURON_VM_DEVICES neuron devices (PCI 1d0f:7f00), each bound to
# neuron.ko with an accel node. Shell builtins only: exec is slow under a
# debug kernel.
set -eu
want=${NEURON_VM_DEVICES:?}
found=0 bound=0 nodes=0
for d in /sys/bus/pci/devices/*; do
	read -r vendor <"$d/vendor"
	read -r device <"$d/device"
	[ "$vendor:$device" = 0x1d0f:0x7f00 ] || continue
	found=$((found + 1))
	if [ -e "/sys/bus/pci/drivers/neuron/${d##*/}" ]; then
		bound=$((bound + 1))
		echo "devices.sh: ${d##*/}: bound to neuron"
	else
		echo "devices.sh: ${d##*/}: not bound"
	fi
done
for n in /dev/accel/accel*; do
	[ -c "$n" ] && nodes=$((nodes + 1))
done
echo "devices.sh: $found device(s), $bound bound, $nodes accel node(s); expected $want"
[ "$found" -eq "$want" ] && [ "$bound" -eq "$want" ] && [ "$nodes" -eq "$want" ]
