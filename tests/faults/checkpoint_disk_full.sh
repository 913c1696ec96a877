#!/bin/sh
# checkpoint_disk_full.sh WORKDIR MPIEXEC... -- HEAT_INVERSION ARGS...
# Runs heat_inversion with its checkpoints on a 32 KiB tmpfs (in a mount
# namespace of its own, gone when it ends): the disk fills at iteration 3,
# every rank must stop with a message naming the file, and the checkpoint of
# iteration 2 must be left whole. That checkpoint is copied out and the run
# resumed from it into WORKDIR/resumed.json (compared by the next test).
set -eu
work=$1
shift
launcher=""
while [ "$1" != "--" ]; do launcher="$launcher $1"; shift; done
shift
rm -rf "$work" && mkdir -p "$work/small" "$work/kept"
# shellcheck disable=SC2086
unshare -m sh -eu -c '
  work=$1; shift
  mount -t tmpfs -o size=32k adgraph-disk-full "$work/small" ||
    { echo "cannot mount a tmpfs (root and mount namespaces are needed)"; exit 1; }
  if "$@" --checkpoint "$work/small/ckpt" --output "$work/full.json" \
      >"$work/full.log" 2>&1; then
    echo "expected the run to stop when the disk is full"; cat "$work/full.log"; exit 1
  fi
  cat "$work/full.log"
  grep -q "heat_inversion: checkpoint: cannot write checkpoint $work/small/ckpt.rank[0-9]of2.tmp: No space left on device (the previous checkpoint is unchanged)" "$work/full.log" ||
    { echo "missing the disk-full message"; exit 1; }
  [ "$(grep -c "heat_inversion: " "$work/full.log")" = 1 ] ||
    { echo "expected one message, from rank 0"; exit 1; }
  ls "$work/small"
  if ls "$work/small" | grep -q tmp; then echo "a partial file was left"; exit 1; fi
  cp "$work"/small/ckpt.rank* "$work/kept/"
' sh "$work" $launcher "$@"
# shellcheck disable=SC2086
$launcher "$@" --checkpoint "$work/kept/ckpt" --resume --output "$work/resumed.json"
grep -q '"resumed_at": 2,' "$work/resumed.json" ||
  { echo "expected to resume from iteration 2"; exit 1; }
