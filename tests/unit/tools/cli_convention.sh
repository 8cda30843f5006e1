#!/bin/bash
# SPDX-License-Identifier: MIT
# Every tool's command line against the convention of docs/tools.md,
# "Command lines": a bad flag exits 2 with "TOOL: message" and the way to
# --help, a misspelt option or command gets "did you mean", -V and
# --version print "TOOL VERSION", --help starts "Usage: TOOL" and names the
# man page, -d is always the device and --interval the period, output that
# cannot be written is an error.
#
#   cli_convention.sh VERSION NAME=BINARY...
set -u
version=$1
shift
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# run STATUS TOOL ARGS...: runs TOOL, checks its exit status; $out and $err hold its streams.
run() {
    local want=$1 tool=$2
    shift 2
    out=$("${bin[$tool]}" "$@" 2>"$tmp/err")
    status=$?
    err=$(cat "$tmp/err")
    if [ "$status" != "$want" ]; then
        fail "$tool $*: exit status $status, expected $want (stderr: $err)"
        return 1
    fi
    return 0
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The simulator's published devices of this test only.
export NEURON_SIM_DIR=$tmp/sim
unset NEURON_DEVICE
declare -A bin
tools=()
for arg in "$@"; do
    bin[${arg%%=*}]=${arg#*=}
    tools+=("${arg%%=*}")
done

for t in "${tools[@]}"; do
    # A flag no tool has.
    if run 2 "$t" --no-such-flag; then
        [ -z "$out" ] || fail "$t --no-such-flag: wrote to stdout: $out"
        case $err in
        "$t: "*) ;;
        *) fail "$t --no-such-flag: stderr does not start with '$t: ': $err" ;;
        esac
        grep -q -- "--no-such-flag" <<<"$err" || fail "$t --no-such-flag: the flag is not named: $err"
        grep -q -- "Run $t --help" <<<"$err" || fail "$t --no-such-flag: no pointer to --help: $err"
        grep -q "did you mean" <<<"$err" && fail "$t --no-such-flag: a suggestion for nothing close: $err"
    fi
    # A misspelling of an option every tool has.
    if run 2 "$t" --versoin; then
        grep -q -- "did you mean --version?" <<<"$err" || fail "$t --versoin: no 'did you mean --version?': $err"
    fi
    for v in -V --version; do
        if run 0 "$t" $v; then
            [ "$out" = "$t $version" ] || fail "$t $v: printed '$out', expected '$t $version'"
            [ -z "$err" ] || fail "$t $v: wrote to stderr: $err"
        fi
    done
    # Output that cannot be written is an error, with the system's reason.
    if [ -w /dev/full ]; then
        "${bin[$t]}" --version >/dev/full 2>"$tmp/err"
        status=$?
        [ "$status" = 1 ] || fail "$t --version >/dev/full: exit status $status, expected 1"
        grep -q "^$t: standard output: cannot write it: No space left on device$" "$tmp/err" ||
            fail "$t --version >/dev/full: $(cat "$tmp/err")"
    fi
    if run 0 "$t" --help; then
        grep -q "^Usage: $t " <<<"$out" ||
            fail "$t --help: the usage line is not 'Usage: $t ...': $(grep -m1 Usage <<<"$out")"
        grep -q "See $t(1)\." <<<"$out" || fail "$t --help: does not name the man page $t(1)"
        # -d is the device wherever a tool has -d.
        if grep -qE '^ +-d,' <<<"$out"; then
            grep -qE '^ +-d,--device ' <<<"$out" || fail "$t --help: -d is not -d,--device: $(grep -E '^ +-d,' <<<"$out")"
        fi
        # A period is --interval, and only that.
        if grep -qiE 'seconds between' <<<"$out"; then
            grep -qE '^ +--interval ' <<<"$out" ||
                fail "$t --help: the period is not a plain --interval: $(grep -iE 'seconds between' <<<"$out")"
        fi
    fi
done

