"""Runs one pytest file on every rank of an MPI job (ctest's launcher).

Rank 0 prints pytest's report; the other ranks keep theirs and print it to
stderr only when they fail. Each rank exits with pytest's status, so a
failure on any rank fails the test (mpirun returns non-zero)."""

import io
import sys

import pytest
from mpi4py import MPI

rank = MPI.COMM_WORLD.rank
args = sys.argv[1:] + ["-p", "no:cacheprovider", "-q", "--color=no"]
if rank == 0:
    status = pytest.main(args)
else:
    kept = io.StringIO()
    saved = sys.stdout
    sys.stdout = kept
    try:
        status = pytest.main(args)
    finally:
        sys.stdout = saved
    if status != 0:
        sys.stderr.write(f"--- rank {rank} ---\n{kept.getvalue()}")
sys.stdout.flush()
sys.stderr.flush()
# Exit status 5 (no tests collected) fails too: every file has tests.
sys.exit(int(status))
