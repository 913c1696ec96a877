"""Hello, distributed gradient, from Python: examples/hello.cc line for line.

Every rank r holds x_r = (r + 1) * [1, 2]; s = mpi_sum(x * x) sums the
squares onto rank 0, L = 0.5 * sum(s**2), and the gradient's reduce becomes
a broadcast: dL/dx_r = 2 x_r * s on every rank. At 4 ranks, by hand:
s = [30, 120], L = 7650, dL/dx_r = (r + 1) * [60, 480]
(tests/docs/hello_python.expected).

    PYTHONPATH=build/python mpirun -n 4 /usr/bin/python3 examples/python/hello.py
"""

# doc:begin hello
import numpy as np
from mpi4py import MPI

import adgraph as ag

rank = MPI.COMM_WORLD.rank

g = ag.Graph()                        # over MPI.COMM_WORLD
x = g.placeholder("x", (2,))          # this rank's part
s = ag.mpi_sum(x * x)                 # sum over ranks, on rank 0
loss = 0.5 * ag.sum(ag.square(s))     # zero on the other ranks
grad = ag.gradient(loss, x)           # this rank's dL/dx
grads = ag.mpi_gather(grad)           # [ranks, 2] on rank 0

r1 = rank + 1.0
s_, loss_, grads_ = ag.Session(g).run([s, loss, grads],
                                      {x: np.array([r1, 2 * r1])})
if rank == 0:
    print(f"s = [{s_[0]:g}, {s_[1]:g}]\nL = {loss_:g}")
    for q, (a, b) in enumerate(grads_):
        print(f"dL/dx on rank {q} = [{a:g}, {b:g}]")
# doc:end hello
