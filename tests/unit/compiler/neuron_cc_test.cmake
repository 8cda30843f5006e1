# neuron-cc from the command line: compiles an IR file to a container that
# validates, prints a canonical form that is a fixed point, reports the
# pass times, and fails with file:line:column for bad IR; its man page
# documents the options --help lists.
#
#   cmake -DNEURON_CC=<neuron-cc> -DCORPUS=<dir> -DWORK=<dir> -DMAN_PAGE=<neuron-cc.1>
#         -P neuron_cc_test.cmake

include(${CMAKE_CURRENT_LIST_DIR}/run_command.cmake)

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

run(0 ${NEURON_CC} ${CORPUS}/mlp_bf16.nir -o ${WORK}/mlp.nprog --time-passes)
foreach(pass check fuse memory emit build total)
  if(NOT out MATCHES "${pass} +[0-9.]+ ms")
    message(FATAL_ERROR "--time-passes: no line for '${pass}':\n${out}")
  endif()
endforeach()
file(SIZE ${WORK}/mlp.nprog size)
file(READ ${WORK}/mlp.nprog magic LIMIT 4 HEX)
if(size LESS 1024 OR NOT magic STREQUAL "4e524e46") # "NRNF"
  message(FATAL_ERROR "mlp.nprog: ${size} bytes, magic '${magic}'")
endif()

run(0 ${NEURON_CC} --disassemble ${CORPUS}/attention_fp32.nir)
if(NOT out MATCHES "stream tensor" OR NOT out MATCHES "matmul psum")
  message(FATAL_ERROR "--disassemble:\n${out}")
endif()

run(0 ${NEURON_CC} --dump ${CORPUS}/heads_fp32.nir)
file(WRITE ${WORK}/heads.nir "${out}")
set(first "${out}")
run(0 ${NEURON_CC} --dump ${WORK}/heads.nir)
if(NOT out STREQUAL first)
  message(FATAL_ERROR "--dump is not a fixed point:\n${first}\n---\n${out}")
endif()

file(WRITE ${WORK}/bad.nir "graph bad\ninput x: fp32[4, 3]\ny = matmul(x, x)\noutput y\n")
run(1 ${NEURON_CC} ${WORK}/bad.nir -o ${WORK}/bad.nprog)
if(NOT err MATCHES "bad.nir:3:1: 'y' \\(matmul\\) of x: fp32\\[4, 3\\], x: fp32\\[4, 3\\]: contraction sizes differ")
  message(FATAL_ERROR "bad IR: ${err}")
endif()
if(EXISTS ${WORK}/bad.nprog)
  message(FATAL_ERROR "a failed compilation left bad.nprog")
endif()

# --isa: the target device's ISA. layer_norm needs ISA 1.1's rsqrt.
run(1 ${NEURON_CC} --isa 1.0 ${CORPUS}/norm_block_fp32.nir -o ${WORK}/norm.nprog)
if(NOT err MATCHES "needs activate.rsqrt, an instruction of ISA 1.1, but the target device implements ISA 1.0")
  message(FATAL_ERROR "--isa 1.0 with layer_norm: ${err}")
endif()
run(0 ${NEURON_CC} --isa 1.1 ${CORPUS}/norm_block_fp32.nir -o ${WORK}/norm.nprog)
run(0 ${NEURON_CC} --isa 1.0 --disassemble ${CORPUS}/mlp_bf16.nir)
if(NOT out MATCHES "ISA 1.0,")
  message(FATAL_ERROR "--isa 1.0 MLP does not declare ISA 1.0:\n${out}")
endif()
run(2 ${NEURON_CC} --isa one ${CORPUS}/mlp_bf16.nir)
if(NOT err MATCHES "--isa 'one': expected MAJOR.MINOR")
  message(FATAL_ERROR "--isa one: ${err}")
endif()

# --sbuf-bytes: a core with less SBUF. At 6000 bytes per partition the
# MLP's second weight, live at the peak, stays in device memory; at 5000
# it does not fit with that weight streamed and its 200 rows in chunks of
# 128 either, and the step at the peak is named.
run(0 ${NEURON_CC} --sbuf-bytes 6000 --dump-plan ${CORPUS}/mlp_bf16.nir)
if(NOT out MATCHES "SBUF: 5824 bytes" OR NOT out MATCHES "w2 +const +streamed from device memory"
   OR out MATCHES "w1 +const +streamed" OR out MATCHES "chunks")
  message(FATAL_ERROR "--sbuf-bytes 6000:\n${out}")
endif()
run(1 ${NEURON_CC} --sbuf-bytes 5000 ${CORPUS}/mlp_bf16.nir -o ${WORK}/small.nprog)
if(NOT err MATCHES "'o' \\(matmul of a: bf16\\[200, 300\\], w2: bf16\\[300, 129\\] -> bf16\\[200, 129\\]\\): graph 'mlp_bf16' needs 6336 bytes of SBUF per partition at its peak, the core has 5000; live then: w1 1216 bytes, .* \\(streamed: w2\\) \\(in chunks of 128 rows\\)\\. .* it does not fit in chunks of 128 rows either")
  message(FATAL_ERROR "--sbuf-bytes 5000: ${err}")
endif()

# The man page's OPTIONS name the long options of --help, no more, no less.
function(long_options text var)
  string(REPLACE "\\-" "-" text "${text}")
  string(REGEX REPLACE "\\\\f[BIRP]" "" text "${text}")
  string(REGEX MATCHALL "--[a-z][a-z0-9-]*" opts "${text}")
  list(REMOVE_DUPLICATES opts)
  list(SORT opts)
  set(${var} "${opts}" PARENT_SCOPE)
endfunction()
run(0 ${NEURON_CC} --help)
long_options("${out}" help)
file(READ ${MAN_PAGE} page)
string(FIND "${page}" ".SH OPTIONS" begin)
string(FIND "${page}" ".SH EXIT STATUS" end)
if(begin EQUAL -1 OR end LESS begin)
  message(FATAL_ERROR "${MAN_PAGE}: no OPTIONS section before EXIT STATUS")
endif()
math(EXPR length "${end} - ${begin}")
string(SUBSTRING "${page}" ${begin} ${length} options)
long_options("${options}" man)
if(NOT help STREQUAL man)
  message(FATAL_ERROR "--help has ${help}, ${MAN_PAGE} has ${man}")
endif()
