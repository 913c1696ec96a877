# cmake -DA=<file> -DB=<file> -DFIELDS=<f1|f2|...> -P CompareJsonFields.cmake
# Passes when every listed top-level field has the same JSON text in A and B.
file(READ "${A}" a)
file(READ "${B}" b)
string(REPLACE "|" ";" FIELDS "${FIELDS}")
foreach(field IN LISTS FIELDS)
  string(JSON va GET "${a}" ${field})
  string(JSON vb GET "${b}" ${field})
  if(NOT va STREQUAL vb)
    message(FATAL_ERROR "${field} differs:\n  ${A}: ${va}\n  ${B}: ${vb}")
  endif()
  message("${field} equal: ${va}")
endforeach()
