# Precompiled headers (ADGRAPH_PCH, on by default): the build's time goes
# mostly into parsing the same headers again in every translation unit
# (Eigen, nlohmann_json and adgraph.h take about 5 s each time on the CI
# machines, CLI11 alone about 10 s). Each kind of translation unit parses
# them once:
#
#   the library          external headers only (its own change too often);
#   tests                GoogleTest, nlohmann_json and adgraph.h;
#   programs             CLI11, nlohmann_json and adgraph.h (examples, the
#                        driver, benchmarks).
#
# A precompiled header is reused only by targets compiled with the same
# flags, so the tests' and the programs' come from an object library that
# links what they link. Sources still include what they use: the build
# works, more slowly, with -DADGRAPH_PCH=OFF.
option(ADGRAPH_PCH "Precompile the headers every translation unit parses" ON)

set(ADGRAPH_PCH_EXTERNAL <Eigen/Dense> <nlohmann/json.hpp> <mpi.h> <algorithm> <functional>
    <map> <memory> <string> <unordered_map> <vector>)

# adgraph_library_pch(target): the external headers, for the library itself.
function(adgraph_library_pch target)
  if(ADGRAPH_PCH)
    target_precompile_headers(${target} PRIVATE ${ADGRAPH_PCH_EXTERNAL})
  endif()
endfunction()

# adgraph_shared_pch(name HEADERS h... LINK lib...): an object library
# `name` that precompiles HEADERS with the flags of LINK.
function(adgraph_shared_pch name)
  cmake_parse_arguments(ARG "" "" "HEADERS;LINK" ${ARGN})
  if(ADGRAPH_PCH)
    add_library(${name} OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch.cc)
    target_link_libraries(${name} PRIVATE ${ARG_LINK})
    target_precompile_headers(${name} PRIVATE ${ARG_HEADERS})
  endif()
endfunction()

# adgraph_use_pch(target name): `target` reuses the headers `name` precompiled.
function(adgraph_use_pch target name)
  if(ADGRAPH_PCH)
    target_precompile_headers(${target} REUSE_FROM ${name})
  endif()
endfunction()
