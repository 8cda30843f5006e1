#!/bin/sh
# SPDX-License-Identifier: MIT
# After the effect of udev/70-neuron.rules (apply-udev-rules.sh: the VM has
# no udevd), a user in the rule's group uses the devices (neuron-ls and,
# when given, a libneuron workload); a user outside it gets neuron-ls's
# permission message and exit status 5. The user is nobody (65534); the
# node ownership is restored at the end.
# usage: permissions.sh NEURON_LS RULES APPLY_SCRIPT [WORKLOAD ARGS...]
set -eu
ls_bin=$1 rules=$2 apply=$3
shift 3
fail() { echo "permissions.sh: $*" >&2; exit 1; }
uid=65534

saved=$(stat -c '%n %g %a' /dev/accel/accel*)
restore() {
	printf '%s\n' "$saved" | while read -r node g m; do
		chgrp "$g" "$node"
		chmod "$m" "$node"
	done
	rm -rf /dev/neuron
}
trap restore EXIT

gid=$("$apply" "$rules")
for node in /dev/accel/accel*; do
	[ "$(stat -c '%g %a' "$node")" = "$gid 660" ] || fail "$node: $(stat -c '%g %a' "$node"), expected $gid 660"
done
for link in /dev/neuron/by-path/*; do
	[ -c "$link" ] || fail "$link is not a link to a device node"
done

# In the group.
setpriv --reuid=$uid --regid=$uid --groups="$gid" -- "$ls_bin" >in.txt 2>in.err ||
	fail "user $uid in group $gid: neuron-ls exit status $? ($(cat in.err))"
[ ! -s in.err ] || fail "user $uid in group $gid: messages: $(cat in.err)"
echo "in group $gid: neuron-ls ok"
if [ $# -gt 0 ]; then
	(cd /tmp && setpriv --reuid=$uid --regid=$uid --groups="$gid" -- "$@") ||
		fail "user $uid in group $gid: workload $* failed"
	echo "in group $gid: workload ok"
fi

# Outside it.
status=0
setpriv --reuid=$uid --regid=$uid --clear-groups -- "$ls_bin" >out.txt 2>out.err || status=$?
cat out.err
[ "$status" -eq 5 ] || fail "user $uid outside the group: exit status $status, expected 5"
grep -q "^neuron: /dev/accel/accel0: permission denied (owner root:[a-z0-9]*, mode 0660): add the user to group " out.err ||
	fail "user $uid outside the group: no permission message"
grep -q "0000:" out.txt || fail "user $uid outside the group: no table"
echo "permissions.sh: ok"
