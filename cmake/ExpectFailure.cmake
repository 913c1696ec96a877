# cmake -DCOMMAND=<arguments separated by |> -DREGEX=<regex> -P ExpectFailure.cmake
# Passes when COMMAND exits non-zero and its output matches REGEX.
string(REPLACE "|" ";" COMMAND "${COMMAND}")
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
message("${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "expected a failure, the command succeeded")
endif()
if(NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "the output does not match: ${REGEX}")
endif()
message("failed as expected (exit ${rc})")
