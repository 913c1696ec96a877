# cmake -DFILES="a.png|b.png" -P ExpectPngFiles.cmake
# Fails unless every file exists, is non-empty and starts with the PNG
# signature (89 50 4E 47 0D 0A 1A 0A).
string(REPLACE "|" ";" files "${FILES}")
foreach(file IN LISTS files)
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "${file}: missing")
  endif()
  file(SIZE "${file}" size)
  if(size EQUAL 0)
    message(FATAL_ERROR "${file}: empty")
  endif()
  file(READ "${file}" head LIMIT 8 HEX)
  if(NOT head STREQUAL "89504e470d0a1a0a")
    message(FATAL_ERROR "${file}: not a PNG (starts with ${head})")
  endif()
  message(STATUS "${file}: PNG, ${size} bytes")
endforeach()
