"""SIGINT (Ctrl-C) reaches one rank during a long run while the others wait
in an allreduce: the job must end within seconds, naming the rank, not at
the deadline (registered by tests/CMakeLists.txt as an expected failure
with a short timeout)."""

import os
import signal
import threading

import numpy as np
from mpi4py import MPI

import adgraph as ag

g = ag.Graph()
x = g.placeholder("x", (1 << 16,))
# About 6e9 sines: minutes of work, unless the interrupt ends it.
r = ag.loop(100000, [x], [], lambda a: [ag.sin(a.carries[0])])
y = ag.mpi_allreduce(ag.sum(r.carries[0]))
if MPI.COMM_WORLD.rank == MPI.COMM_WORLD.size - 1:
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
ag.Session(g).run(y, {x: np.ones(1 << 16)})