# Other usage errors, in the tools' words (never CLI11's own: "The following
# argument was not expected", "1 required TEXT missing", "Could not convert",
# "Value 0 not in range 0.000000 to 1797...", "A subcommand is required").
# usage_error PATTERN TOOL ARGS...: status 2, "TOOL: " then PATTERN.
usage_error() {
    local pattern=$1 tool=$2
    shift 2
    [ -n "${bin[$tool]:-}" ] || return 0
    if run 2 "$tool" "$@"; then
        grep -qE -- "^$tool: $pattern" <<<"$err" || fail "$tool $*: expected '$tool: $pattern': $err"
        grep -qE 'following argument|required [A-Z]+ missing|Could not convert|not in range|A subcommand' <<<"$err" &&
            fail "$tool $*: CLI11's wording: $err"
    fi
}
for t in neuron-ls neuron-top neuron-monitor neuron-bench; do
    usage_error "unexpected argument 'extra'$" "$t" extra
    usage_error "--device needs a value$" "$t" -d
done
usage_error "unexpected arguments 'b' 'c'$" neuron-run a.nprog b c
usage_error "unexpected argument 'b.nir'$" neuron-cc a.nir b.nir
usage_error "unexpected argument 'b'$" neuron-profile view a b
usage_error "missing program: " neuron-run
usage_error "missing input: " neuron-cc
usage_error "missing file: " neuron-profile view
usage_error "a command is required: capture, view, export$" neuron-profile
usage_error "--output needs a value$" neuron-cc a.nir -o
usage_error "--interval: 'abc' is not a number from 0.05 to 3600$" neuron-top --interval abc
usage_error "--interval: '0.01' is not a number from 0.05 to 3600$" neuron-monitor --interval 0.01
usage_error "--count 'x': expected a whole number, 0 or more$" neuron-top --count x
usage_error "--iterations: '0' is not a number above 0$" neuron-run a.nprog --iterations 0
usage_error "--repeat: '0' is not a number from 1 to 1000$" neuron-bench --repeat 0
usage_error "--sbuf-bytes: '0' is not a number above 0$" neuron-cc a.nir --sbuf-bytes 0
usage_error "--isa '9': expected MAJOR.MINOR" neuron-cc a.nir --isa 9
usage_error "--job: '0' is not a number above 0$" neuron-profile export --job 0 a
usage_error "--sort: 'memroy' is not one of util, memory, pid, command \\(did you mean memory\\?\\)$" neuron-top --sort memroy
usage_error "--format: 'x' is not one of chrome, svg$" neuron-profile export --format x a
usage_error "--sections: 'cmopute' is not one of dma, submit, compute, alloc, e2e, collectives \\(did you mean compute\\?\\)$" neuron-bench --sections dma,cmopute
# Letter case aside, a misspelling too.
usage_error "unknown option --JSON \\(did you mean --json\\?\\)$" neuron-ls --JSON

# The device selector: a bad one is a usage error naming its source.
for t in neuron-ls neuron-top neuron-monitor neuron-run neuron-bench; do
    [ -n "${bin[$t]:-}" ] || continue
    args=(-d nonsense)
    [ "$t" = neuron-run ] && args+=(x.nprog)
    if run 2 "$t" "${args[@]}"; then
        grep -q -- "^$t: -d nonsense: not a device" <<<"$err" || fail "$t -d nonsense: $err"
    fi
    args=()
    [ "$t" = neuron-run ] && args+=(x.nprog)
    if NEURON_DEVICE=nonsense run 2 "$t" "${args[@]}"; then
        grep -q -- "^$t: NEURON_DEVICE='nonsense': not a device" <<<"$err" ||
            fail "$t with NEURON_DEVICE=nonsense: $err"
    fi
done

