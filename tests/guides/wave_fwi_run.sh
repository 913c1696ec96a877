#!/bin/sh
# wave_fwi_run.sh BUILD_DIR WORKDIR SOURCE_DIR EXPECTED: docs/WAVE_FWI.md's
# first run, typed as the guide shows it (WORKDIR gets links `build` and
# `examples` to the build tree and the examples), whose last line must
# equal EXPECTED.
set -eu
build=$1 work=$2 source=$3 expected=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"
ln -s "$build" build
ln -s "$source/examples" examples
(
# doc:begin run
PYTHONPATH=build/python mpirun -n 4 /usr/bin/python3 examples/python/wave_fwi.py \
    --nz 60 --nx 80 --nt 400 --shots 10 25 40 55 70 --vmin 1900 --vmax 2300 \
    --max-iter 30 --shot-groups 2 --pz 2 --px 1 --output fwi.json
# doc:end run
) >run.log
tail -n 1 run.log >last.txt
if ! diff "$expected" last.txt; then
  cat run.log
  exit 1
fi
echo "the last line equals $expected"
