"""Synchronous data-parallel training (the Technion assignment's setting)
from Python: each rank holds a shard of a synthetic logistic-regression
data set, mpi_allreduce inside the graph sums the loss and its gradient, and
every rank takes the same full-batch gradient step. A single-process NumPy
implementation of the same training on the whole data set is the oracle:
the parameters agree to round-off (the sums are grouped by shard), and
every rank holds bitwise the same parameters.

    mpirun -n 4 /usr/bin/python3 examples/python/data_parallel_train.py
"""

import sys

import numpy as np
from mpi4py import MPI

import adgraph as ag

SAMPLES, FEATURES, STEPS, RATE = 240, 4, 200, 0.5

world = MPI.COMM_WORLD
rank, size = world.rank, world.size

# The data: features with a bias column, labels from a noisy linear rule.
rng = np.random.default_rng(2024)
x_all = np.hstack([rng.normal(size=(SAMPLES, FEATURES)), np.ones((SAMPLES, 1))])
w_true = np.array([1.5, -2.0, 0.5, 1.0, -0.3])
y_all = (x_all @ w_true + 0.5 * rng.normal(size=SAMPLES) > 0).astype(float)
lo, hi = SAMPLES * rank // size, SAMPLES * (rank + 1) // size

# The graph: this rank's mean-loss share, summed over the ranks.
g = ag.Graph()
theta = g.placeholder("theta", (FEATURES + 1,))
z = ag.matvec(g.constant(x_all[lo:hi]), theta)
softplus = 0.5 * (z + ag.abs(z)) + ag.log(1.0 + ag.exp(-ag.abs(z)))
local_loss = ag.sum(softplus - g.constant(y_all[lo:hi]) * z) / SAMPLES
loss = ag.mpi_allreduce(local_loss, op="sum")
grad = ag.mpi_allreduce(ag.gradient(local_loss, theta), op="sum")

session = ag.Session(g)
params = np.zeros(FEATURES + 1)
for _ in range(STEPS):
    value, step = session.run([loss, grad], {theta: params})
    params = params - RATE * step


# The oracle: the same training in one process with NumPy.
def numpy_loss_and_gradient(w):
    logits = x_all @ w
    sigmoid = 1.0 / (1.0 + np.exp(-logits))
    f = np.mean(np.logaddexp(0.0, logits) - y_all * logits)
    return f, x_all.T @ (sigmoid - y_all) / SAMPLES


reference = np.zeros(FEATURES + 1)
for _ in range(STEPS):
    reference = reference - RATE * numpy_loss_and_gradient(reference)[1]
final_loss = session.run(loss, {theta: params})

same = all(p == params.tobytes() for p in world.allgather(params.tobytes()))
gap = np.max(np.abs(params - reference))
ok = same and gap < 1e-12 and abs(final_loss - numpy_loss_and_gradient(params)[0]) < 1e-14
if rank == 0:
    print(f"{size} ranks, {STEPS} steps: loss {final_loss:.12f}, theta {params}; "
          f"largest difference from single-process NumPy {gap:.2e}; "
          f"identical on every rank: {same}")
sys.exit(0 if world.allreduce(ok, op=MPI.LAND) else 1)
