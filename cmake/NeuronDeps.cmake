# Read ${NEURON_CACHE_DIR}/deps.env, written by scripts/setup-deps, into
# CMake variables of the same names (NEURON_KERNEL_STOCK, NEURON_KERNEL_DEBUG,
# NEURON_QEMU_SRC, NEURON_QEMU_VERSION, NEURON_MESON, NEURON_MESON_PYTHONPATH,
# NEURON_FIRMWARE_DIR, NEURON_FTXUI_PREFIX, NEURON_PROMETHEUS, NEURON_PYTHON,
# NEURON_APT_PACKAGES).
# CMake reconfigures when the file changes.

set(_neuron_deps_env "${NEURON_CACHE_DIR}/deps.env")
if(NOT EXISTS "${_neuron_deps_env}" AND NOT NEURON_VM)
  return()
elseif(NOT EXISTS "${_neuron_deps_env}")
  message(FATAL_ERROR
    "${_neuron_deps_env} not found: the kernels, QEMU's source and the guest "
    "firmware are not set up.\nRun scripts/setup-deps (with NEURON_CACHE="
    "${NEURON_CACHE_DIR} if that is not the default cache), then configure again.")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_neuron_deps_env}")

file(STRINGS "${_neuron_deps_env}" _neuron_deps_lines REGEX "^[A-Z0-9_]+=")
foreach(_line IN LISTS _neuron_deps_lines)
  string(REGEX MATCH "^([A-Z0-9_]+)=(.*)$" _match "${_line}")
  set(${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
endforeach()

if(NEURON_FTXUI_PREFIX)
  list(APPEND CMAKE_PREFIX_PATH "${NEURON_FTXUI_PREFIX}")
endif()

if(NOT NEURON_VM)
  return()
endif()
foreach(_var NEURON_KERNEL_STOCK NEURON_QEMU_SRC NEURON_FIRMWARE_DIR)
  if(NOT ${_var})
    message(FATAL_ERROR "${_neuron_deps_env} does not set ${_var}: run scripts/setup-deps again")
  endif()
endforeach()
