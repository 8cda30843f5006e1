#!/bin/sh
# SPDX-License-Identifier: MIT
# neuron-ls against neuron.ko with NEURON_VM_DEVICES devices: the table, the
# wide view with a process holding a device open, JSON valid against its
# schema and agreeing with sysfs.
# usage: neuron-ls.sh NEURON_LS SCHEMA CHECK_JSON
set -eu
ls_bin=$1 schema=$2 check_json=$3
want=${NEURON_VM_DEVICES:?}
fail() { echo "neuron-ls.sh: $*" >&2; exit 1; }

"$ls_bin" >table.txt 2>err.txt || fail "exit status $? ($(cat err.txt))"
cat table.txt
[ ! -s err.txt ] || fail "unexpected messages: $(cat err.txt)"
head -n1 table.txt | grep -q "^neuron driver .*, $want devices\$" || fail "bad first line"
n=0
for sys in /sys/class/accel/accel*; do
	name=${sys##*/}
	bdf=$(basename "$(readlink "$sys/device")")
	cores=$(cat "$sys/device/neuron/cores")
	grep -Eq "^${name#accel} +$name +$bdf +[-0-9]+ +$cores +.* ready\$" table.txt ||
		fail "no row for $name ($bdf, $cores cores, ready)"
	n=$((n + 1))
done
[ "$n" -eq "$want" ] || fail "$n accel devices in sysfs, expected $want"

# A process using accel1: this shell, through fd 3.
exec 3<>/dev/accel/accel1
"$ls_bin" --wide 3>&- >wide.txt || fail "--wide: exit status $?"
cat wide.txt
comm=$(cat /proc/$$/comm)
grep -Eq "^    $$ +$comm +0 B +0 B +-\$" wide.txt || fail "--wide does not show this shell ($$, $comm) on accel1"

"$ls_bin" --json 3>&- >ls.json || fail "--json: exit status $?"
exec 3>&-
"$check_json" "$schema" ls.json || fail "--json does not match $schema"
python3 - "$want" <<'PY' || fail "--json disagrees with sysfs"
import json, os, sys
doc = json.load(open("ls.json"))
assert len(doc) == int(sys.argv[1]), doc
for d in doc:
    sys_dir = f"/sys/class/accel/accel{d['neuron_device']}/device"
    assert d["bdf"] == os.path.basename(os.readlink(sys_dir)), d
    assert d["nc_count"] == int(open(f"{sys_dir}/neuron/cores").read()), d
    assert d["memory_size"] == int(open(f"{sys_dir}/neuron/memory_total").read()), d
    assert d["state"] == "ready" and d["accessible"] is True, d
    assert d["driver_version"] is None or d["driver_version"] == open("/sys/module/neuron/version").read().strip()
procs = {p["pid"] for d in doc if d["neuron_device"] == 1 for p in d["neuron_processes"]}
assert os.getppid() in procs, (os.getppid(), procs)
print("json ok:", [(d["neuron_device"], d["bdf"]) for d in doc])
PY
echo "neuron-ls.sh: ok"
