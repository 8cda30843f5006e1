# SPDX-License-Identifier: MIT
#
# Sourced by scripts/test, scripts/demo and scripts/bench (after step.sh):
# set up the dependencies and build a CMake preset, with compiler results
# kept in the dependency cache so that a new clone or a fresh root builds
# from ccache.

NEURON_CACHE=${NEURON_CACHE:-$HOME/.cache/neuron}
export CCACHE_DIR=${CCACHE_DIR:-$NEURON_CACHE/ccache}
# Paths below the checkout are hashed relative to it, and the build
# directory is not hashed into objects with debug information: clones at
# other paths share results (their debug information names the first).
CCACHE_BASEDIR=$(pwd)
export CCACHE_BASEDIR CCACHE_NOHASHDIR=1

# setup_and_build PRESET...: scripts/setup-deps once, then configure and
# build each preset, with the cache entries of NEURON_CONFIGURE_ARGS (an
# array) when the caller sets it.
setup_and_build() {
	local preset
	step "setting up dependencies (scripts/setup-deps)" scripts/setup-deps || return
	for preset in "$@"; do
		step "configuring the $preset build" \
			cmake --preset "$preset" "${NEURON_CONFIGURE_ARGS[@]}" >/dev/null || return
		step "building the $preset build" cmake --build --preset "$preset" -j "$(nproc)" ||
			return
	done
}
