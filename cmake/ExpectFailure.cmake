# cmake -DCOMMAND=<arguments separated by |> -DREGEX=<regex>
#       [-DSTATUS=<exit status>] [-DFORBID=<regex>] -P ExpectFailure.cmake
# Passes when COMMAND exits non-zero (with STATUS when given), its output
# matches REGEX and, when given, does not match FORBID.
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
if(DEFINED STATUS AND NOT rc EQUAL STATUS)
  message(FATAL_ERROR "expected exit status ${STATUS}, got ${rc}")
endif()
if(DEFINED FORBID AND "${out}${err}" MATCHES "${FORBID}")
  message(FATAL_ERROR "the output matches what it must not: ${FORBID}")
endif()
message("failed as expected (exit ${rc})")
