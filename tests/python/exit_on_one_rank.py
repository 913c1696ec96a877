"""sys.exit(3) on one rank while the others wait in a collective: the job
must end within seconds (SystemExit bypasses the excepthook), naming the
rank (registered by tests/CMakeLists.txt as an expected failure with a
short timeout)."""

import sys

from mpi4py import MPI

import adgraph as ag

if MPI.COMM_WORLD.rank == MPI.COMM_WORLD.size - 1:
    sys.exit(3)
g = ag.Graph()
x = g.placeholder("x", ())
ag.Session(g).run(ag.mpi_allreduce(x), {x: 1.0})
