"""The mpi4py course's ring with adgraph: each rank sends its x to the right
with mpi_isend, receives its left neighbour's with mpi_irecv, completes both
with mpi_waitall, and differentiates through the messages.

    mpirun -n 4 /usr/bin/python3 examples/python/nonblocking_ring.py
"""

import sys

import numpy as np
from mpi4py import MPI

import adgraph as ag

rank, size = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size
right, left = (rank + 1) % size, (rank - 1) % size
g = ag.Graph()
x = g.placeholder("x", (2,))
send = ag.mpi_isend(x, dest=right, tag=1)
recv = ag.mpi_irecv(x, src=left, tag=1)
_, received = ag.mpi_waitall(send, recv)
loss = ag.sum(received * received) * (rank + 1.0)  # a loss that differs by rank
got, value, grad = ag.Session(g).run([received, loss, ag.gradient(loss, x)],
                                     {x: np.array([1.0, 2.0]) * (rank + 1)})
# By hand: this rank holds its left neighbour's x = (1, 2)(left + 1); its x
# reaches the right neighbour, whose loss weighs (right + 1): dL/dx = 2 x (right + 1).
want_value = 5.0 * (left + 1) ** 2 * (rank + 1)
want_grad = 2 * np.array([1.0, 2.0]) * (rank + 1) * (right + 1)
ok = value == want_value and np.array_equal(grad, want_grad)
if rank == 0:
    print(f"rank 0 received {got}, "
          f"loss {value:g} (by hand {want_value:g}), gradient {grad} (by hand {want_grad})")
sys.exit(0 if MPI.COMM_WORLD.allreduce(ok, op=MPI.LAND) else 1)
