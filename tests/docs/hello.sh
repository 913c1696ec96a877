# The README's hello-world commands, from the repository root after a build
# in build/. tests/docs/run_doc_command.py runs each region (with the test's
# build folder and interpreter) and compares its output with
# tests/docs/hello_{cpp,python,json}.expected.
# doc:begin cpp
mpirun -n 4 build/examples/hello
# doc:end cpp
# doc:begin python
PYTHONPATH=build/python mpirun -n 4 /usr/bin/python3 examples/python/hello.py
# doc:end python
# doc:begin json
mpirun -n 4 build/driver/adgraph-run --all-ranks examples/graphs/hello.json
# doc:end json
