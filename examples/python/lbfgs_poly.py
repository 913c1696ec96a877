"""ADCME's L-BFGS fit from Python: minimise (sum(mpi_sum(f^rank)) - 2)^2
with f = mpi_bcast(theta), from theta = 1, with adgraph's distributed
L-BFGS. The minimiser is the positive root of 1 + t + ... + t^(P-1) = 2
(0.5436890126920764 with 4 ranks), which numpy.roots finds independently.

    mpirun -n 4 /usr/bin/python3 examples/python/lbfgs_poly.py
"""

import sys

import numpy as np
from mpi4py import MPI

import adgraph as ag

rank, size = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size
if size < 2:
    if rank == 0:
        print("lbfgs_poly.py needs at least 2 ranks (with one the loss is constant)")
    sys.exit(2)
g = ag.Graph()
theta = g.placeholder("theta", (1,))
f = ag.mpi_bcast(theta)
loss = ag.square(ag.sum(ag.mpi_sum(f ** ag.mpi_rank(g))) - 2.0)
result = ag.minimize(loss, [theta], [np.ones(1)], tolerance_gradient=1e-12)
# t^(P-1) + ... + t + (1 - 2) = 0: its one positive root.
roots = np.roots([1.0] * (size - 1) + [-1.0])
want = max(r.real for r in roots if abs(r.imag) < 1e-12 and r.real > 0)
found = result.x[0][0]
ok = abs(found - want) < 1e-10
if rank == 0:
    print(f"theta = {found:.16g} after {result.iterations} iterations "
          f"(numpy.roots: {want:.16g})")
sys.exit(0 if MPI.COMM_WORLD.allreduce(ok, op=MPI.LAND) else 1)
