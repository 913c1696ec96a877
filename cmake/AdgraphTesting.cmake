# Test registration helpers.
#
#   adgraph_add_test(core/graph_test)
#     builds tests/core/graph_test.cc into one executable and registers it.
#   adgraph_add_mpi_test(mpi_ops/collectives_test RANKS 1 2 3 4 [TIMEOUT s])
#     registers mpi_ops/collectives_test.np<N> for each N, run through
#     FindMPI's MPIEXEC variables with Open MPI's root and oversubscribe
#     settings, so a newcomer running as root in a container never meets them.

# OMPI_MCA_pml=ob1: Open MPI's own point-to-point layer (shared memory, and
# TCP between the multi-host tests' namespaces) instead of UCX, whose start
# took 0.2 s of each launch's 0.55 s here: a minute of the release suite's
# 350 serial MPI launches, more under the sanitizers.
# ADGRAPH_KERNEL_CACHE: the stencil kernels the tests compile are kept in
# the build tree (shared by every test of the run), not in the home folder.
set(ADGRAPH_MPI_TEST_ENV
    "ADGRAPH_KERNEL_CACHE=${CMAKE_BINARY_DIR}/kernels;ADGRAPH_COMM_DEADLINE=120;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMP_NUM_THREADS=1;OMPI_MCA_btl_vader_single_copy_mechanism=none;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_pml=ob1")
set(ADGRAPH_MPIEXEC_EXTRA_FLAGS "--oversubscribe" CACHE STRING
    "Flags added to every MPI test launch (Open MPI: --oversubscribe)")

# Sets `out` to the command that runs target `exe` with `args` on `ranks`
# ranks through FindMPI's MPIEXEC variables. With PACKED, the list is joined
# with "|" so it can pass through -D to a cmake -P script (ExpectFailure,
# ExpectMessage split it again).
function(adgraph_mpi_launch out ranks exe)
  cmake_parse_arguments(ARG "PACKED" "" "ARGS" ${ARGN})
  # A target runs as its file; anything else (an interpreter) as it is.
  set(program ${exe})
  if(TARGET ${exe})
    set(program $<TARGET_FILE:${exe}>)
  endif()
  set(command ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks}
      ${ADGRAPH_MPIEXEC_EXTRA_FLAGS} ${MPIEXEC_PREFLAGS} ${program}
      ${MPIEXEC_POSTFLAGS} ${ARG_ARGS})
  if(ARG_PACKED)
    string(REPLACE ";" "|" command "${command}")
  endif()
  set(${out} "${command}" PARENT_SCOPE)
endfunction()

function(adgraph_target_name path out)
  string(REPLACE "/" "_" name "${path}")
  set(${out} "${name}" PARENT_SCOPE)
endfunction()

