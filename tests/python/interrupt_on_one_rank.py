"""SIGINT (Ctrl-C) reaches the last rank during a long run while the others
wait in an allreduce: the job must end within seconds, naming the rank, not
at the deadline or at the end of the run (registered by tests/CMakeLists.txt
as an expected failure with a timeout far below both). Argument: ``loop``
(interrupted between two steps of a loop) or ``nodes`` (between two nodes
of a long chain)."""

import os
import signal
import sys
import threading

import numpy as np
from mpi4py import MPI

import adgraph as ag

g = ag.Graph()
if sys.argv[1:] == ["nodes"]:
    x = g.placeholder("x", (1 << 18,))
    y = x
    for _ in range(20000):  # about a minute of sines
        y = ag.sin(y)
    r = ag.sum(y)
else:
    x = g.placeholder("x", (1 << 16,))
    # About 6e9 sines: minutes of work, unless the interrupt ends it.
    r = ag.sum(ag.loop(100000, [x], [], lambda a: [ag.sin(a.carries[0])]).carries[0])
y = ag.mpi_allreduce(r)
if MPI.COMM_WORLD.rank == MPI.COMM_WORLD.size - 1:
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
ag.Session(g).run(y, {x: np.ones(x.shape)})
print(f"rank {MPI.COMM_WORLD.rank}: the run ended, which it must not", flush=True)
