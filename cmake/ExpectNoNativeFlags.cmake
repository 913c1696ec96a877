# cmake -DFILE=<installed adgraphTargets.cmake> -P ExpectNoNativeFlags.cmake
# Fails when the exported targets would hand -march/-mtune flags to a
# consumer; shows the exported compile options and definitions.
file(READ "${FILE}" text)
if(text MATCHES "-march|-mtune|-mavx")
  message(FATAL_ERROR "${FILE} exports an instruction-set flag")
endif()
string(REGEX MATCHALL "INTERFACE_COMPILE_[A-Z_]+ \"[^\"]*\"" exported "${text}")
message("no instruction-set flag exported; ${exported}")
