# Out-of-tree kernel modules, built with Kbuild against every kernel in the
# dependency cache (see scripts/setup-deps and cmake/NeuronDeps.cmake).
#
# NEURON_KERNEL_FLAVOURS: "stock", plus "debug" when a debug kernel is set up.
#
# neuron_add_kernel_module(NAME <target> SOURCE_DIR <dir> OUTPUT <file.ko>
#                          [BINARY_DIR <dir>])
#
#   Adds the custom target <target> (part of ALL) that, for each flavour,
#   copies SOURCE_DIR into BINARY_DIR/<flavour>/ (rsync --checksum: files
#   whose content did not change keep their timestamps and are not rebuilt)
#   and runs `make -C <kernel>/build M=BINARY_DIR/<flavour> modules W=1`
#   there, producing BINARY_DIR/<flavour>/<file.ko>. BINARY_DIR defaults to
#   the current binary directory. The source tree's root is passed to make
#   as NEURON_SRC_DIR, for Kbuild files that include hw/ or uapi/.
#
#   If SOURCE_DIR has no Kbuild file yet, the target does nothing.
#   The path of each flavour's module is stored in the target property
#   NEURON_KMOD_<flavour> (e.g. NEURON_KMOD_stock).

set(NEURON_KERNEL_FLAVOURS stock)
if(NEURON_KERNEL_DEBUG)
  list(APPEND NEURON_KERNEL_FLAVOURS debug)
endif()

set(_neuron_kmod_build_script ${CMAKE_CURRENT_LIST_DIR}/NeuronKmodBuild.cmake)
cmake_host_system_information(RESULT _neuron_kmod_jobs QUERY NUMBER_OF_LOGICAL_CORES)

function(neuron_add_kernel_module)
  cmake_parse_arguments(ARG "" "NAME;SOURCE_DIR;OUTPUT;BINARY_DIR" "" ${ARGN})
  foreach(_required NAME SOURCE_DIR OUTPUT)
    if(NOT ARG_${_required})
      message(FATAL_ERROR "neuron_add_kernel_module: ${_required} is required")
    endif()
  endforeach()
  if(NOT ARG_BINARY_DIR)
    set(ARG_BINARY_DIR ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  get_filename_component(_src ${ARG_SOURCE_DIR} ABSOLUTE)

  set(_commands)
  set(_outputs)
  foreach(_flavour IN LISTS NEURON_KERNEL_FLAVOURS)
    string(TOUPPER ${_flavour} _upper)
    set(_kernel ${NEURON_KERNEL_${_upper}})
    set(_out ${ARG_BINARY_DIR}/${_flavour}/${ARG_OUTPUT})
    list(APPEND _outputs ${_out})
    list(APPEND _commands COMMAND ${CMAKE_COMMAND}
      -DNAME=${ARG_NAME}
      -DFLAVOUR=${_flavour}
      -DSOURCE_DIR=${_src}
      -DBINARY_DIR=${ARG_BINARY_DIR}/${_flavour}
      -DKERNEL_BUILD_DIR=${_kernel}/build
      -DNEURON_SRC_DIR=${PROJECT_SOURCE_DIR}
      -DOUTPUT=${ARG_OUTPUT}
      -DJOBS=${_neuron_kmod_jobs}
      -P ${_neuron_kmod_build_script})
    set_property(DIRECTORY APPEND PROPERTY ADDITIONAL_CLEAN_FILES ${ARG_BINARY_DIR}/${_flavour})
  endforeach()

  add_custom_target(${ARG_NAME} ALL
    ${_commands}
    BYPRODUCTS ${_outputs}
    WORKING_DIRECTORY ${ARG_BINARY_DIR}
    COMMENT "Building ${ARG_OUTPUT} for the ${NEURON_KERNEL_FLAVOURS} kernel(s)"
    VERBATIM)
  foreach(_flavour IN LISTS NEURON_KERNEL_FLAVOURS)
    set_property(TARGET ${ARG_NAME} PROPERTY NEURON_KMOD_${_flavour}
                 ${ARG_BINARY_DIR}/${_flavour}/${ARG_OUTPUT})
  endforeach()
endfunction()
