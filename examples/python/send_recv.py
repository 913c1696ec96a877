"""ADCME's send_recv from Python (at least 3 ranks): rank 0 sends a to rank
2 and rank 2 returns it (mpi_sendrecv); the other ranks keep their own
a = (1, ..., 10) + rank. Each rank's loss is sum(y^2), so d/da is 4a on
rank 0 (its loss and rank 2's), 0 on rank 2 (its a was replaced) and 2a
elsewhere.

    mpirun -n 3 /usr/bin/python3 examples/python/send_recv.py
"""

import sys

import numpy as np
from mpi4py import MPI

import adgraph as ag

rank, size = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size
if size < 3:
    if rank == 0:
        print("send_recv.py needs at least 3 ranks")
    sys.exit(2)
g = ag.Graph()
a = g.placeholder("a", (10,))
y = ag.mpi_sendrecv(a, src=0, dest=2)
grad = ag.gradient(ag.sum(ag.square(y)), a)
mine = np.arange(1.0, 11.0) + rank
y_value, g_value = ag.Session(g).run([y, grad], {a: mine})
rank0 = np.arange(1.0, 11.0)
want_y = rank0 if rank == 2 else mine
want_g = {0: 4 * mine, 2: np.zeros(10)}.get(rank, 2 * mine)
ok = np.array_equal(y_value, want_y) and np.array_equal(g_value, want_g)
if rank == 0:
    print("rank 0 sent (1, ..., 10) to rank 2, which returned it")
sys.exit(0 if MPI.COMM_WORLD.allreduce(ok, op=MPI.LAND) else 1)