function(adgraph_add_test path)
  cmake_parse_arguments(ARG "" "TIMEOUT" "" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  adgraph_target_name(${path} target)
  add_executable(${target} ${path}.cc)
  target_link_libraries(${target} PRIVATE adgraph::adgraph adgraph_warnings
                                          adgraph_test_util GTest::gtest_main)
  adgraph_use_pch(${target} adgraph_test_pch)
  add_test(NAME ${path} COMMAND ${target})
  set_tests_properties(${path} PROPERTIES TIMEOUT ${ARG_TIMEOUT}
                                          ENVIRONMENT "OMP_NUM_THREADS=2;ADGRAPH_KERNEL_CACHE=${CMAKE_BINARY_DIR}/kernels")
endfunction()

# The labels of <name>.np<n> among RANKS: "mpi", and "sanitizers_skip" for
# 2 and 4 ranks when 3 are registered too. The sanitizer suites
# (scripts/sanitize) leave those out: 1 and 3 ranks run the same code
# (neighbours on both sides, reductions over more than two, uneven
# splits), and the release suite still runs 2 and 4 (2 × 2 grids). MPI
# tests run one at a time there, so these were a third of its time.
# The suites in ADGRAPH_SANITIZE_AT_TWO, the slowest under AddressSanitizer
# (about a minute at 3 ranks, oversubscribed), run there at 1 and 2 ranks
# instead: the same kernels, with a neighbour on one side. A suite of
# three counts or more without 3 (solvers/heat_inverse_test: 1, 2, 4) runs
# there without its largest.
set(ADGRAPH_SANITIZE_AT_TWO solvers/patch_multigrid_test solvers/heat_solver_test)
function(adgraph_mpi_labels out name n ranks)
  set(labels mpi)
  set(skipped)
  list(LENGTH ranks counts)
  if(name IN_LIST ADGRAPH_SANITIZE_AT_TWO AND 3 IN_LIST ranks)
    set(skipped 3 4)
  elseif(3 IN_LIST ranks)
    set(skipped 2 4)
  elseif(counts GREATER 2)
    list(SORT ranks COMPARE NATURAL)
    list(GET ranks -1 skipped)
  endif()
  if(n IN_LIST skipped)
    list(APPEND labels sanitizers_skip)
  endif()
  set(${out} "${labels}" PARENT_SCOPE)
endfunction()

# Registers `command...` (a target name followed by its arguments) at each
# rank count in RANKS under the name <name>.np<N>.
function(adgraph_add_mpi_command name)
  cmake_parse_arguments(ARG "" "TIMEOUT;PASS_REGEX" "RANKS;COMMAND" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  list(POP_FRONT ARG_COMMAND exe)
  foreach(n IN LISTS ARG_RANKS)
    adgraph_mpi_launch(command ${n} ${exe} ARGS ${ARG_COMMAND})
    add_test(NAME ${name}.np${n}
             COMMAND ${command})
    adgraph_mpi_labels(labels ${name} ${n} "${ARG_RANKS}")
    set_tests_properties(${name}.np${n} PROPERTIES
      PROCESSORS ${n} LABELS "${labels}" TIMEOUT ${ARG_TIMEOUT}
      ENVIRONMENT "${ADGRAPH_MPI_TEST_ENV}")
    if(ARG_PASS_REGEX)
      set_tests_properties(${name}.np${n} PROPERTIES
        PASS_REGULAR_EXPRESSION "${ARG_PASS_REGEX}")
    endif()
  endforeach()
endfunction()

function(adgraph_add_mpi_test path)
  cmake_parse_arguments(ARG "" "TIMEOUT" "RANKS" ${ARGN})
  adgraph_target_name(${path} target)
  add_executable(${target} ${path}.cc)
  target_link_libraries(${target} PRIVATE adgraph::adgraph adgraph_warnings
                                          adgraph_test_util adgraph_mpi_test_main)
  adgraph_use_pch(${target} adgraph_test_pch)
  adgraph_add_mpi_command(${path} RANKS ${ARG_RANKS} TIMEOUT ${ARG_TIMEOUT}
                          COMMAND ${target})
endfunction()

# Registers an MPI command that must fail (non-zero exit) with output
# matching REGEX, at each rank count in RANKS: <name>.np<N>.
function(adgraph_add_failure_test name)
  cmake_parse_arguments(ARG "" "REGEX;TIMEOUT" "RANKS;COMMAND" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  list(POP_FRONT ARG_COMMAND exe)
  foreach(n IN LISTS ARG_RANKS)
    adgraph_mpi_launch(command ${n} ${exe} PACKED ARGS ${ARG_COMMAND})
    add_test(NAME ${name}.np${n}
             COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${command}" "-DREGEX=${ARG_REGEX}"
                     -P ${PROJECT_SOURCE_DIR}/cmake/ExpectFailure.cmake)
    adgraph_mpi_labels(labels ${name} ${n} "${ARG_RANKS}")
    set_tests_properties(${name}.np${n} PROPERTIES
      PROCESSORS ${n} LABELS "${labels}" TIMEOUT ${ARG_TIMEOUT}
      ENVIRONMENT "${ADGRAPH_MPI_TEST_ENV}")
  endforeach()
endfunction()

# Registers the pytest file tests/python/<name>.py at each rank count in
# RANKS as python/<name>.np<N>: every rank runs pytest through
# tests/python/run_pytest.py with the interpreter CMake chose
# (ADGRAPH_PYTHON_EXECUTABLE) and the module built in ${CMAKE_BINARY_DIR}/python.
set(ADGRAPH_PYTHON_TEST_ENV
    "${ADGRAPH_MPI_TEST_ENV};PYTHONPATH=${CMAKE_BINARY_DIR}/python;PYTHONDONTWRITEBYTECODE=1")
# Sets `out` to the command that runs the Python file `script` with `args`
# on `ranks` ranks (adgraph_mpi_launch with the interpreter as the program).
function(adgraph_python_launch out ranks script)
  cmake_parse_arguments(ARG "PACKED" "" "ARGS" ${ARGN})
  set(packed)
  if(ARG_PACKED)
    set(packed PACKED)
  endif()
  adgraph_mpi_launch(command ${ranks} ${ADGRAPH_PYTHON_EXECUTABLE} ${packed}
                     ARGS ${script} ${ARG_ARGS})
  set(${out} "${command}" PARENT_SCOPE)
endfunction()

function(adgraph_add_python_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "RANKS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  foreach(n IN LISTS ARG_RANKS)
    adgraph_python_launch(command ${n} ${PROJECT_SOURCE_DIR}/tests/python/run_pytest.py
                          ARGS ${PROJECT_SOURCE_DIR}/tests/python/${name}.py)
    add_test(NAME python/${name}.np${n} COMMAND ${command})
    set_tests_properties(python/${name}.np${n} PROPERTIES
      PROCESSORS ${n} LABELS "mpi;python" TIMEOUT ${ARG_TIMEOUT}
      ENVIRONMENT "${ADGRAPH_PYTHON_TEST_ENV}")
  endforeach()
endfunction()

# Registers tests/python/<name>.py at each rank count in RANKS as
# python/<name>.np<N>, a program that must fail within 30 s (far below the
# communication deadline) with output matching REGEX.
function(adgraph_add_python_failure_test name)
  cmake_parse_arguments(ARG "" "REGEX" "RANKS" ${ARGN})
  foreach(n IN LISTS ARG_RANKS)
    adgraph_python_launch(command ${n} ${PROJECT_SOURCE_DIR}/tests/python/${name}.py PACKED)
    add_test(NAME python/${name}.np${n}
             COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${command}" "-DREGEX=${ARG_REGEX}"
                     -P ${PROJECT_SOURCE_DIR}/cmake/ExpectFailure.cmake)
    set_tests_properties(python/${name}.np${n} PROPERTIES
      PROCESSORS ${n} LABELS "mpi;python" TIMEOUT 30
      ENVIRONMENT "${ADGRAPH_PYTHON_TEST_ENV}")
  endforeach()
endfunction()

# Registers the Python program examples/python/<name>.py with `ARGS` at
# each rank count in RANKS as examples/python/<name>.np<N>; it passes when
# it exits 0 (the examples check their own values) and, with PASS_REGEX,
# prints a match.
function(adgraph_add_python_example name)
  cmake_parse_arguments(ARG "" "TIMEOUT;PASS_REGEX" "RANKS;ARGS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  foreach(n IN LISTS ARG_RANKS)
    adgraph_python_launch(command ${n} ${PROJECT_SOURCE_DIR}/examples/python/${name}.py
                          ARGS ${ARG_ARGS})
    add_test(NAME examples/python/${name}.np${n} COMMAND ${command})
    set_tests_properties(examples/python/${name}.np${n} PROPERTIES
      PROCESSORS ${n} LABELS "mpi;python" TIMEOUT ${ARG_TIMEOUT}
      ENVIRONMENT "${ADGRAPH_PYTHON_TEST_ENV}")
    if(ARG_PASS_REGEX)
      set_tests_properties(examples/python/${name}.np${n} PROPERTIES
        PASS_REGULAR_EXPRESSION "${ARG_PASS_REGEX}")
    endif()
  endforeach()
endfunction()