# The simulator's options: checked by the simulator's parser, the same way
# whether the tool simulates the device itself or lists the devices another
# process simulates (it used to list those and never look at the options).
# sim_options_rejected WHEN: every tool that takes -d, each bad option.
sim_options_rejected() {
    local when=$1 t
    for t in neuron-ls neuron-top neuron-monitor neuron-run neuron-bench; do
        [ -n "${bin[$t]:-}" ] || continue
        # What each needs to get past its other arguments, and to stop on
        # its own if the options were taken (never to serve or run long).
        local extra=()
        case $t in
        neuron-top) extra=(--batch -n 1) ;;
        neuron-monitor) extra=(--json -n 1) ;;
        neuron-run) extra=(x.nprog) ;;
        neuron-bench) extra=(--quick --sections dma --repeat 1) ;;
        esac
        if run 2 "$t" -d sim:bogus=1 "${extra[@]}"; then
            grep -q -- "^$t: -d sim:bogus=1: unknown option 'bogus' (known: cores, " <<<"$err" ||
                fail "$t -d sim:bogus=1 ($when): $err"
        fi
        if run 2 "$t" -d sim:cores=99 "${extra[@]}"; then
            grep -q -- "^$t: -d sim:cores=99: option cores=99: must be 1\.\." <<<"$err" ||
                fail "$t -d sim:cores=99 ($when): $err"
        fi
        if NEURON_DEVICE=sim:mem=1x run 2 "$t" "${extra[@]}"; then
            grep -q -- "^$t: NEURON_DEVICE='sim:mem=1x': option mem=1x: expected a number" <<<"$err" ||
                fail "$t with NEURON_DEVICE=sim:mem=1x ($when): $err"
        fi
        if NEURON_SIM_OPTIONS=bogus=1 run 2 "$t" -d sim "${extra[@]}"; then
            grep -q -- "^$t: -d sim: NEURON_SIM_OPTIONS='bogus=1': unknown option 'bogus'" <<<"$err" ||
                fail "$t -d sim with NEURON_SIM_OPTIONS=bogus=1 ($when): $err"
        fi
    done
}
sim_options_rejected "no simulated device"
# A simulated device of another process: neuron-top's own, idle, published
# until it is stopped.
if [ -n "${bin[neuron-top]:-}" ] && [ -n "${bin[neuron-ls]:-}" ]; then
    "${bin[neuron-top]}" -d sim --batch --interval 1 >/dev/null 2>&1 &
    simulating=$!
    trap 'kill $simulating 2>/dev/null; wait $simulating 2>/dev/null; rm -rf "$tmp"' EXIT
    # Waited for in the published directory, not by neuron-ls -d sim, which
    # would simulate a device of its own until neuron-top's is there (and
    # neuron-top, starting, might watch that one, gone when neuron-ls ends).
    for _ in $(seq 300); do
        [ -d "$NEURON_SIM_DIR/$simulating.0" ] && break
        sleep 0.1
    done
    if grep -q "sim:$simulating " <("${bin[neuron-ls]}" -d sim 2>/dev/null); then
        sim_options_rejected "another process simulates a device"
    else
        fail "neuron-top -d sim --batch (pid $simulating): its device is not listed by neuron-ls -d sim"
    fi
    kill $simulating
    wait $simulating 2>/dev/null
fi

# A device that is not there: the error alone, no line about a run that
# does not happen (neuron-run's inputs are described once the device opened).
if [ -n "${bin[neuron-run]:-}" ] && [ -n "${bin[neuron-cc]:-}" ]; then
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    if run 0 neuron-cc "$here/../../../examples/nir/mlp.nir" -o "$tmp/mlp.nprog"; then
        if run 1 neuron-run "$tmp/mlp.nprog" --seed 1 -d /dev/accel/accel99; then
            [ -z "$out" ] || fail "neuron-run without its device wrote to stdout: $out"
        fi
    fi
fi

# Commands: a misspelt one, and a program that is not there.
if [ -n "${bin[neuron-profile]:-}" ]; then
    if run 2 neuron-profile viwe x; then
        grep -q "did you mean view?" <<<"$err" || fail "neuron-profile viwe: $err"
    fi
    if run 127 neuron-profile capture -o "$tmp/x.ntrace" -- /nonexistent/command; then
        grep -q "^neuron-profile: cannot run /nonexistent/command: No such file or directory" <<<"$err" ||
            fail "neuron-profile capture of a missing command: $err"
    fi
fi

if [ "$failures" != 0 ]; then
    echo "$failures deviation(s) from the command-line convention" >&2
    exit 1
fi
echo "every tool follows the command-line convention: ${tools[*]}"
