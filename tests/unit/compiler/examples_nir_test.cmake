# The graphs of examples/nir/ as the docs use them: neuron-cc writes
# INPUT.nprog by default, neuron-run runs it on the simulator within the
# graph's reference bounds, and refuses the .nir itself saying how to
# compile it; neuron-cc's write errors say why; standard input needs -o.
#
#   cmake -DNEURON_CC=<neuron-cc> -DNEURON_RUN=<neuron-run> -DEXAMPLES=<examples/nir>
#         -DWORK=<dir> -P examples_nir_test.cmake

include(${CMAKE_CURRENT_LIST_DIR}/run_command.cmake)

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
# The simulator's published counters, of this test only.
set(ENV{NEURON_SIM_DIR} ${WORK}/sim)
unset(ENV{NEURON_DEVICE})

file(GLOB graphs ${EXAMPLES}/*.nir)
list(LENGTH graphs n)
if(n EQUAL 0)
  message(FATAL_ERROR "no graph in ${EXAMPLES}")
endif()
foreach(graph IN LISTS graphs)
  get_filename_component(name ${graph} NAME_WE)
  file(COPY ${graph} DESTINATION ${WORK})
  run(0 ${NEURON_CC} ${WORK}/${name}.nir)
  if(NOT EXISTS ${WORK}/${name}.nprog)
    message(FATAL_ERROR "neuron-cc ${name}.nir wrote no ${name}.nprog")
  endif()
  if(NOT err MATCHES "neuron-cc: wrote ${WORK}/${name}.nprog \\([0-9]+ bytes\\)")
    message(FATAL_ERROR "neuron-cc ${name}.nir: ${err}")
  endif()
  run(0 ${NEURON_RUN} ${WORK}/${name}.nprog -d sim --seed 1 --check ${graph})
  run(2 ${NEURON_RUN} ${graph} -d sim --seed 1)
  if(NOT err MATCHES "an IR file, not a program container: compile it first \\(neuron-cc ")
    message(FATAL_ERROR "neuron-run ${name}.nir: ${err}")
  endif()
endforeach()

# Only printing writes nothing.
file(REMOVE ${WORK}/mlp.nprog)
run(0 ${NEURON_CC} ${WORK}/mlp.nir --dump)
if(EXISTS ${WORK}/mlp.nprog)
  message(FATAL_ERROR "neuron-cc --dump wrote mlp.nprog")
endif()
# A file that cannot be written, and standard input without -o.
run(1 ${NEURON_CC} ${WORK}/mlp.nir -o ${WORK}/no-such-dir/mlp.nprog)
if(NOT err MATCHES "mlp.nprog: cannot create the program file: No such file or directory")
  message(FATAL_ERROR "neuron-cc -o into a missing directory: ${err}")
endif()
# neuron-run's output directory, made before the run: one that cannot be says why.
run(0 ${NEURON_CC} ${WORK}/mlp.nir)
run(1 ${NEURON_RUN} ${WORK}/mlp.nprog -d sim --seed 1 -o ${WORK}/mlp.nir/out)
if(NOT err MATCHES "^neuron-run: -o [^ ]*/mlp.nir/out: cannot create the directory: Not a directory\n$")
  message(FATAL_ERROR "neuron-run -o under a file: ${err}")
endif()
run(2 ${NEURON_CC} -)
if(NOT err MATCHES "^neuron-cc: reading standard input: name the program container with -o")
  message(FATAL_ERROR "neuron-cc - without -o: ${err}")
endif()
