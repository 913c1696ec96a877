"""An uncaught exception on one rank while the others wait in a collective:
the job must end within seconds, with that rank's traceback (registered by
tests/CMakeLists.txt as an expected failure with a short timeout)."""

from mpi4py import MPI

import adgraph as ag

if MPI.COMM_WORLD.rank == MPI.COMM_WORLD.size - 1:
    raise KeyError("raised on the last rank only")
g = ag.Graph()
x = g.placeholder("x", ())
ag.Session(g).run(ag.mpi_allreduce(x), {x: 1.0})
