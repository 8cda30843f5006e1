# Torch::extension: compiling and linking a C++ extension against the torch
# of ${NEURON_PYTHON} (the project's venv, scripts/setup-deps) with the
# include directories, libraries and ABI that torch.utils.cpp_extension
# uses. Not torch's own CMake config: PyPI's torch is a CUDA build whose
# config looks for a CUDA toolkit, which a machine without a GPU does not
# have and an extension for the CPU does not need.
# Sets NEURON_TORCH_FOUND, NEURON_TORCH_VERSION and NEURON_TORCH_LIBRARY_DIR.

set(NEURON_TORCH_FOUND FALSE)
if(NOT NEURON_PYTHON)
  message(STATUS "torch: no NEURON_PYTHON (scripts/setup-deps writes it): the PyTorch bridge is not built")
  return()
endif()

execute_process(
  COMMAND ${NEURON_PYTHON} -c [=[
import sysconfig, torch
from torch.utils import cpp_extension
print(torch.__version__)
print(",".join(cpp_extension.include_paths()))
print(cpp_extension.library_paths()[0])
print(int(torch.compiled_with_cxx11_abi()))
print(sysconfig.get_paths()["include"])
]=]
  OUTPUT_VARIABLE _torch_out ERROR_VARIABLE _torch_err RESULT_VARIABLE _torch_rc
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _torch_rc EQUAL 0)
  message(FATAL_ERROR "torch: ${NEURON_PYTHON} cannot import torch:\n${_torch_err}"
                      "Run scripts/setup-deps to make the project's venv, then configure again.")
endif()
string(REPLACE "\n" ";" _torch_lines "${_torch_out}")
list(GET _torch_lines 0 NEURON_TORCH_VERSION)
list(GET _torch_lines 1 _torch_includes)
list(GET _torch_lines 2 NEURON_TORCH_LIBRARY_DIR)
list(GET _torch_lines 3 _torch_cxx11_abi)
list(GET _torch_lines 4 _python_include)
string(REPLACE "," ";" _torch_includes "${_torch_includes}")
if(NOT EXISTS "${_python_include}/Python.h")
  message(FATAL_ERROR "torch: ${_python_include}/Python.h not found: install python3-dev "
                      "(scripts/setup-deps does)")
endif()

add_library(Torch::extension INTERFACE IMPORTED)
# SYSTEM: torch's headers do not build warning-free with our flags; ours
# stay errors.
target_include_directories(Torch::extension SYSTEM INTERFACE ${_torch_includes} ${_python_include})
target_compile_definitions(Torch::extension INTERFACE
  _GLIBCXX_USE_CXX11_ABI=${_torch_cxx11_abi})
foreach(_lib c10 torch torch_cpu torch_python)
  find_library(_torch_lib_${_lib} ${_lib} PATHS ${NEURON_TORCH_LIBRARY_DIR} NO_DEFAULT_PATH REQUIRED)
  target_link_libraries(Torch::extension INTERFACE ${_torch_lib_${_lib}})
endforeach()
set(NEURON_TORCH_FOUND TRUE)
message(STATUS "torch: ${NEURON_TORCH_VERSION} from ${NEURON_PYTHON}")
