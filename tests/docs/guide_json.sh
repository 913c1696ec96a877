# docs/JSON.md's commands, from the repository root after a build in build/
# (run by tests/docs/run_doc_command.py like tests/docs/hello.sh).
# doc:begin repeat
mpirun -n 2 build/driver/adgraph-run examples/graphs/guide_repeat.json
# doc:end repeat
