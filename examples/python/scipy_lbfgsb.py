"""SciPy's L-BFGS-B driving a distributed graph: a least-squares fit whose
rows are spread over the ranks, bounded below, with every rank running SciPy
in lockstep on identical iterates.

    mpirun -n 4 /usr/bin/python3 examples/python/scipy_lbfgsb.py
"""

import sys

import numpy as np
import scipy.optimize
from mpi4py import MPI

import adgraph as ag

world = MPI.COMM_WORLD
rank, size = world.rank, world.size


def rows(r):
    rng = np.random.default_rng(7 + r)
    return rng.normal(size=(8, 4)), rng.normal(size=8)


g = ag.Graph()
theta = g.placeholder("theta", (4,))
a, b = rows(rank)
residual = ag.matvec(g.constant(a), ag.mpi_bcast(theta)) - b
loss = ag.sum(ag.mpi_sum(ag.sum(ag.square(residual))))  # on rank 0

fun = ag.scipy_objective(loss, [theta])
bounds = [(-0.2, None)] * 4
result = scipy.optimize.minimize(fun, np.zeros(4), jac=True, method="L-BFGS-B",
                                 bounds=bounds, options={"gtol": 1e-12, "ftol": 1e-15})
# The same iterates on every rank, bit for bit.
same = all(x == result.x.tobytes() for x in world.allgather(result.x.tobytes()))
# SciPy's own bounded least squares on the gathered rows as the oracle.
parts = [rows(r) for r in range(size)]
oracle = scipy.optimize.lsq_linear(np.vstack([p[0] for p in parts]),
                                   np.concatenate([p[1] for p in parts]),
                                   bounds=(-0.2, np.inf), tol=1e-14).x
ok = same and np.allclose(result.x, oracle, atol=1e-6)
if rank == 0:
    print(f"theta = {result.x} after {result.nit} iterations (lsq_linear: {oracle}); "
          f"identical on every rank: {same}")
sys.exit(0 if ok else 1)
