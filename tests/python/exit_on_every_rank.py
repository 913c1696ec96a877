"""sys.exit(3) on every rank (a bad option every rank saw): each leaves
quietly with status 3, with no "ending the job" line and no MPI_Abort
(registered by tests/CMakeLists.txt, which checks the status and the
output). Rank 0 says why, as a program would."""

import sys

import adgraph as ag

g = ag.Graph()
x = g.placeholder("x", ())
total = ag.Session(g).run(ag.mpi_allreduce(x), {x: 1.0})
if ag.communicator().rank == 0:
    print(f"exit_on_every_rank: the ranks summed to {total:g}; leaving with 3",
          file=sys.stderr)
sys.exit(3)
