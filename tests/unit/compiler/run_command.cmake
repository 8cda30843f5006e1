# run(EXPECTED_STATUS COMMAND...): runs COMMAND, fails the test unless it exits
# with EXPECTED_STATUS, and leaves its standard output and error in out
# and err. Included by the command-line tests (neuron_*_test.cmake).

function(run expect_rc)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL expect_rc)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "exit status ${rc}, want ${expect_rc}: ${cmd}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()
