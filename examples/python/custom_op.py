"""A custom op written in numpy: y = softplus(x) = log(1 + e^x), with its
vjp and jvp, differentiated and checked like a built-in op — also through
an mpi_allreduce and inside a loop with a binomial checkpoint schedule.

    mpirun -n 2 /usr/bin/python3 examples/python/custom_op.py
"""

import sys

import numpy as np
from mpi4py import MPI

import adgraph as ag


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


softplus = ag.custom_op(
    "softplus",
    forward=lambda x: np.logaddexp(0, x),
    vjp=lambda xs, y, ybar: [ybar * sigmoid(xs[0])],
    jvp=lambda xs, ts: ts[0] * sigmoid(xs[0]),
    doc="y = log(1 + e^x), in numpy")

rank = MPI.COMM_WORLD.rank
g = ag.Graph()
x = g.placeholder("x", (4,))
steps = ag.loop(10, [x], [], lambda s: [softplus(s.carries[0]) * 0.5], checkpoints=3)
loss = ag.sum(ag.mpi_allreduce(steps.carries[0]) * (rank + 1.0))
feeds = {x: np.linspace(-1, 1, 4) + rank}
grad = ag.Session(g).run(ag.gradient(loss, x), feeds)
check = ag.check_gradients(loss, [x], feeds)
# By hand, on this rank's x: ten steps of c -> softplus(c)/2 and their derivative.
c, d = feeds[x].copy(), np.ones(4)
for _ in range(10):
    d = d * sigmoid(c) * 0.5
    c = np.logaddexp(0, c) * 0.5
size = MPI.COMM_WORLD.size
weights = size * (size + 1) / 2  # the allreduced sum reaches every rank's loss
ok = check.ok and np.allclose(grad, d * weights, rtol=1e-13)
if rank == 0:
    print(f"gradient check: {'passed' if check.ok else check.message}; "
          f"gradient {grad} (by hand {d * weights})")
sys.exit(0 if MPI.COMM_WORLD.allreduce(ok, op=MPI.LAND) else 1)
