#!/bin/sh
# SPDX-License-Identifier: MIT
# neuron-run through neuron.ko: corpus graphs compiled by neuron-cc run on
# the first device with --check against the compiler's reference; the MLP's
# output fed back as its input (.npy); its container checked against a
# graph with another weight fails (exit status 6) listing the elements.
# usage: neuron-run.sh NEURON_CC NEURON_RUN CORPUS_DIR
set -eu
cc=$1
run=$2
corpus=$3
fail() { echo "neuron-run.sh: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for g in mlp_bf16 attention_causal_fp32 norm_block_fp32; do
	"$cc" "$corpus/$g.nir" -o "$work/$g.nprog" || fail "neuron-cc $g"
	"$run" "$work/$g.nprog" --seed 1 --check "$corpus/$g.nir" >"$work/out" ||
		{ cat "$work/out"; fail "$g: neuron-run --check failed"; }
	cat "$work/out"
	grep -q "on /dev/accel/accel" "$work/out" || fail "$g did not run on /dev/accel"
	grep -q "PASS: every output within its bound" "$work/out" || fail "$g: no PASS"
done

"$run" "$work/mlp_bf16.nprog" --seed 1 -o "$work/first" >/dev/null || fail "mlp: -o"
"$run" "$work/mlp_bf16.nprog" -i "x=$work/first/y.npy" --check "$corpus/mlp_bf16.nir" \
	>"$work/out" || { cat "$work/out"; fail "mlp: input from .npy"; }
sed 's/uniform(seed=13,/uniform(seed=14,/' "$corpus/mlp_bf16.nir" >"$work/changed.nir"
cmp -s "$corpus/mlp_bf16.nir" "$work/changed.nir" && fail "mlp_bf16.nir has no w2 of seed 13"
rc=0
"$run" "$work/mlp_bf16.nprog" -i "x=$work/first/y.npy" --check "$work/changed.nir" \
	>"$work/out" || rc=$?
cat "$work/out"
[ "$rc" -eq 6 ] || fail "the changed graph: exit status $rc, want 6"
grep -q "beyond the bound" "$work/out" || fail "the changed graph: no element beyond the bound"
echo "neuron-run.sh: OK"
