"""docs/STENCILS.md's points: receivers along a row and a source between
grid points, on an 8 x 120 grid split over the ranks.

    PYTHONPATH=build/python mpirun -n 2 /usr/bin/python3 examples/python/guide_points.py

u[i, j] = 1000 i + j. By hand: the receivers (2, 1) ... (2, 118) sit on
grid points, so they read u there exactly: 2001 ... 2118, whose sum is
118 * 2000 + 118 * 119 / 2 = 243021. The source at (3, 20.25) with
amplitude 4 adds 0.75 * 4 = 3 at (3, 20) and 0.25 * 4 = 1 at (3, 21), and
nothing elsewhere. The test examples/python/guide_points compares the
output with tests/guides/guide_points.expected.
"""

import numpy as np

import adgraph as ag
from adgraph import grid as agg

grid = agg.Grid((8, 120))
g = ag.Graph()
u = g.placeholder("u", grid.local_shape())
amplitude = g.placeholder("amplitude", (1,))
# doc:begin points
d = grid.sample(u, [[2.0, x] for x in range(1, 119)])   # (*batch, 118)
u1 = grid.inject(u, [[3.0, 20.25]], amplitude)          # amplitude: (*batch, 1)
# doc:end points
I, J = np.meshgrid(np.arange(8.0), np.arange(120.0), indexing="ij")
whole = 1000.0 * I + J
samples, injected = ag.Session(g).run(
    [d, u1], {u: grid.scatter(whole if grid.rank == 0 else None), amplitude: np.array([4.0])})
added = grid.gather(injected)
if grid.rank == 0:
    added = added - whole
    print(f"samples: {samples[0]:g} ... {samples[-1]:g}, sum {np.sum(samples):g}")
    print(f"added at (3, 20) and (3, 21): {added[3, 20]:g} {added[3, 21]:g}")
    added[3, 20:22] = 0.0
    print(f"added elsewhere: {np.max(np.abs(added)):g}")
