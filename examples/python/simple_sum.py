"""ADCME's simple_sum from Python: theta broadcast from rank 0, raised to
each rank's power, summed onto rank 0, and differentiated.

    mpirun -n 4 /usr/bin/python3 examples/python/simple_sum.py
    # L = 15, dL/dtheta = 17 on rank 0 (with 4 ranks)
"""

import sys

import numpy as np
from mpi4py import MPI

import adgraph as ag

rank, size = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size
g = ag.Graph()
theta = g.placeholder("theta", (1,))
ftheta = ag.mpi_bcast(theta, root=0)
l = ftheta ** ag.mpi_rank(g)
L = ag.sum(ag.mpi_sum(l))
dL = ag.gradient(L, theta)
value, grad = ag.Session(g).run([L, dL], {theta: np.array([2.0])})
ok = True
if rank == 0:
    # By hand: L = sum_r 2^r = 2^P - 1, dL/dtheta = sum_r r 2^(r-1).
    want_l = 2.0 ** size - 1
    want_g = sum(r * 2.0 ** (r - 1) for r in range(size))
    print(f"L = {value:g} (by hand {want_l:g}), dL/dtheta = {grad[0]:g} (by hand {want_g:g})")
    ok = value == want_l and grad[0] == want_g
sys.exit(0 if MPI.COMM_WORLD.allreduce(ok, op=MPI.LAND) else 1)
