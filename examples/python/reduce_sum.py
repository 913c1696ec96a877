"""ADCME's reduce_sum from Python: a = (1, ..., 10) * rank is summed onto
rank 0 with mpi_sum; L = sum(b), and dL/da = 1 on every rank (the root's
cotangent is broadcast back).

    mpirun -n 4 /usr/bin/python3 examples/python/reduce_sum.py
    # b = (1, ..., 10) * P(P-1)/2 on rank 0, 0 elsewhere; dL/da = 1
"""

import sys

import numpy as np
from mpi4py import MPI

import adgraph as ag

rank, size = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size
g = ag.Graph()
a = g.placeholder("a", (10,))
b = ag.mpi_sum(a)
L = ag.sum(b)
grad = ag.gradient(L, a)
ones_to_ten = np.arange(1.0, 11.0)
b_value, g_value = ag.Session(g).run([b, grad], {a: ones_to_ten * rank})
# By hand: sum over ranks of i * r is i * P(P-1)/2, on the root only.
want_b = ones_to_ten * size * (size - 1) / 2 if rank == 0 else np.zeros(10)
ok = np.array_equal(b_value, want_b) and np.array_equal(g_value, np.ones(10))
if rank == 0:
    print(f"b = {b_value}\ndL/da = {g_value}")
sys.exit(0 if MPI.COMM_WORLD.allreduce(ok, op=MPI.LAND) else 1)
