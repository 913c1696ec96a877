# Test registration helpers.
#
#   adgraph_add_test(core/graph_test [TIMEOUT s] [STANDALONE])
#     compiles tests/core/graph_test.cc into its folder's test executable
#     (below) and registers it as the test core/graph_test.
#   adgraph_add_mpi_test(mpi_ops/collectives_test RANKS 1 2 3 4 [TIMEOUT s]
#                        [STANDALONE])
#     registers mpi_ops/collectives_test.np<N> for each N, run through
#     FindMPI's MPIEXEC variables with Open MPI's root and oversubscribe
#     settings, so a newcomer running as root in a container never meets them.
#   Both set ADGRAPH_TEST_TARGET (caller's scope) to the executable's target.
#
# One executable per folder: the GoogleTest sources of a folder of tests/
# (the path's first part) go into tests_<folder> (GoogleTest's main) or
# tests_<folder>_mpi (tests/mpi_test_main.cc), compiled with ADGRAPH_UNITY
# in batches of ADGRAPH_TEST_BATCH sources. Each source stays a ctest test
# of its own name, run with a --gtest_filter naming the tests the source
# defines (read from its TEST, TEST_F and TEST_P lines), and the test
# tests/executables/<target> checks that the filters name exactly the tests
# the executable holds. Compiling the same headers' inline code once per
# batch rather than once per source halves the tests' compile: four core
# sources took 19 s one by one and 10 s as one batch (g++ -O1, precompiled
# header). STANDALONE keeps a source in an executable of its own,
# <folder>_<name> (the ThreadSanitizer build's targets, scripts/sanitize).

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

set(ADGRAPH_TEST_BATCH 6 CACHE STRING
    "Test sources per translation unit of a folder's test executable (with ADGRAPH_UNITY)")

# Sets `out` to the GoogleTest names tests/<path>.cc defines: Suite.Name,
# and */Suite.Name/* for a TEST_P (its instantiations' names).
function(adgraph_test_names path out)
  # A test added to the source re-runs the configure step, so that its
  # filter names it.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                                         ${PROJECT_SOURCE_DIR}/tests/${path}.cc)
  file(READ ${PROJECT_SOURCE_DIR}/tests/${path}.cc text)
  set(space "[ \t\n]*")
  set(word "[A-Za-z0-9_]+")
  string(REGEX MATCHALL "\n[ \t]*TEST(_F|_P)?\\(${space}${word}${space},${space}${word}"
         macros "\n${text}")
  set(names)
  foreach(macro IN LISTS macros)
    string(REGEX REPLACE "[ \t\n]" "" macro "${macro}")
    string(REGEX REPLACE "^TEST(_F|_P)?\\((${word}),(${word})$" "\\2.\\3" name "${macro}")
    if(macro MATCHES "^TEST_P")
      set(name "*/${name}/*")
    endif()
    list(APPEND names "${name}")
  endforeach()
  if(NOT names)
    message(FATAL_ERROR "tests/${path}.cc: no TEST, TEST_F or TEST_P line found")
  endif()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# What a test executable links (`main`: GoogleTest's or the MPI one) and
# the precompiled header it reuses.
function(adgraph_link_test target main)
  target_link_libraries(${target} PRIVATE adgraph::adgraph adgraph_warnings
                                          adgraph_test_util ${main})
  adgraph_use_pch(${target} adgraph_test_pch)
endfunction()

# Sets `out` to the target that holds tests/<path>.cc (adding the source to
# its folder's executable, created on first use) and `filter_out` to the
# arguments that select the source's tests there. KIND is serial or mpi.
function(adgraph_test_executable path kind standalone out filter_out)
  set(main GTest::gtest_main)
  if(kind STREQUAL "mpi")
    set(main adgraph_mpi_test_main)
  endif()
  if(standalone)
    adgraph_target_name(${path} target)
    add_executable(${target} ${path}.cc)
    adgraph_link_test(${target} ${main})
    set(filter)
  else()
    string(REGEX MATCH "^[^/]+" folder "${path}")
    set(target tests_${folder})
    if(kind STREQUAL "mpi")
      string(APPEND target _mpi)
    endif()
    if(NOT TARGET ${target})
      add_executable(${target})
      adgraph_link_test(${target} ${main})
      set_target_properties(${target} PROPERTIES UNITY_BUILD ${ADGRAPH_UNITY}
                                                 UNITY_BUILD_BATCH_SIZE ${ADGRAPH_TEST_BATCH})
      set_property(GLOBAL APPEND PROPERTY ADGRAPH_TEST_EXECUTABLES ${target})
    endif()
    target_sources(${target} PRIVATE ${path}.cc)
    adgraph_test_names(${path} names)
    get_property(held GLOBAL PROPERTY ADGRAPH_TESTS_OF_${target})
    foreach(name IN LISTS names)
      if(name IN_LIST held)
        message(FATAL_ERROR "tests/${path}.cc: the test ${name} is defined by another "
                            "source of ${target} too; rename one")
      endif()
    endforeach()
    set_property(GLOBAL APPEND PROPERTY ADGRAPH_TESTS_OF_${target} ${names})
    string(JOIN ":" joined ${names})
    set(filter "--gtest_filter=${joined}")
  endif()
  set(${out} ${target} PARENT_SCOPE)
  set(${filter_out} "${filter}" PARENT_SCOPE)
endfunction()

function(adgraph_add_test path)
  cmake_parse_arguments(ARG "STANDALONE" "TIMEOUT" "" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  adgraph_test_executable(${path} serial "${ARG_STANDALONE}" target filter)
  add_test(NAME ${path} COMMAND ${target} ${filter})
  set_tests_properties(${path} PROPERTIES TIMEOUT ${ARG_TIMEOUT}
                                          ENVIRONMENT "OMP_NUM_THREADS=2;ADGRAPH_KERNEL_CACHE=${CMAKE_BINARY_DIR}/kernels")
  set(ADGRAPH_TEST_TARGET ${target} PARENT_SCOPE)
endfunction()

# Registers tests/executables/<target> for every folder's test executable:
# the tests it lists are exactly those its sources' filters name (a test no
# filter names would never run). Called once, after the last test.
function(adgraph_check_test_executables)
  get_property(targets GLOBAL PROPERTY ADGRAPH_TEST_EXECUTABLES)
  foreach(target IN LISTS targets)
    get_property(names GLOBAL PROPERTY ADGRAPH_TESTS_OF_${target})
    string(REPLACE ";" "|" names "${names}")
    if(target MATCHES "_mpi$")
      adgraph_mpi_launch(command 1 ${target} PACKED ARGS --gtest_list_tests)
    else()
      set(command $<TARGET_FILE:${target}>|--gtest_list_tests)
    endif()
    add_test(NAME tests/executables/${target}
             COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${command}" "-DEXPECTED=${names}"
                     -P ${PROJECT_SOURCE_DIR}/cmake/CheckTestExecutable.cmake)
    set_tests_properties(tests/executables/${target} PROPERTIES TIMEOUT 60
                         ENVIRONMENT "${ADGRAPH_MPI_TEST_ENV}")
  endforeach()
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
  cmake_parse_arguments(ARG "STANDALONE" "TIMEOUT" "RANKS" ${ARGN})
  adgraph_test_executable(${path} mpi "${ARG_STANDALONE}" target filter)
  adgraph_add_mpi_command(${path} RANKS ${ARG_RANKS} TIMEOUT ${ARG_TIMEOUT}
                          COMMAND ${target} ${filter})
  set(ADGRAPH_TEST_TARGET ${target} PARENT_SCOPE)
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
