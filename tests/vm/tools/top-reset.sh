#!/bin/sh
# SPDX-License-Identifier: MIT
# neuron-top --batch shows a core reset in the first or second sample after
# it happened (the sample in progress when it happens may have read its
# counters just before): reset through debugfs reset_core.
# Once with netlink events, once from the counters (--no-netlink).
# usage: top-reset.sh NEURON_TOP
set -eu
top=$1
fail() { echo "top-reset.sh: $*" >&2; exit 1; }
# The DRM device's debugfs directory is named after its PCI address (6.12),
# by its minor in older kernels.
bdf=$(basename "$(readlink /sys/class/accel/accel0/device)")
dbg=/sys/kernel/debug/accel/$bdf/reset_core
[ -e "$dbg" ] || dbg=/sys/kernel/debug/accel/0/reset_core
if [ ! -e "$dbg" ]; then
	echo "top-reset.sh: SKIP: $dbg does not exist (the driver has no debugfs reset_core)"
	exit 0
fi

for mode in netlink counters; do
flag=
[ $mode = counters ] && flag=--no-netlink
echo "--- events from $mode"
interval=0.5
: >top.json
"$top" $flag --json --interval $interval --count 16 >top.json 2>top.err &
pid=$!
# Wait for two samples, then reset core 1 of accel0.
while [ "$(wc -l <top.json)" -lt 2 ]; do
	kill -0 $pid 2>/dev/null || fail "neuron-top exited: $(cat top.err)"
	sleep 0.1
done
before=$(wc -l <top.json)
echo 1 >"$dbg"
echo "reset core 1 after sample $before"
wait $pid || fail "neuron-top: exit status $? ($(cat top.err))"

python3 - "$before" "$mode" <<'PY' || fail "the reset did not show within one refresh"
import json, sys
before = int(sys.argv[1])
samples = [json.loads(l) for l in open("top.json")]
print("event source:", samples[0]["event_source"])
for s in samples:
    for e in s["events"]:
        print("sample", s["sample"], "event", e)
hits = [s["sample"] for s in samples
        if any(e["kind"] == "reset" and e["neuron_device"] == 0 and e["core"] in (1, None)
               and e["source"] == sys.argv[2] for e in s["events"])]
assert hits, "no reset event of accel0 core 1"
print("reset shown in sample", hits[0], "; last sample before the reset:", before)
assert before < hits[0] <= before + 2, hits
dev0 = [d for d in samples[hits[0] - 1]["devices"] if d["neuron_device"] == 0][0]
assert dev0["neuron_cores"][1]["resets"] >= 1, dev0
PY
done
echo "top-reset.sh: ok"
