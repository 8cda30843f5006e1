#!/bin/bash
# SPDX-License-Identifier: MIT
# Every tool's man page, as the build tree has it: --help names it and says
# where it is, man finds it there, its OPTIONS are the long options --help
# lists (of every command, for a tool with commands), it has EXAMPLES and
# ENVIRONMENT, and its ENVIRONMENT names every variable --help mentions.
#
#   man_pages.sh MANDIR NAME=BINARY...
set -u
mandir=$1
shift
examples=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../examples/nir" && pwd)
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# The long options in a text (troff escapes removed).
long_options() {
    sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' | grep -oE '(^|[^A-Za-z0-9-])--[a-z][a-z0-9-]*' |
        sed -E 's/^[^-]//' | sort -u
}

# A section of a page: from ".SH NAME" to the next .SH.
section() {
    awk -v name="$1" '/^\.SH / { on = ($0 == ".SH " name) ; next } on' "$2"
}

for arg in "$@"; do
    t=${arg%%=*}
    exe=${arg#*=}
    page=$mandir/man1/$t.1
    if [ ! -f "$page" ]; then
        fail "$t: no page $page in the build tree"
        continue
    fi
    help=$("$exe" --help)
    grep -q "See $t(1)\. From the build tree: MANPATH=$mandir: man $t" <<<"$help" ||
        fail "$t --help: does not say where its page is: $(grep -o 'See .*' <<<"$help")"
    if command -v man >/dev/null; then
        found=$(MANPATH=$mandir man -w "$t" 2>&1)
        [ "$found" = "$page" ] || fail "MANPATH=$mandir man -w $t: '$found', expected $page"
    fi
    # The options of every command too (each help without its footer).
    all=$help
    options=$(sed '/^Exit status/,$d' <<<"$help")
    for cmd in $(awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }' <<<"$help"); do
        sub=$("$exe" "$cmd" --help)
        all+=$'\n'$sub
        options+=$'\n'$(sed '/^Exit status/,$d' <<<"$sub")
    done
    helpopts=$(long_options <<<"$options")
    manopts=$(section OPTIONS "$page" | long_options)
    [ "$helpopts" = "$manopts" ] ||
        fail "$t: --help has $(echo $helpopts), its page's OPTIONS $(echo $manopts)"
    section EXAMPLES "$page" | grep -q . || fail "$t: no EXAMPLES in $page"
    # The graphs the examples compile are in examples/nir/, where the
    # examples run (or as they name them from the source tree).
    for nir in $(section EXAMPLES "$page" | grep -oE '[A-Za-z0-9_./-]+\.nir\b' | sort -u); do
        [ -f "$examples/${nir#examples/nir/}" ] || fail "$t: EXAMPLES compile $nir, which examples/nir/ does not have"
    done
    # Every page says what the environment does, if only that it does nothing.
    section ENVIRONMENT "$page" | grep -q . || fail "$t: no ENVIRONMENT in $page"
    env=$(section ENVIRONMENT "$page" | sed 's/\\-/-/g')
    for v in $(grep -oE '\$NEURON_[A-Z_]+' <<<"$all" | sort -u); do
        grep -q "${v#\$}" <<<"$env" || fail "$t: --help mentions $v, its page's ENVIRONMENT does not"
    done
done

if [ "$failures" != 0 ]; then
    echo "$failures problem(s) in the man pages" >&2
    exit 1
fi
echo "every man page matches its tool: $*"
