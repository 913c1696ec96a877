# Stands in for the CMakeLists.txt of the self-test's tiny tree: the
# checker requires a test to name each source; these two are "registered",
# the third source is not.
add_test(NAME planted/snippet COMMAND python3 src/snippet.py)
add_test(NAME planted/whole COMMAND cat src/whole.txt)
