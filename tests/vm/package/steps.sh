#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The steps of the package test, run in the Debian system image (systemd,
# systemd-udevd, DKMS; `neuron-vm run --system`), one CTest test each, in
# the order of tests/vm/package/CMakeLists.txt, with a reboot between
# `install` and `udev-load`:
#
#   install      apt-get install of the .debs (offline) builds neuron.ko with
#                DKMS for the running kernel; the device's modalias resolves
#                to it. The modules-load.d file of the package is diverted
#                away (dpkg-divert --local --rename), so that at the next
#                boot nothing but udev can load the module.
#   udev-load    after the reboot: neuron is loaded, bound to the device, and
#                systemd-udevd's log (udev.log_level=debug) says it inserted
#                it; systemd-modules-load did not.
#   nodes        /dev/accel/accel0 is root:render 0660 with the uaccess tag,
#                /dev/neuron/by-path/pci-<bdf> points to it; with a broken
#                rule (another group) the same check fails.
#   render-user  a user in group render: neuron-ls, neuron-bench (a short
#                submit section) on the device.
#   other-user   a user outside it: neuron-ls exits 5 with the permission
#                message.
#   prometheus   neuron-monitor.service (enabled for the test) and Debian's
#                prometheus on loopback: after a workload, queries through
#                the HTTP API return what sysfs shows, within the intervals.
#   hotplug      a second device plugged through QEMU's monitor (device_add):
#                udev makes its node and link, neuron-ls lists two devices.
#   upgrade      apt-get install of a newer neuron-dkms rebuilds the module;
#                the new one loads.
#   remove       apt-get remove neuron-dkms removes the module, the rule and
#                the module configuration.
#
# usage: steps.sh STEP PACKAGES_DIR UPGRADE_DIR
set -euo pipefail
step=$1 pkgs=$2 upgrade=$3

fail() { echo "$step: FAIL: $*" >&2; exit 1; }
note() { echo "$step: $*"; }
release=$(uname -r)
loadconf=/usr/lib/modules-load.d/neuron.conf
diverted=/usr/lib/modules-load.d/neuron.conf.diverted-by-test

# PCI devices whose modalias resolves to the neuron module.
neuron_pci_devices() {
	local d
	for d in /sys/bus/pci/devices/*; do
		[ "$(modprobe -R "$(cat "$d/modalias")" 2>/dev/null)" = neuron ] && basename "$d"
	done
	return 0
}

wait_for() { # SECONDS DESCRIPTION COMMAND...
	local limit=$1 what=$2 i=0
	shift 2
	until "$@"; do
		i=$((i + 1))
		[ $i -ge $((limit * 10)) ] && fail "no $what after $limit s"
		sleep 0.1
	done
}

# With the harness's --compiler-cache ($NEURON_VM_CCACHE), the compiler
# that DKMS runs goes through ccache: Debian's kernel headers prefix their
# CC with ccache when DEBIAN_KERNEL_USE_CCACHE is set (.kernelvariables,
# which DKMS reads CC from). A PATH with /usr/lib/ccache first would not
# reach DKMS: apt runs dpkg with a PATH of its own (DPkg::Path). DKMS
# still builds the module for the running kernel with the kernel's
# flags; a file that an earlier run compiled from the same source and
# flags comes from the cache.
compile_env=()
if [ -n "${NEURON_VM_CCACHE:-}" ]; then
	compile_env=(env DEBIAN_KERNEL_USE_CCACHE=1 "CCACHE_DIR=$NEURON_VM_CCACHE")
fi

# ccache's counters of this step's compilations, and a check that DKMS's
# compiler really went through it.
ccache_report() {
	[ -n "${NEURON_VM_CCACHE:-}" ] || return 0
	local stats hits misses
	stats=$(CCACHE_DIR=$NEURON_VM_CCACHE ccache --print-stats)
	hits=$(awk '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { n += $2 } END { print n + 0 }' <<<"$stats")
	misses=$(awk '$1 == "cache_miss" { print $2 }' <<<"$stats")
	[ $((hits + misses)) -gt 0 ] || fail "no compilation went through ccache ($NEURON_VM_CCACHE)"
	note "ccache: $hits compilations from the cache, ${misses:-0} compiled"
}

# apt-get install of local packages, offline (the guest has no network, so
# every dependency must be in the image already, or apt fails to fetch it).
# Absolute paths: with ./relative ones and --no-download apt 2.6 fails
# ("Pathname to install is not absolute").
apt_install() {
	local dir
	dir=$(mktemp -d /var/tmp/debs.XXXXXX)
	cp "$@" "$dir/"
	[ -z "${NEURON_VM_CCACHE:-}" ] || CCACHE_DIR=$NEURON_VM_CCACHE ccache --zero-stats >/dev/null
	DEBIAN_FRONTEND=noninteractive "${compile_env[@]}" apt-get install -y --no-install-recommends \
		"$dir"/*.deb || fail "apt-get install $* failed"
	rm -rf "$dir"
	ccache_report
}

dkms_module() { modinfo -k "$release" -n neuron 2>/dev/null; }

check_node() { # NODE
	local node=$1 bdf link
	[ -c "$node" ] || fail "$node is not a character device"
	[ "$(stat -c '%U:%G %a' "$node")" = "root:render 660" ] ||
		fail "$node is $(stat -c '%U:%G %a' "$node"), expected root:render 660"
	udevadm info --query=property --name="$node" | grep -Eq '^TAGS=.*:uaccess:' ||
		fail "$node has no uaccess tag: $(udevadm info --query=property --name="$node" | grep TAGS)"
	bdf=$(basename "$(readlink -f "/sys/class/accel/${node##*/}/device")")
	link=/dev/neuron/by-path/pci-$bdf
	[ -L "$link" ] || fail "no $link ($(ls /dev/neuron/by-path/ 2>&1 | tr '\n' ' '))"
	[ "$(readlink -f "$link")" = "$node" ] || fail "$link points to $(readlink -f "$link")"
	note "$node: root:render 0660, tag uaccess, $link"
}

