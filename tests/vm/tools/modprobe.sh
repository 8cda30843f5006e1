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
#  - the effect of 70-neuron.rules (apply-udev-rules.sh: no udevd here) gives
#    the nodes group render (created in the overlay's /etc/group when the
#    host has none); a user in that group runs neuron-ls and the libneuron
#    workload, a user outside it gets the permission message (exit status 5);
#  - `modprobe -r neuron` unloads it; options uncommented in the installed
#    modprobe.d file show in /sys/module/neuron/parameters after the next
#    `modprobe neuron`, and it unloads again.
#
# usage: modprobe.sh NEURON_KO BUILD_DIR KERNEL_MODULES NEURON_LS APPLY_SCRIPT
#                    [WORKLOAD ARGS...]
# KERNEL_MODULES holds the guest kernel's module tree as <release>/kernel/...
set -eu
fail() { echo "modprobe.sh: $*" >&2; exit 1; }
say() { echo "modprobe.sh: $*"; }

if [ "${1:-}" != --inside ]; then
	[ $# -ge 5 ] || fail "usage: modprobe.sh NEURON_KO BUILD_DIR KERNEL_MODULES NEURON_LS APPLY_SCRIPT [WORKLOAD...]"
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
		rm -rf /dev/neuron
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
release=$1 ko=$2 build=$3 kmods=$4/$1 ls_bin=$5 apply=$6
shift 6
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
link_deps() {  # a function: its `set --` leaves the workload's arguments alone
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
for m in drm gpu_sched drm_shmem_helper; do
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

# Group render: the host's, else created here (the root is an overlay).
if ! getent group render >/dev/null; then
	groupadd --system render || fail "groupadd render failed"
fi
gid=$("$apply" "$rules")
[ "$gid" = "$(getent group render | cut -d: -f3)" ] || fail "apply-udev-rules used gid $gid, render is $(getent group render)"
for node in /dev/accel/accel*; do
	[ "$(stat -c '%G %a' "$node")" = "render 660" ] || fail "$node: $(stat -c '%G %a' "$node"), expected render 660"
done
for link in /dev/neuron/by-path/*; do
	[ -c "$link" ] || fail "$link is not a link to a device node"
done
say "nodes: $(stat -c '%n %U:%G %a' /dev/accel/accel* | tr '\n' ' ')"

uid=65534
setpriv --reuid=$uid --regid=$uid --groups="$gid" -- "$ls_bin" >in.txt 2>in.err ||
	fail "user $uid in group render: neuron-ls exit status $? ($(cat in.err))"
[ ! -s in.err ] || fail "user $uid in group render: messages: $(cat in.err)"
cat in.txt
[ "$(grep -c ' ready' in.txt)" -eq "$(bound)" ] || fail "user $uid in group render: not every device ready"
say "in group render: neuron-ls ok"
if [ $# -gt 0 ]; then
	setpriv --reuid=$uid --regid=$uid --groups="$gid" -- "$@" ||
		fail "user $uid in group render: workload $* failed"
	say "in group render: workload ok"
fi
status=0
setpriv --reuid=$uid --regid=$uid --clear-groups -- "$ls_bin" >out.txt 2>out.err || status=$?
cat out.err
[ "$status" -eq 5 ] || fail "user $uid outside group render: exit status $status, expected 5"
grep -q "^neuron: /dev/accel/accel0: permission denied (owner root:render, mode 0660): add the user to group render" out.err ||
	fail "user $uid outside group render: no permission message"
say "outside group render: permission message, exit status 5"
rm -rf /dev/neuron

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
