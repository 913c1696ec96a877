# cmake -DCOMMAND=<arguments separated by |> -DFRAGMENT=<text> -P ExpectMessage.cmake
# Passes when COMMAND exits non-zero and its output contains FRAGMENT
# literally, exactly once per line that names it (only rank 0 prints).
string(REPLACE "|" ";" COMMAND "${COMMAND}")
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 60)
message("${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "expected a failure, the command succeeded")
endif()
string(FIND "${out}${err}" "${FRAGMENT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the output does not contain: ${FRAGMENT}")
endif()
string(REGEX MATCHALL "adgraph-run: " lines "${err}")
list(LENGTH lines count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected one message (from rank 0), found ${count}")
endif()