case "$step" in
install)
	devs=$(neuron_pci_devices)
	[ -z "$devs" ] || fail "a modalias resolves to neuron before the install: $devs"
	[ ! -e /sys/module/neuron ] || fail "neuron is loaded before the install"
	start=$(date +%s)
	apt_install "$pkgs"/neuron-dkms_*.deb "$pkgs"/libneuron0_*.deb "$pkgs"/neuron-tools_*.deb
	note "apt-get install: $(($(date +%s) - start)) s (DKMS build included)"
	version=$(dpkg-query -W -f='${Version}' neuron-dkms)
	dkms status -m neuron -k "$release" | grep -q ": installed" ||
		fail "dkms status: $(dkms status 2>&1)"
	note "dkms status: $(dkms status -m neuron)"
	mod=$(dkms_module) || fail "modinfo finds no neuron module for $release"
	case "$mod" in */updates/dkms/*) ;; *) fail "neuron resolves to $mod, not DKMS's" ;; esac
	[ "$(modinfo -F vermagic "$mod" | cut -d' ' -f1)" = "$release" ] ||
		fail "$mod: vermagic $(modinfo -F vermagic "$mod")"
	devs=$(neuron_pci_devices)
	[ -n "$devs" ] || fail "no PCI device's modalias resolves to neuron"
	note "neuron-dkms $version: $mod; modalias of $devs resolves to neuron"
	[ -f /usr/lib/udev/rules.d/70-neuron.rules ] || fail "no 70-neuron.rules"
	# Only udev may load it at the next boot.
	[ -f "$loadconf" ] || fail "the package has no $loadconf"
	dpkg-divert --local --rename --divert "$diverted" --add "$loadconf"
	if grep -rsl '^[[:space:]]*neuron' /etc/modules /etc/modules-load.d /run/modules-load.d \
		/usr/lib/modules-load.d /usr/local/lib/modules-load.d; then
		fail "a modules-load configuration above names neuron"
	fi
	note "$loadconf diverted away: nothing but udev loads neuron at the next boot"
	;;
udev-load)
	[ ! -e "$loadconf" ] || fail "$loadconf is back"
	wait_for 60 "module neuron" test -d /sys/module/neuron
	for bdf in $(neuron_pci_devices); do
		drv=$(basename "$(readlink -f "/sys/bus/pci/devices/$bdf/driver")")
		[ "$drv" = neuron ] || fail "$bdf is bound to ${drv:-nothing}"
	done
	log=$(journalctl -b -o cat -u systemd-udevd.service)
	grep -q "Inserted module 'neuron'" <<<"$log" ||
		fail "systemd-udevd did not log inserting neuron; its log: $(grep -i neuron <<<"$log" | head)"
	note "systemd-udevd: $(grep "Inserted module 'neuron'" <<<"$log" | head -n1)"
	if journalctl -b -o cat -u systemd-modules-load.service | grep -i neuron; then
		fail "systemd-modules-load mentions neuron"
	fi
	note "systemd-modules-load did not load it"
	;;
nodes)
	udevadm settle
	check_node /dev/accel/accel0
	# The check fails on a broken rule: an override in /etc/udev/rules.d
	# with another group, applied by udev to the node, then taken away.
	sed 's/GROUP="render"/GROUP="video"/' /usr/lib/udev/rules.d/70-neuron.rules \
		>/etc/udev/rules.d/70-neuron.rules
	udevadm control --reload
	udevadm trigger --action=add --settle /sys/class/accel/accel0
	if (check_node /dev/accel/accel0) 2>broken.err; then
		rm -f /etc/udev/rules.d/70-neuron.rules
		fail "the check passed with GROUP=video in the rule"
	fi
	note "with GROUP=video in an overriding rule the check fails: $(cat broken.err)"
	rm /etc/udev/rules.d/70-neuron.rules
	udevadm control --reload
	udevadm trigger --action=add --settle /sys/class/accel/accel0
	check_node /dev/accel/accel0
	;;
render-user)
	id alice >/dev/null 2>&1 || useradd -m -G render alice
	runuser -u alice -- neuron-ls >ls.txt 2>ls.err ||
		fail "neuron-ls as alice (render): exit $? ($(cat ls.err))"
	cat ls.txt
	[ ! -s ls.err ] || fail "neuron-ls as alice printed: $(cat ls.err)"
	grep -q accel0 ls.txt || fail "neuron-ls lists no accel0"
	start=$(date +%s)
	(cd /tmp && runuser -u alice -- neuron-bench --quick --repeat 1 --sections submit) ||
		fail "neuron-bench as alice (render) failed"
	note "neuron-bench --quick --sections submit as alice: $(($(date +%s) - start)) s"
	;;
other-user)
	id bob >/dev/null 2>&1 || useradd -m bob
	status=0
	runuser -u bob -- neuron-ls >ls.txt 2>ls.err || status=$?
	cat ls.err
	[ $status -eq 5 ] || fail "neuron-ls as bob: exit status $status, expected 5"
	grep -q '^neuron: /dev/accel/accel0: permission denied (owner root:render, mode 0660): add the user to group render' ls.err ||
		fail "neuron-ls as bob: not the documented permission message"
	;;
prometheus)
	exec "$(dirname "$0")/prometheus.sh"
	;;
hotplug)
	[ ! -e /dev/accel/accel1 ] || fail "/dev/accel/accel1 exists before the device is plugged"
	echo "neuron-vm-host: device_add neuron1" >/dev/kmsg
	wait_for 60 /dev/accel/accel1 test -c /dev/accel/accel1
	udevadm settle
	check_node /dev/accel/accel1
	n=$(runuser -u alice -- neuron-ls --json | jq length)
	[ "$n" = 2 ] || fail "neuron-ls --json lists $n devices, expected 2"
	runuser -u alice -- neuron-ls
	;;
upgrade)
	old=$(dpkg-query -W -f='${Version}' neuron-dkms)
	mod=$(dkms_module)
	before=$(stat -c '%i %Y' "$mod")
	start=$(date +%s)
	apt_install "$upgrade"/neuron-dkms_*.deb
	note "apt-get install (upgrade): $(($(date +%s) - start)) s (DKMS build included)"
	new=$(dpkg-query -W -f='${Version}' neuron-dkms)
	dpkg --compare-versions "$new" gt "$old" || fail "neuron-dkms is $new after the upgrade from $old"
	dkms status -m neuron -k "$release" | grep -q ": installed" ||
		fail "dkms status after the upgrade: $(dkms status 2>&1)"
	mod=$(dkms_module) || fail "no neuron module after the upgrade"
	[ "$(stat -c '%i %Y' "$mod")" != "$before" ] || fail "$mod was not rebuilt"
	built=$(stat -c %Y "$mod")
	[ "$built" -ge "$start" ] || fail "$mod is older than the upgrade"
	note "neuron-dkms $old -> $new: $mod rebuilt"
	systemctl stop neuron-monitor.service 2>/dev/null || true
	modprobe -r neuron || fail "modprobe -r neuron"
	modprobe neuron || fail "modprobe neuron (the rebuilt module)"
	udevadm settle
	check_node /dev/accel/accel0
	check_node /dev/accel/accel1
	;;
remove)
	DEBIAN_FRONTEND=noninteractive apt-get remove -y neuron-dkms || fail "apt-get remove neuron-dkms"
	dpkg-divert --local --rename --remove "$loadconf"
	if dkms status -m neuron | grep .; then fail "dkms still knows neuron"; fi
	left=$(find "/usr/lib/modules/$release" /var/lib/dkms /usr/lib/udev/rules.d \
		/usr/lib/modprobe.d /usr/lib/modules-load.d -name '*neuron*' 2>/dev/null || true)
	left+=$(find /usr/src -maxdepth 1 -name 'neuron*')
	[ -z "$left" ] || fail "left after apt-get remove: $left"
	if modinfo -k "$release" neuron >/dev/null 2>&1; then fail "modinfo still finds neuron"; fi
	# The module file is gone, so modprobe -r cannot find it: rmmod.
	if [ -d /sys/module/neuron ]; then rmmod neuron || fail "rmmod neuron"; fi
	if modprobe neuron 2>/dev/null; then fail "modprobe neuron works after the removal"; fi
	note "module, rule and configuration gone; neuron-tools stays: $(dpkg-query -W neuron-tools)"
	;;
*)
	fail "unknown step"
	;;
esac
note ok
