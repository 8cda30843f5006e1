#!/bin/sh
# SPDX-License-Identifier: MIT
# The operator's installation, in a VM booted without neuron.ko: in an
# overlay of the guest's root (lower: the host's root, read-only; upper on
# tmpfs), neuron.ko goes to /lib/modules/$(uname -r)/updates next to the
# kernel's own module tree, depmod indexes it, `cmake --install --component
# config` installs the udev rule, modprobe.d and modules-load.d files under
# /usr, and, chrooted into that root:
#  - `modprobe neuron` loads the driver through modules.dep (its DRM
#    dependencies are resolved by depmod) and it binds every device, with
#    the defaults that modprobe.d/neuron.conf documents;
#  - `modprobe -r neuron` unloads it; options uncommented in the installed
#    modprobe.d file show in /sys/module/neuron/parameters after the next
#    `modprobe neuron`, and it unloads again.
#
# The udev rule's effect (group render, the by-path links) and the users in
# and outside that group are vm.package.nodes, render-user and other-user,
# with real udev on a booted Debian system.
#
# usage: modprobe.sh NEURON_KO BUILD_DIR KERNEL_MODULES NEURON_LS
# KERNEL_MODULES holds the guest kernel's module tree as <release>/kernel/...
set -eu
fail() { echo "modprobe.sh: $*" >&2; exit 1; }
say() { echo "modprobe.sh: $*"; }

if [ "${1:-}" != --inside ]; then
	[ $# -eq 4 ] || fail "usage: modprobe.sh NEURON_KO BUILD_DIR KERNEL_MODULES NEURON_LS"
	[ ! -e /sys/module/neuron ] || fail "neuron is already loaded (boot the VM with --no-neuron)"
	release=$(uname -r)
	[ -d "$3/$release/kernel" ] || fail "no module tree for $release in $3"
	if ! grep -qw overlay /proc/filesystems; then
		# Plumbing of the test, not under test: the guest kernel's overlayfs.
		insmod "$(find "$3/$release/kernel/fs/overlayfs" -name 'overlay.ko*' | head -n1)" ||
			fail "cannot load overlayfs"
	fi
	w=$(mktemp -d /tmp/modprobe-root.XXXXXX)
	mount -t tmpfs -o mode=0755 tmpfs "$w"
	mkdir "$w/upper" "$w/work" "$w/root"
	mount -t overlay overlay -o "lowerdir=/,upperdir=$w/upper,workdir=$w/work" "$w/root" ||
		fail "cannot mount an overlay of /"
	root=$w/root
	cleanup() {
		umount -R "$root" 2>/dev/null || umount -lR "$root" 2>/dev/null || true
		umount "$w" 2>/dev/null || true
	}
	trap cleanup EXIT
	for d in dev proc sys; do
		mount --rbind "/$d" "$root/$d"
	done
	mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
	mount -t tmpfs -o mode=0755 tmpfs "$root/run"
	say "overlay root at $root"
	chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp \
		NEURON_VM_DEVICES="${NEURON_VM_DEVICES:-}" \
		/bin/sh "$0" --inside "$release" "$@"
	exit $?
fi

# --- inside the overlay root -------------------------------------------------
shift
release=$1 ko=$2 build=$3 kmods=$4/$1 ls_bin=$5
devices=${NEURON_VM_DEVICES:-}
cd /tmp
moddir=/lib/modules/$release

# The kernel's modules neuron.ko needs (what its .modinfo depends on, and
# what those depend on), linked at their place in the kernel's tree: indexing
# the whole tree would decompress every module, minutes under TCG. The
# kernel's module list files come along; neuron.ko is copied.
mkdir -p "$moddir/updates"
for f in modules.builtin modules.builtin.modinfo modules.order; do
	[ ! -e "$kmods/$f" ] || ln -s "$kmods/$f" "$moddir/$f"
done
(cd "$kmods" && find kernel -name '*.ko*') >kernel-modules
builtin=$(sed 's|.*/||; s|\.ko.*||; s|-|_|g' "$kmods/modules.builtin" 2>/dev/null || true)
link_deps() {  # a function: its `set --` leaves the script's arguments alone
	todo=$(echo $(modinfo -F depends "$ko" | tr ',' ' '))
	seen=" "
	while [ -n "$todo" ]; do
		set -- $todo
		name=$(printf '%s' "$1" | tr - _)
		shift
		todo=$*
		case "$seen" in *" $name "*) continue ;; esac
		seen="$seen$name "
		printf '%s\n' "$builtin" | grep -qx "$name" && continue
		rel=$(awk -v n="$name" '{ b = $0; sub(/.*\//, "", b); sub(/\.ko.*/, "", b);
			gsub(/-/, "_", b); if (b == n) { print; exit } }' kernel-modules)
		[ -n "$rel" ] || fail "module $name (a dependency of neuron) is not in $kmods"
		mkdir -p "$moddir/$(dirname "$rel")"
		ln -s "$kmods/$rel" "$moddir/$rel"
		todo=$(echo $todo $(modinfo -F depends "$kmods/$rel" | tr ',' ' '))
	done
}
link_deps
say "kernel modules linked for neuron:$seen"
cp "$ko" "$moddir/updates/neuron.ko"
depmod "$release"
dep=$(grep '^updates/neuron.ko:' "$moddir/modules.dep") || fail "neuron.ko is not in modules.dep"
say "modules.dep: $dep"
for m in drm drm_shmem_helper; do
	deps=${dep#*:}
	case "$(printf '%s\n' "$deps" | tr ' ' '\n' | sed 's|.*/||; s|\.ko.*||; s|-|_|g')" in
	*"$m"*) ;;
	*) fail "modules.dep does not resolve neuron's dependency $m: $dep" ;;
	esac
