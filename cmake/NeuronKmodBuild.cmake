# Build step of neuron_add_kernel_module() (cmake/NeuronKmod.cmake), run as
#   cmake -DNAME=... -DFLAVOUR=... -DSOURCE_DIR=... -DBINARY_DIR=...
#         -DKERNEL_BUILD_DIR=... -DNEURON_SRC_DIR=...
#         -DOUTPUT=... -DJOBS=... -P NeuronKmodBuild.cmake

if(NOT EXISTS ${SOURCE_DIR}/Kbuild)
  message(STATUS "${NAME}: ${SOURCE_DIR}/Kbuild does not exist yet; nothing to build")
  return()
endif()
if(NOT EXISTS ${KERNEL_BUILD_DIR}/Makefile)
  message(FATAL_ERROR "${NAME}: no kernel build directory at ${KERNEL_BUILD_DIR}; "
                      "run scripts/setup-deps")
endif()

# Build products that must never be copied from a source tree someone ran
# make in.
set(_excludes
  --exclude=*.o --exclude=*.ko --exclude=*.mod --exclude=*.mod.c --exclude=.*.cmd
  --exclude=*.a --exclude=Module.symvers --exclude=modules.order --exclude=.tmp_versions)

function(_sync from to)
  file(MAKE_DIRECTORY ${to})
  # No -t: a changed file gets a new timestamp, so make rebuilds what
  # depends on it even if its source timestamp went back in time.
  execute_process(COMMAND rsync -rlp --checksum ${_excludes} ${from}/ ${to}/
                  COMMAND_ERROR_IS_FATAL ANY)
endfunction()

_sync(${SOURCE_DIR} ${BINARY_DIR})

execute_process(
  COMMAND make -C ${KERNEL_BUILD_DIR} M=${BINARY_DIR} NEURON_SRC_DIR=${NEURON_SRC_DIR}
          modules W=1 -j${JOBS}
  RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${NAME}: building ${OUTPUT} for the ${FLAVOUR} kernel failed")
endif()
if(NOT EXISTS ${BINARY_DIR}/${OUTPUT})
  message(FATAL_ERROR "${NAME}: make succeeded but ${BINARY_DIR}/${OUTPUT} does not exist")
endif()
