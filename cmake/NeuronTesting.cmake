# Test registration helpers shared by the whole tree.
#
# neuron_add_unit_test(NAME n SOURCES ... [LIBS ...] [TIMEOUT s])
#   A cmocka test executable run on the host, label "unit".
#
# neuron_add_vm_test(NAME n COMMAND cmd args... [TIMEOUT s] [DEVICES k]
#                    [DEVICE_PROPS key=val...] [MEMORY size]
#                    [OWN_BOOT [NO_NEURON] [TIMED] [HARNESS_ARGS a...] [LABELS l...]]
#                    [VARIANTS v...] [ALLOW_TAINT flags]
#                    [ALLOW_KNOWN_SPLAT name...])
#   A test that runs inside a VM (tests/vm/neuron-vm) with neuron.ko loaded,
#   label "vm", registered once per kernel variant as vm.<variant>.<n>.
#   Variants: stock, stock-iommu, and debug-iommu when a debug kernel is
#   set up; VARIANTS names others (debug: the debug kernel without an
#   IOMMU) or fewer. COMMAND runs through /bin/sh in the guest, chrooted
#   into the host's root, so host-built binaries can be named directly
#   ($<TARGET_FILE:...> works); TIMEOUT defaults to 120 s, DEVICES (neuron
#   devices in the VM) to 1. DEVICE_PROPS are properties of
#   every neuron device (`neuron-vm run --device-prop`), MEMORY the guest's
#   memory (`--memory`, default: the harness's).
#
#   All tests of a variant with the same DEVICES, DEVICE_PROPS and MEMORY
#   share one boot: a CTest fixture test vm.<variant>.boot
#   (vm.<variant>.dev<k>.boot when k != 1, with a suffix made of the
#   properties and memory when they are set, e.g. .mem_size_512M.mem2G)
#   runs them all from a list file and fails only if the VM could not run
#   the list; vm.<variant>.<n> then reports the test's own verdict (its
#   exit status and any kernel splat between its begin and end markers), and
#   vm.<variant>.kernel-log fails on any splat or bad taint in the boot.
#   OWN_BOOT tests (module load/unload cycles, device resets, ...) get a boot
#   of their own: one plain test that runs `neuron-vm run -- COMMAND`; with
#   NO_NEURON that boot loads no neuron.ko (for tests that load it
#   themselves, e.g. with modprobe), HARNESS_ARGS added to its
#   `neuron-vm run` (e.g. --nvme 1G) and LABELS added to "vm". An OWN_BOOT
#   test takes one CTest processor and may run beside another test; a TIMED
#   one (job timeouts, unplugs, races: timed against the host) takes both,
#   so nothing else runs while it does.
#   ALLOW_TAINT names kernel taint flags (letters of /proc/sys/kernel/tainted,
#   e.g. N: a KUnit suite ran) that the test may raise without failing the
#   boot's kernel-log verdict (`neuron-vm run --allow-taint`); raised by any
#   other test of the boot, they still fail it.
#   ALLOW_KNOWN_SPLAT names known kernel bugs (the table KNOWN_SPLATS of
#   tests/vm/neuron-vm) whose warning the test may hit without failing
#   (`neuron-vm run --allow-known-splat`): only a warning that matches the
#   bug's signature in full, in this test; the W taint it raises only if
#   every splat of the test was such a one.

find_package(PkgConfig REQUIRED)
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)

function(neuron_add_unit_test)
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_link_libraries(${ARG_NAME} PRIVATE PkgConfig::CMOCKA neuron_warnings ${ARG_LIBS})
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS unit TIMEOUT ${ARG_TIMEOUT})
endfunction()

# --- VM tests -------------------------------------------------------------------

set(NEURON_VM_HARNESS ${CMAKE_CURRENT_LIST_DIR}/../tests/vm/neuron-vm)
get_filename_component(NEURON_VM_HARNESS ${NEURON_VM_HARNESS} ABSOLUTE)
set(NEURON_VM_RESULTS_DIR ${CMAKE_BINARY_DIR}/tests/vm/results)

# Seconds a boot may take on top of its tests' timeouts.
set(_neuron_vm_boot_allowance_stock 120)
set(_neuron_vm_boot_allowance_debug 400)

