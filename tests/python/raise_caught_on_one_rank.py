"""A Python op that raises on one rank only, whose exception the program
catches there, while the other ranks go on to the run's allreduce: they
would wait for that rank forever. The job must end within seconds with the
op's message (registered by tests/CMakeLists.txt as an expected failure with
a timeout far below the communication deadline)."""

from mpi4py import MPI

import adgraph as ag

LAST = MPI.COMM_WORLD.rank == MPI.COMM_WORLD.size - 1


def forward(x):
    if LAST:
        raise KeyError("raised on the last rank only")
    return x


picky = ag.custom_op("py_picky", forward=forward, vjp=lambda xs, y, ybar: [ybar])
g = ag.Graph()
x = g.placeholder("x", ())
total = ag.mpi_allreduce(picky(x, name="picky"))
try:
    ag.Session(g).run(total, {x: 1.0})
except KeyError:
    pass  # the program carries on, as if the error were its own business
MPI.COMM_WORLD.Barrier()
print("not reached: the job should have ended")
