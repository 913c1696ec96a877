"""ADCME's broadcast from Python (at least 4 ranks): a = (1, ..., 10) * rank
is broadcast from rank 3; every rank's loss is sum(b^2), so the gradient of
their sum is 2P * b on rank 3 and 0 elsewhere.

    mpirun -n 4 /usr/bin/python3 examples/python/broadcast.py
"""

import sys

import numpy as np
from mpi4py import MPI

import adgraph as ag

ROOT = 3
rank, size = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size
if size <= ROOT:
    if rank == 0:
        print(f"broadcast.py needs at least {ROOT + 1} ranks")
    sys.exit(2)
g = ag.Graph()
a = g.placeholder("a", (10,))
b = ag.mpi_bcast(a, root=ROOT)
grad = ag.gradient(ag.sum(ag.square(b)), a)
ones_to_ten = np.arange(1.0, 11.0)
b_value, g_value = ag.Session(g).run([b, grad], {a: ones_to_ten * rank})
# By hand: b = (1, ..., 10) * 3 everywhere; each of the P losses gives 2b
# back to the root.
want_b = ones_to_ten * ROOT
want_g = 2.0 * size * want_b if rank == ROOT else np.zeros(10)
ok = np.array_equal(b_value, want_b) and np.array_equal(g_value, want_g)
if rank == 0:
    print(f"b = {b_value}")
sys.exit(0 if MPI.COMM_WORLD.allreduce(ok, op=MPI.LAND) else 1)