done
modinfo -n neuron | grep -qx "$moddir/updates/neuron.ko" || fail "modinfo -n neuron: $(modinfo -n neuron)"

# The project's configuration files.
cmake --install "$build" --component config --prefix /usr >install.log ||
	{ cat install.log; fail "cmake --install failed"; }
rules=/usr/lib/udev/rules.d/70-neuron.rules
conf=/usr/lib/modprobe.d/neuron.conf
for f in "$rules" "$conf" /usr/lib/modules-load.d/neuron.conf; do
	[ -f "$f" ] || fail "cmake --install did not install $f"
done
grep -qx neuron /usr/lib/modules-load.d/neuron.conf || fail "modules-load.d/neuron.conf does not name neuron"
say "installed $rules, $conf, /usr/lib/modules-load.d/neuron.conf"

bound() { ls -d /sys/bus/pci/drivers/neuron/0000:* 2>/dev/null | wc -l; }
check_bound() {
	[ -e /sys/module/neuron ] || fail "$1: /sys/module/neuron absent"
	n=$(bound)
	[ -z "$devices" ] || [ "$n" -eq "$devices" ] || fail "$1: $n devices bound, expected $devices"
	[ "$n" -ge 1 ] || fail "$1: no device bound"
	nodes=0
	for sys in /sys/class/accel/accel*; do
		[ "$(basename "$(readlink "$sys/device/driver")")" = neuron ] || continue
		[ -c "/dev/accel/$(basename "$sys")" ] || fail "$1: no node /dev/accel/$(basename "$sys")"
		nodes=$((nodes + 1))
	done
	[ "$nodes" -eq "$n" ] || fail "$1: $nodes accel nodes for $n devices"
	say "$1: $n devices bound, nodes $(ls /dev/accel | tr '\n' ' ')"
}
unload() {
	modprobe -r neuron || fail "modprobe -r neuron failed"
	[ ! -e /sys/module/neuron ] || fail "neuron still loaded after modprobe -r"
	[ "$(ls /sys/class/accel 2>/dev/null | wc -l)" -eq 0 ] || fail "accel devices left after unload"
	say "modprobe -r neuron: unloaded"
}

# The documented defaults (the commented-out "#options neuron NAME=VALUE").
documented=$(sed -n 's/^#options neuron \([a-z_]*\)=\([0-9]*\)$/\1 \2/p' "$conf")
[ -n "$documented" ] || fail "$conf documents no option"
modprobe -c | grep -q '^options neuron' && fail "options for neuron before any is uncommented"

modprobe neuron || fail "modprobe neuron failed"
check_bound "modprobe neuron"
printf '%s\n' "$documented" | while read -r name value; do
	p=/sys/module/neuron/parameters/$name
	[ -f "$p" ] || fail "$conf documents $name, no $p"
	[ "$(cat "$p")" = "$value" ] || fail "$name is $(cat "$p"), $conf documents $value"
done
say "parameters at their documented defaults: $(printf '%s\n' "$documented" | tr '\n' ' ')"
"$ls_bin" >ls.txt 2>ls.err || fail "neuron-ls: exit status $? ($(cat ls.err))"
cat ls.txt
[ "$(grep -c ' ready' ls.txt)" -eq "$(bound)" ] || fail "neuron-ls: not every device is ready"
say "neuron-ls: every device ready"

unload

# Options from modprobe.d: uncomment each documented option with another value.
expected=""
while read -r name value; do
	new=$((value + 1000))
	sed -i "s/^#options neuron $name=$value\$/options neuron $name=$new/" "$conf"
	expected="$expected $name=$new"
done <<EOF
$documented
EOF
modprobe -c | grep '^options neuron' || fail "modprobe -c shows no neuron options from $conf"
modprobe neuron || fail "modprobe neuron (with options) failed"
check_bound "modprobe neuron with options"
for kv in $expected; do
	name=${kv%%=*} value=${kv#*=}
	[ "$(cat "/sys/module/neuron/parameters/$name")" = "$value" ] ||
		fail "$name is $(cat "/sys/module/neuron/parameters/$name"), $conf sets $value"
done
say "options from $conf:$expected"
unload
say "ok"