# The kernel variants VM tests can run on (@out) and those a test without
# VARIANTS runs on (@out_default). The debug kernel without an IOMMU is not
# a default: debug-iommu runs the same driver code under the same checks
# (KASAN, lockdep, kmemleak, DMA-API debugging) with the stricter DMA
# mapping, so a second debug boot of every test would find nothing new at
# the price of the slowest boot of the suite. Tests that need the debug
# kernel's own facilities without an IOMMU (fault injection, KUnit, the
# soak, PCI removal) name it.
function(neuron_vm_variants out out_default)
  set(_variants stock stock-iommu)
  set(_default stock stock-iommu)
  if(NEURON_KERNEL_DEBUG)
    list(APPEND _variants debug debug-iommu)
    list(APPEND _default debug-iommu)
  endif()
  set(${out} ${_variants} PARENT_SCOPE)
  set(${out_default} ${_default} PARENT_SCOPE)
endfunction()

# Arguments of `neuron-vm run` for a variant (without tests); the optional
# arguments after @devices are the device properties (a list) and memory.
function(neuron_vm_run_args out variant devices)
  set(_props)
  set(_memory)
  if(ARGC GREATER 3)
    set(_props "${ARGV3}")
  endif()
  if(ARGC GREATER 4)
    set(_memory "${ARGV4}")
  endif()
  string(REGEX REPLACE "-iommu$" "" _flavour ${variant})
  # Set by emu/CMakeLists.txt, which builds QEMU.
  set(_qemu ${NEURON_QEMU})
  set(_firmware ${NEURON_QEMU_FIRMWARE})
  set(_args --kernel ${_flavour} --devices ${devices} --qemu ${_qemu}
            --firmware ${_firmware} --cache ${NEURON_CACHE_DIR}
            --module ${CMAKE_BINARY_DIR}/kmod/${_flavour}/neuron.ko)
  if(variant MATCHES "-iommu$")
    list(APPEND _args --iommu)
  endif()
  foreach(_prop IN LISTS _props)
    list(APPEND _args --device-prop ${_prop})
  endforeach()
  if(_memory)
    list(APPEND _args --memory ${_memory})
  endif()
  set(${out} ${_args} PARENT_SCOPE)
  # CTest reports a missing QEMU or module as "Not Run", naming the file.
  set(${out}_files ${_qemu} ${CMAKE_BINARY_DIR}/kmod/${_flavour}/neuron.ko PARENT_SCOPE)
endfunction()

# Quote one argument for /bin/sh (generator expressions stay intact).
function(_neuron_vm_shell_quote out arg)
  if(arg MATCHES "^[A-Za-z0-9_./=:,+@%-]+$")
    set(${out} "${arg}" PARENT_SCOPE)
  else()
    string(REPLACE "'" "'\\''" arg "${arg}")
    set(${out} "'${arg}'" PARENT_SCOPE)
  endif()
endfunction()

