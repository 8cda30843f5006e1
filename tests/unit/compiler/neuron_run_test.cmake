# neuron-run on the simulator device: every corpus graph compiled by
# neuron-cc, run with generated inputs and checked against the compiler's
# reference; inputs from .npy and raw files (the outputs of a first run);
# a container checked against a changed graph (other weights) fails with
# the elements that differ; wrong input files and missing inputs are
# refused with the input's name, type and the file's size.
#
#   cmake -DNEURON_CC=<neuron-cc> -DNEURON_RUN=<neuron-run> -DCORPUS=<dir> -DWORK=<dir>
#         [-DSKIP=<graph;...>] -P neuron_run_test.cmake
#
# SKIP names corpus graphs (file names without .nir) not to run.

cmake_policy(SET CMP0057 NEW)  # if(IN_LIST), as the project has it
include(${CMAKE_CURRENT_LIST_DIR}/run_command.cmake)

function(expect text pattern)
  if(NOT text MATCHES "${pattern}")
    message(FATAL_ERROR "no match for '${pattern}' in:\n${text}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# Every graph of the corpus, compiled and checked.
file(GLOB graphs ${CORPUS}/*.nir)
foreach(name IN LISTS SKIP)
  if(NOT EXISTS ${CORPUS}/${name}.nir)
    message(FATAL_ERROR "SKIP names ${name}, which is not a graph of ${CORPUS}")
  endif()
endforeach()
foreach(g ${graphs})
  get_filename_component(name ${g} NAME_WE)
  if(name IN_LIST SKIP)
    message(STATUS "${name}: skipped (SKIP)")
    continue()
  endif()
  run(0 ${NEURON_CC} ${g} -o ${WORK}/${name}.nprog)
  run(0 ${NEURON_RUN} ${WORK}/${name}.nprog --device sim --seed 1 --check ${g})
  expect("${out}" "PASS: every output within its bound")
  message(STATUS "${name}:\n${out}")
  # The bound carried through the encoder layer (deep) and through the
  # chain's division by inputs near 0 (uniform in [-1, 1)) is wider than
  # the values: the output is held to its last operator's own bound.
  if(name STREQUAL "encoder_768_fp32" OR name STREQUAL "chain_bf16")
    expect("${out}" ": .* of the output operator's own bound \\(carried through the graph it reaches ([0-9.e+]+|inf), wider")
  elseif(name STREQUAL "deep_moved_fp32")
    # Every output moves the final layer_norm's values (and the input's):
    # each is held to that layer_norm's own bound, moved with the values.
    foreach(o "t fp32\\[129, 200\\]" "r fp32\\[200, 3, 43\\]" "s fp32\\[200, 99\\]" "c fp32\\[200, 258\\]" "p1 fp32\\[200, 100\\]")
      expect("${out}" "${o}: [0-9]+ elements, .* of the own bound of 'n2' \\(layer_norm\\), moved to the output \\(carried through the graph it reaches inf, wider than the values, up to [0-9.]+\\): within")
    endforeach()
  else()
    expect("${out}" "of the bound carried through the graph: within")
  endif()
endforeach()

# The MLP compiled for a core with 6000 bytes of SBUF per partition: its
# second weight streamed from device memory, checked the same way.
run(0 ${NEURON_CC} --sbuf-bytes 6000 ${CORPUS}/mlp_bf16.nir -o ${WORK}/mlp_streamed.nprog)
run(0 ${NEURON_RUN} ${WORK}/mlp_streamed.nprog --device sim --seed 1 --check ${CORPUS}/mlp_bf16.nir)
expect("${out}" "PASS: every output within its bound")

set(mlp ${WORK}/mlp_bf16.nprog)
set(ir ${CORPUS}/mlp_bf16.nir)
run(0 ${NEURON_RUN} ${mlp} -d sim --seed 1 --check ${ir} -o ${WORK}/first)
expect("${out}" "input x bf16\\[200, 129\\]: generated, seed 1")
expect("${out}" "y bf16\\[200, 129\\]: 25800 elements, max \\|device - reference\\| [0-9.e-]+, at most [0-9.e-]+ of the bound carried through the graph: within")
expect("${out}" "output y bf16\\[200, 129\\]: .*first/y.npy")
file(READ ${WORK}/first/y.npy magic LIMIT 6 HEX)
if(NOT magic STREQUAL "934e554d5059")
  message(FATAL_ERROR "first/y.npy is not a .npy file: ${magic}")
endif()

# y has x's type: the first run's output is the next run's input, as .npy
# (fp32 values rounded to bf16) and as raw bf16.
run(0 ${NEURON_RUN} ${mlp} -d sim -i x=${WORK}/first/y.npy --check ${ir})
expect("${out}" "input x bf16\\[200, 129\\]: .*first/y.npy")
expect("${out}" "PASS")
run(0 ${NEURON_RUN} ${mlp} -d sim -i x=${WORK}/first/y.npy -o ${WORK}/raw --raw)
file(SIZE ${WORK}/raw/y.bin size)
if(NOT size EQUAL 51600)
  message(FATAL_ERROR "raw/y.bin: ${size} bytes, want 200 * 129 * 2")
endif()
run(0 ${NEURON_RUN} ${mlp} -d sim -i x=${WORK}/raw/y.bin --check ${ir})
expect("${out}" "PASS")

# The container against a graph whose second weight differs: the device's
# y is not the reference's.
file(READ ${ir} text)
string(REPLACE "uniform(seed=13," "uniform(seed=14," changed "${text}")
if(changed STREQUAL text)
  message(FATAL_ERROR "mlp_bf16.nir has no w2 of seed 13")
endif()
file(WRITE ${WORK}/mlp_changed.nir "${changed}")
run(6 ${NEURON_RUN} ${mlp} -d sim -i x=${WORK}/first/y.npy --check ${WORK}/mlp_changed.nir)
expect("${out}" "y bf16\\[200, 129\\]: 25800 elements, .* [0-9]+ beyond the bound")
expect("${out}" "  y\\[[0-9]+, [0-9]+\\]: device [-0-9.e]+, reference [-0-9.e]+, \\|difference\\| [0-9.e-]+, bound [0-9.e-]+")
expect("${out}" "FAIL: an output differs from the reference beyond its bound")

# Wrong inputs: the message names the input, its type and size, and the file's.
file(WRITE ${WORK}/short.bin "abc")
run(1 ${NEURON_RUN} ${mlp} -d sim -i x=${WORK}/short.bin)
expect("${err}" "input 'x' \\(bf16\\[200, 129\\], 51600 bytes\\): .*short.bin has 3 bytes")
run(1 ${NEURON_RUN} ${WORK}/norm_block_fp32.nprog -d sim -i x=${WORK}/first/y.npy)
expect("${err}" "input 'x' \\(fp32\\[2, 127, 300\\], 304800 bytes\\): .*y.npy holds an array of shape \\(200, 129\\), not the input's")
run(2 ${NEURON_RUN} ${mlp} -d sim)
expect("${err}" "input 'x' \\(bf16\\[200, 129\\], 51600 bytes\\) is not given: name a file with -i x=FILE, or generate it with --seed N")
run(2 ${NEURON_RUN} ${mlp} -d sim -i w=${WORK}/short.bin)
expect("${err}" "program 'mlp_bf16' has no input 'w' \\(its inputs: x\\)")
# A graph that is not the program's.
run(1 ${NEURON_RUN} ${mlp} -d sim --seed 1 --check ${CORPUS}/norm_block_fp32.nir)
expect("${err}" "norm_block_fp32.nir: the graph's input 'x' \\(fp32\\[2, 127, 300\\]\\)|'x' is fp32\\[2, 127, 300\\] in the graph, bf16\\[200, 129\\] in the program")
