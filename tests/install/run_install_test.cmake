# Installs libneuron (component "neuron") and the compiler ("compiler") into a temporary prefix and builds
# the consumer programs against it, once through find_package(neuron) and
# once through pkg-config, in C and C++, then runs them.
#
#   cmake -DBINARY_DIR=<top build> -DSOURCE_DIR=<tests/install> -DWORK=<dir>
#         -DCC=<c compiler> -DCXX=<c++ compiler> -DGENERATOR=<gen>
#         [-DEXTRA_FLAGS=<flags>] -P run_install_test.cmake

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix} --component neuron)
run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix} --component compiler)

file(GLOB_RECURSE pcs ${prefix}/*/neuron.pc)
file(GLOB_RECURSE configs ${prefix}/*/neuronConfig.cmake)
file(GLOB_RECURSE libs ${prefix}/*/libneuron.so.0)
foreach(v pcs configs libs)
  if(NOT ${v})
    message(FATAL_ERROR "install: no ${v} under ${prefix}")
  endif()
endforeach()
foreach(h neuron.h neuron.hpp export.h version.hpp program.hpp builder.hpp kernel.hpp
          compiler/graph.hpp compiler/text.hpp compiler/compile.hpp compiler/reference.hpp)
  if(NOT EXISTS ${prefix}/include/neuron/${h})
    message(FATAL_ERROR "install: include/neuron/${h} missing")
  endif()
endforeach()
if(NOT EXISTS ${prefix}/bin/neuron-cc)
  message(FATAL_ERROR "install: bin/neuron-cc missing")
endif()
get_filename_component(libdir ${libs} DIRECTORY)
get_filename_component(pcdir ${pcs} DIRECTORY)

# 1. CMake package.
set(flags)
if(EXTRA_FLAGS)
  set(flags "-DCMAKE_C_FLAGS=${EXTRA_FLAGS}" "-DCMAKE_CXX_FLAGS=${EXTRA_FLAGS}"
            "-DCMAKE_EXE_LINKER_FLAGS=${EXTRA_FLAGS}")
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer -B ${WORK}/cmake-build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${CC} -DCMAKE_CXX_COMPILER=${CXX} ${flags})
run(${CMAKE_COMMAND} --build ${WORK}/cmake-build)
run(${WORK}/cmake-build/consumer_c)
message(STATUS "find_package, C:\n${last_output}")
run(${WORK}/cmake-build/consumer_cpp)
message(STATUS "find_package, C++:\n${last_output}")
run(${WORK}/cmake-build/consumer_compiler)
message(STATUS "find_package(neuron-compiler):\n${last_output}")

# 2. pkg-config.
set(ENV{PKG_CONFIG_PATH} ${pcdir})
run(pkg-config --cflags neuron)
string(STRIP "${last_output}" cflags)
run(pkg-config --libs neuron)
string(STRIP "${last_output}" ldflags)
separate_arguments(cflags UNIX_COMMAND "${cflags}")
separate_arguments(ldflags UNIX_COMMAND "${ldflags}")
separate_arguments(extra UNIX_COMMAND "${EXTRA_FLAGS}")
run(${CC} ${extra} ${cflags} ${SOURCE_DIR}/consumer/consumer.c ${ldflags} -o ${WORK}/pc_c)
run(${CXX} -std=c++20 ${extra} ${cflags} ${SOURCE_DIR}/consumer/consumer.cpp ${ldflags}
    -o ${WORK}/pc_cpp)
set(ENV{LD_LIBRARY_PATH} ${libdir})
run(${WORK}/pc_c)
message(STATUS "pkg-config, C:\n${last_output}")
run(${WORK}/pc_cpp)
message(STATUS "pkg-config, C++: ok")
run(pkg-config --cflags --libs neuron-compiler)
string(STRIP "${last_output}" ccflags)
separate_arguments(ccflags UNIX_COMMAND "${ccflags}")
run(${CXX} -std=c++20 ${extra} ${SOURCE_DIR}/consumer/consumer_compiler.cpp ${ccflags}
    -o ${WORK}/pc_compiler)
run(${WORK}/pc_compiler)
message(STATUS "pkg-config neuron-compiler: ${last_output}")