function(neuron_add_vm_test)
  cmake_parse_arguments(ARG "OWN_BOOT;NO_NEURON;TIMED" "NAME;TIMEOUT;DEVICES;MEMORY;ALLOW_TAINT"
                        "COMMAND;VARIANTS;DEVICE_PROPS;HARNESS_ARGS;LABELS;ALLOW_KNOWN_SPLAT"
                        ${ARGN})
  if(NOT ARG_NAME OR NOT ARG_COMMAND)
    message(FATAL_ERROR "neuron_add_vm_test: NAME and COMMAND are required")
  endif()
  if(NOT ARG_NAME MATCHES "^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
    message(FATAL_ERROR "neuron_add_vm_test: bad test name '${ARG_NAME}'")
  endif()
  if((ARG_NO_NEURON OR ARG_TIMED OR ARG_HARNESS_ARGS OR ARG_LABELS) AND NOT ARG_OWN_BOOT)
    message(FATAL_ERROR
            "neuron_add_vm_test: NO_NEURON, TIMED, HARNESS_ARGS and LABELS need OWN_BOOT")
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  if(NOT DEFINED ARG_DEVICES)
    set(ARG_DEVICES 1)
  endif()
  neuron_vm_variants(_all _default)
  if(ARG_VARIANTS)
    set(_variants)
    foreach(_v IN LISTS ARG_VARIANTS)
      if(_v IN_LIST _all)
        list(APPEND _variants ${_v})
      endif()
    endforeach()
  else()
    set(_variants ${_default})
  endif()

  set(_words)
  foreach(_arg IN LISTS ARG_COMMAND)
    _neuron_vm_shell_quote(_q "${_arg}")
    list(APPEND _words "${_q}")
  endforeach()
  list(JOIN _words " " _command)

  if(ARG_OWN_BOOT)
    set(_harness_args ${ARG_HARNESS_ARGS})
    if(DEFINED ARG_ALLOW_TAINT)  # "N" is false to if(<variable>)
      # The single command of a run is named "command" (neuron-vm).
      list(APPEND _harness_args --allow-taint command:${ARG_ALLOW_TAINT})
    endif()
    foreach(_splat IN LISTS ARG_ALLOW_KNOWN_SPLAT)
      list(APPEND _harness_args --allow-known-splat command:${_splat})
    endforeach()
    foreach(_variant IN LISTS _variants)
      _neuron_vm_add_own_boot_test(${_variant} ${ARG_NAME} ${ARG_TIMEOUT} ${ARG_DEVICES}
                                   "${_command}" "${ARG_DEVICE_PROPS}" "${ARG_MEMORY}"
                                   "${ARG_NO_NEURON}" "${ARG_TIMED}" "${_harness_args}"
                                   "${ARG_LABELS}")
    endforeach()
    return()
  endif()

  # Device properties and guest memory make a boot of their own.
  set(_suffix)
  foreach(_prop IN LISTS ARG_DEVICE_PROPS)
    string(MAKE_C_IDENTIFIER "${_prop}" _id)
    string(APPEND _suffix .${_id})
  endforeach()
  if(ARG_MEMORY)
    string(MAKE_C_IDENTIFIER "mem${ARG_MEMORY}" _id)
    string(APPEND _suffix .${_id})
  endif()

  foreach(_variant IN LISTS _variants)
    set(_group ${_variant})
    if(NOT ARG_DEVICES EQUAL 1)
      set(_group ${_variant}.dev${ARG_DEVICES})
    endif()
    string(APPEND _group "${_suffix}")
    set_property(GLOBAL APPEND PROPERTY NEURON_VM_GROUPS ${_group})
    set_property(GLOBAL APPEND PROPERTY NEURON_VM_GROUP_${_group}_TESTS ${ARG_NAME})
    set_property(GLOBAL PROPERTY NEURON_VM_GROUP_${_group}_VARIANT ${_variant})
    set_property(GLOBAL PROPERTY NEURON_VM_GROUP_${_group}_DEVICES ${ARG_DEVICES})
    set_property(GLOBAL PROPERTY NEURON_VM_GROUP_${_group}_PROPS "${ARG_DEVICE_PROPS}")
    set_property(GLOBAL PROPERTY NEURON_VM_GROUP_${_group}_MEMORY "${ARG_MEMORY}")
    # One line of the list file: name<TAB>timeout<TAB>command.
    set_property(GLOBAL APPEND_STRING PROPERTY NEURON_VM_GROUP_${_group}_LIST
                 "${ARG_NAME}\t${ARG_TIMEOUT}\t${_command}\n")
    set_property(GLOBAL APPEND PROPERTY NEURON_VM_GROUP_${_group}_TIMEOUTS ${ARG_TIMEOUT})
    if(DEFINED ARG_ALLOW_TAINT)  # "N" is false to if(<variable>)
      set_property(GLOBAL APPEND PROPERTY NEURON_VM_GROUP_${_group}_HARNESS_ARGS
                   --allow-taint ${ARG_NAME}:${ARG_ALLOW_TAINT})
    endif()
    foreach(_splat IN LISTS ARG_ALLOW_KNOWN_SPLAT)
      set_property(GLOBAL APPEND PROPERTY NEURON_VM_GROUP_${_group}_HARNESS_ARGS
                   --allow-known-splat ${ARG_NAME}:${_splat})
    endforeach()
  endforeach()

  get_property(_deferred GLOBAL PROPERTY NEURON_VM_DEFERRED)
  if(NOT _deferred)
    set_property(GLOBAL PROPERTY NEURON_VM_DEFERRED TRUE)
    cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _neuron_vm_add_boots)
  endif()
endfunction()

