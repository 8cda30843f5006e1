# SPDX-License-Identifier: MIT
#
# Sourced by the scripts, so that a long first run never leaves a silent
# terminal: every step that can take more than a few seconds prints one line
# when it starts and one with its duration when it ends.
#
#   step_begin NAME; ...; step_end     around any commands (a failing command
#                                      under set -e ends the script without an
#                                      end line, after its own error message)
#   step NAME CMD...                   around one external command; prints
#                                      FAILED with the duration and returns
#                                      CMD's status when it fails
#
# The lines start with STEP_PREFIX (default: the script's name) and go to the
# stderr the script started with, also when the step's output is redirected.

_step_name=
_step_start=0
exec {_step_fd}>&2

_step_print() { printf '%s: %s\n' "${STEP_PREFIX:-${0##*/}}" "$*" >&"$_step_fd"; }

_step_elapsed() {
	local s=$(($(date +%s) - $1))
	if [ $s -ge 60 ]; then
		printf '%dm%02ds' $((s / 60)) $((s % 60))
	else
		printf '%ds' $s
	fi
}

step_begin() {
	_step_name=$1
	_step_start=$(date +%s)
	_step_print "$_step_name ..."
}

step_end() {
	_step_print "$_step_name: done in $(_step_elapsed "$_step_start")"
}

step() {
	local name=$1 start rc=0
	shift
	start=$(date +%s)
	_step_print "$name ..."
	"$@" || rc=$?
	if [ $rc -eq 0 ]; then
		_step_print "$name: done in $(_step_elapsed "$start")"
	else
		_step_print "$name: FAILED (exit $rc) after $(_step_elapsed "$start")"
	fi
	return $rc
}
