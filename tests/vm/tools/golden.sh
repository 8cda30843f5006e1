#!/bin/sh
# SPDX-License-Identifier: MIT
# The operator tools' output, live, against golden templates: two devices
# and a known workload running (neuron-tools-workload 0:8M:1M:0 1:24M:2M:0,1):
#   accel0: 8 MiB of device memory and 1 MiB of host memory, jobs on core 0;
#   accel1: 24 MiB of device memory and 2 MiB of host memory, jobs on cores
#           0 and 1;
#   50 rounds a second, each a 64 KiB copy to device memory on both devices
#   and a job on each of those cores.
# neuron-ls (table, --wide, --json, the JSON also against its schema) and
# neuron-top --screen at 80x24 and 160x50 are compared with the templates of
# golden/ by golden_compare.py: the same text except for the fields marked
# {{...}}; numbers that depend on timing (utilization, job and DMA rates,
# busy time) are checked to lie in a range, known ones (memory, cores, PCI
# addresses, command, versions, PID) must be exact. Every output is printed;
# the first mismatch of each is described.
#
# The ranges of the templates, for samples of one second:
#   jobs/s of a busy core 5..55 (of a device with two, 10..110): the
#     workload paces itself to 50 and never goes faster; measured 37-49 under
#     TCG with a loaded host; the floor leaves room for a CI machine running
#     other VMs at the same time (above 0 proves the counters move);
#   DMA 0.3M..3.5M bytes/s: 64 KiB a round at 5..55 rounds a second;
#   a process's UTIL 0.15..2.2% a busy core (0.3..4.4% for two): the device
#     model accounts a job ~387 us of busy time (fdinfo), 0.19..2.1% at
#     5..55 jobs/s;
#   a busy core's utilization 0.2..60%: the wall time the emulated core
#     spends on its jobs, ~0.3 ms each when the host is idle (measured
#     1.2-1.9%), far longer when the emulator's threads wait for a CPU;
#   busy_ns of --json 300000..1200000000: one job (~387 us) to 3000 jobs
#     (a minute of the workload);
#   "every" 0.9..3 s for --interval 1 (a late sample on a busy host); the
#   clock within 10 minutes.
# An idle core must show exactly 0.0% and 0.0 j/s.
# usage: golden.sh NEURON_LS NEURON_TOP WORKLOAD SCHEMA CHECK_JSON COMPARE GOLDEN_DIR
set -eu
ls_bin=$1 top=$2 workload=$3 schema=$4 check_json=$5 compare=$6 golden=$7
fail() { echo "golden.sh: $*" >&2; exit 1; }
[ "${NEURON_VM_DEVICES:-}" = 2 ] || fail "needs 2 devices, the VM has ${NEURON_VM_DEVICES:-?}"

"$workload" 0:8M:1M:0 1:24M:2M:0,1 >workload.out 2>workload.err &
wpid=$!
trap 'kill $wpid 2>/dev/null || true' EXIT
tries=0
until grep -q '^ready' workload.out; do
	kill -0 $wpid 2>/dev/null || fail "the workload exited: $(cat workload.err)"
	tries=$((tries + 1))
	[ $tries -le 300 ] || fail "the workload is not ready after 30 s"
	sleep 0.1
done
cat workload.out

tools_version=$("$ls_bin" --version)
# The device reset counts are what sysfs says (0 in the test's own boot;
# nothing here resets).
resets() { cat "/sys/class/accel/accel$1/device/neuron/reset_count"; }
set -- --var pid=$wpid --var driver_version="$(cat /sys/module/neuron/version)" \
	--var tools_version="${tools_version#neuron-ls }" \
	--var resets0="$(resets 0)" --var resets1="$(resets 1)"
# run OUTPUT COMMAND...: COMMAND's standard output into OUTPUT, printed.
run() {
	out=$1
	shift
	"$@" >"$out" 2>err.txt || fail "$*: exit status $? ($(cat err.txt))"
	[ ! -s err.txt ] || fail "$*: unexpected messages: $(cat err.txt)"
	echo "--- $out: $*"
	cat "$out"
}
run ls-table.txt "$ls_bin"
run ls-wide.txt "$ls_bin" --wide
run ls.json "$ls_bin" --json
run top-80x24.txt "$top" --screen 80x24 --interval 1 --sort pid
run top-160x50.txt "$top" --screen 160x50 --interval 1 --sort memory
kill -0 $wpid 2>/dev/null || fail "the workload died: $(cat workload.err)"

status=0
"$compare" "$@" "$golden/neuron-ls-table.txt" ls-table.txt "$golden/neuron-ls-wide.txt" ls-wide.txt \
	"$golden/neuron-ls.json" ls.json "$golden/neuron-top-80x24.txt" top-80x24.txt \
	"$golden/neuron-top-160x50.txt" top-160x50.txt || status=1
"$check_json" "$schema" ls.json || { echo "golden.sh: --json does not match $schema" >&2; status=1; }

# The comparison is not vacuous: a wrong known value (accel0's memory) and
# a range that leaves out the measured rate (accel1's jobs/s) each fail it.
sed 's|^accel0 \(.*\)  8\.0 MiB/|accel0 \1  9.0 MiB/|' "$golden/neuron-top-80x24.txt" >wrong-memory.txt
sed 's|{{num 10\.\.110}} jobs/s|{{num 1000..2000}} jobs/s|' "$golden/neuron-top-80x24.txt" >wrong-range.txt
! cmp -s wrong-memory.txt "$golden/neuron-top-80x24.txt" && ! cmp -s wrong-range.txt "$golden/neuron-top-80x24.txt" ||
	fail "the deliberately wrong templates are not wrong: update golden.sh with the templates"
rc=0
"$compare" "$@" wrong-memory.txt top-80x24.txt wrong-range.txt top-80x24.txt 2>wrong.txt || rc=$?
cat wrong.txt
[ $rc -eq 1 ] || fail "wrong templates: golden_compare.py exit status $rc, expected 1"
grep -q "^golden_compare: wrong-memory.txt: line 2, column [0-9]*: expected '9.0 MiB/256.0 MiB.*found '8.0 MiB/" wrong.txt ||
	fail "no mismatch reported for the wrong memory"
grep -q "^golden_compare: wrong-range.txt: line 6, column 3: {{num 1000..2000}}: .* is outside 1000..2000" wrong.txt ||
	fail "no mismatch reported for the wrong range"

kill -TERM $wpid
rc=0
wait $wpid || rc=$?
trap - EXIT
[ $rc -eq 0 ] || fail "the workload exited with status $rc: $(cat workload.err)"
[ ! -s workload.err ] || fail "the workload's messages: $(cat workload.err)"
[ $status -eq 0 ] || fail "output differs from the templates in $golden"
echo "golden.sh: ok"
