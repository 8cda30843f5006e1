#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs neuron.ko's KUnit suite "neuron": loads neuron_kunit.ko (built next
# to neuron.ko for kernels with KUnit) and fails unless every case passed.
set -eu
fail() { echo "kunit.sh: $*" >&2; exit 1; }

ko="$(dirname "$NEURON_KMOD")/neuron_kunit.ko"
[ -e "$ko" ] || fail "$ko does not exist: the kernel $(uname -r) has no KUnit"
results=/sys/kernel/debug/kunit/neuron/results

insmod "$ko"
[ -r "$results" ] || { rmmod neuron_kunit; fail "no $results"; }
report="$(cat "$results")"
rmmod neuron_kunit
printf '%s\n' "$report"

cases_ok=$(printf '%s\n' "$report" | grep -cE '^[[:space:]]+ok [0-9]+ ') || true
if printf '%s\n' "$report" | grep -qE 'not ok'; then
	fail "a test case failed"
fi
[ "$cases_ok" -gt 0 ] || fail "no test case reported ok"
printf '%s\n' "$report" | grep -qE '^ok [0-9]+ neuron$' || fail "the suite did not report ok"
echo "kunit.sh: ok ($cases_ok cases)"