function(_neuron_vm_add_own_boot_test variant name timeout devices command props memory
                                     no_neuron timed harness_args labels)
  string(REGEX REPLACE "-iommu$" "" _flavour ${variant})
  math(EXPR _boot_timeout "${timeout} + ${_neuron_vm_boot_allowance_${_flavour}}")
  math(EXPR _ctest_timeout "${_boot_timeout} + 60")
  neuron_vm_run_args(_args ${variant} ${devices} "${props}" "${memory}")
  if(no_neuron)
    list(FIND _args --module _i)
    list(REMOVE_AT _args ${_i})
    list(REMOVE_AT _args ${_i})
    list(APPEND _args --no-neuron)
  endif()
  add_test(NAME vm.${variant}.${name}
           COMMAND ${NEURON_VM_HARNESS} run ${_args} ${harness_args} --test-timeout ${timeout}
                   --timeout ${_boot_timeout} -- /bin/sh -c "${command}")
  set(_processors 1)
  if(timed)
    set(_processors 2)
  endif()
  set_tests_properties(vm.${variant}.${name} PROPERTIES
    LABELS "vm;${labels}" TIMEOUT ${_ctest_timeout} PROCESSORS ${_processors}
    REQUIRED_FILES "${_args_files}")
endfunction()

# Deferred to the end of the top-level directory: one boot per group.
function(_neuron_vm_add_boots)
  get_property(_groups GLOBAL PROPERTY NEURON_VM_GROUPS)
  list(REMOVE_DUPLICATES _groups)
  foreach(_group IN LISTS _groups)
    get_property(_tests GLOBAL PROPERTY NEURON_VM_GROUP_${_group}_TESTS)
    get_property(_variant GLOBAL PROPERTY NEURON_VM_GROUP_${_group}_VARIANT)
    get_property(_devices GLOBAL PROPERTY NEURON_VM_GROUP_${_group}_DEVICES)
    get_property(_props GLOBAL PROPERTY NEURON_VM_GROUP_${_group}_PROPS)
    get_property(_memory GLOBAL PROPERTY NEURON_VM_GROUP_${_group}_MEMORY)
    get_property(_list GLOBAL PROPERTY NEURON_VM_GROUP_${_group}_LIST)
    get_property(_timeouts GLOBAL PROPERTY NEURON_VM_GROUP_${_group}_TIMEOUTS)
    get_property(_harness_args GLOBAL PROPERTY NEURON_VM_GROUP_${_group}_HARNESS_ARGS)
    string(REGEX REPLACE "-iommu$" "" _flavour ${_variant})

    set(_boot_timeout ${_neuron_vm_boot_allowance_${_flavour}})
    foreach(_t IN LISTS _timeouts)
      math(EXPR _boot_timeout "${_boot_timeout} + ${_t}")
    endforeach()
    math(EXPR _ctest_timeout "${_boot_timeout} + 60")

    set(_list_file ${CMAKE_BINARY_DIR}/tests/vm/lists/${_group}.list)
    set(_results ${NEURON_VM_RESULTS_DIR}/${_group})
    file(GENERATE OUTPUT ${_list_file} CONTENT "${_list}")
    file(MAKE_DIRECTORY ${_results})

    set(_fixture neuron_vm_${_group})
    neuron_vm_run_args(_args ${_variant} ${_devices} "${_props}" "${_memory}")
    add_test(NAME vm.${_group}.boot
             COMMAND ${NEURON_VM_HARNESS} run ${_args} ${_harness_args} --list ${_list_file}
                     --results ${_results} --verdict boot --timeout ${_boot_timeout})
    # One processor, so that the host tests run beside a boot. Two boots
    # at once each ran about 1.4x slower than alone (2026-12-03), no faster
    # in sum. TIMED OWN_BOOT tests keep the machine to themselves.
    set_tests_properties(vm.${_group}.boot PROPERTIES
      LABELS vm FIXTURES_SETUP ${_fixture} TIMEOUT ${_ctest_timeout} PROCESSORS 1
      REQUIRED_FILES "${_args_files}")

    add_test(NAME vm.${_group}.kernel-log
             COMMAND ${NEURON_VM_HARNESS} kernel-log --results ${_results})
    set_tests_properties(vm.${_group}.kernel-log PROPERTIES
      LABELS vm FIXTURES_REQUIRED ${_fixture} TIMEOUT 30)

    foreach(_name IN LISTS _tests)
      add_test(NAME vm.${_variant}.${_name}
               COMMAND ${NEURON_VM_HARNESS} result --results ${_results} ${_name})
      set_tests_properties(vm.${_variant}.${_name} PROPERTIES
        LABELS vm FIXTURES_REQUIRED ${_fixture} TIMEOUT 30)
    endforeach()
  endforeach()
endfunction()
