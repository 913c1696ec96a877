#!/bin/sh
# restart.sh BUILD_DIR WORKDIR SOURCE_DIR: docs/RUNNING.md's example.
# Runs the heat inversion on 2 ranks in one go, then stopped after 3
# iterations with a checkpoint and resumed to 6, and requires the resumed
# run to end with the same loss history, counts and κ error, bit for bit.
# The commands are written as a user in the source folder types them: WORKDIR
# gets a link `build` to BUILD_DIR.
set -eu
build=$1 work=$2 source=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
ln -s "$build" build
# doc:begin restart
# 6 iterations in one go, every state of the time loop kept:
mpirun -n 2 build/examples/heat_inversion --nx 16 --ny 16 --nt 40 --px 2 --py 1 \
  --max-iter 6 --checkpoints all --output whole.json
# Stopped after 3 iterations, with 3 snapshots and a checkpoint per rank
# (ckpt.rank0of2, ckpt.rank1of2) written after every iteration ...
mpirun -n 2 build/examples/heat_inversion --nx 16 --ny 16 --nt 40 --px 2 --py 1 \
  --max-iter 3 --checkpoints 3 --checkpoint ckpt --output part.json
# ... and resumed to 6: the same loss history as whole.json, bit for bit.
mpirun -n 2 build/examples/heat_inversion --nx 16 --ny 16 --nt 40 --px 2 --py 1 \
  --max-iter 6 --checkpoints 3 --checkpoint ckpt --resume --output resumed.json
# doc:end restart
grep -q '"resumed_at": 3,' resumed.json ||
  { echo "expected to resume from iteration 3"; exit 1; }
cmake -DA=whole.json -DB=resumed.json \
  "-DFIELDS=loss_history|gradient_norm_history|iterations|evaluations|relative_kappa_error" \
  -P "$source/cmake/CompareJsonFields.cmake"
echo "resumed run equals the whole run"
