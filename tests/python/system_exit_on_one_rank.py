"""``raise SystemExit(status)`` (not sys.exit: no Python hook sees it) on
the last rank after a first collective run, while the other ranks wait for
it in the next one. Arguments: which module starts MPI (``mpi4py`` or
``adgraph``, imported first) and the status.

With a failure status the job must end within seconds, naming the rank,
not at the communication deadline (registered by tests/CMakeLists.txt as
an expected failure with a timeout far below the deadline). With status 0
on every rank (``every``) the job ends cleanly, exit status 0.
"""

import importlib
import sys

first, status = sys.argv[1], int(sys.argv[2])
importlib.import_module("mpi4py.MPI" if first == "mpi4py" else "adgraph")

from mpi4py import MPI  # noqa: E402

import adgraph as ag  # noqa: E402

RANK, SIZE = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size
g = ag.Graph()
x = g.placeholder("x", ())
session = ag.Session(g)
total = ag.mpi_allreduce(x)
assert session.run(total, {x: 1.0}) == SIZE
if len(sys.argv) > 3 and sys.argv[3] == "every":
    if RANK == 0:
        print("every rank leaves through SystemExit", flush=True)
    raise SystemExit(status)
if RANK == SIZE - 1:
    raise SystemExit(status)
session.run(total, {x: 1.0})
print(f"rank {RANK}: the run ended, which it must not", flush=True)
