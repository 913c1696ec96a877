"""Your own PDE: a 2-D acoustic wave, leapfrog with the 5-point Laplacian
(zero outside the grid), as one fused stencil per step in a loop, its loss
summed exactly over the ranks and its gradient with respect to c².

    PYTHONPATH=build/python mpirun -n 4 /usr/bin/python3 examples/python/wave_step.py

u⁺ = 2u − u⁻ + c²·lap(u) (c² = (c·dt/h)²), u⁻ = u = pulse at t = 0;
L = ½ Σ (u_T − d)² over every point of every rank. Rank 0 runs the same
steps with NumPy and checks the loss to 1e-12 (docs/STENCILS.md).
"""

# doc:begin step
import numpy as np

import adgraph as ag
from adgraph import grid as agg

n, steps = 48, 40
grid = agg.Grid((n, n))  # balanced_procs: 2 x 2 patches at 4 ranks, 1 x 1 at 1
X, Y = np.meshgrid(np.linspace(-1.0, 1.0, n), np.linspace(-1.0, 1.0, n), indexing="ij")
pulse = np.exp(-40.0 * (X ** 2 + Y ** 2))
c2_model = np.where(X > 0.3, 0.25, 0.2)  # (c·dt/h)²: a faster layer below
d = 0.5 * pulse  # the "recorded" field


def step(a):
    U, Um, C = (grid.field(v) for v in (a.carries[0], a.carries[1], a.invariants[0]))
    lap = U.shift((-1, 0)) + U.shift((1, 0)) + U.shift((0, -1)) + U.shift((0, 1)) - 4.0 * U
    return [grid.stencil(2.0 * U - Um + C * lap), a.carries[0]]


g = ag.Graph()
c2 = g.placeholder("c2", grid.local_shape())
u0 = g.constant(grid.scatter(pulse if grid.rank == 0 else None))
misfit = ag.loop(steps, [u0, u0], [c2], step).carries[0] - g.constant(grid.scatter(d))
loss = 0.5 * ag.mpi_total(misfit * misfit)  # exact over ranks, on rank 0
L, dL = ag.Session(g).run([loss, ag.gradient(loss, c2)],
                          {c2: grid.scatter(c2_model if grid.rank == 0 else None)})
gradient = grid.gather(dL)
# doc:end step
if grid.rank == 0:
    u, um = pulse, pulse
    for _ in range(steps):
        p = np.pad(u, 1)  # zero outside the grid
        lap = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * u
        u, um = 2.0 * u - um + c2_model * lap, u
    L_numpy = 0.5 * np.sum((u - d) ** 2)
    print(f"loss {float(L):.17g} (NumPy {L_numpy:.17g}), |dL/dc2| {np.linalg.norm(gradient):.6g}")
    assert abs(L - L_numpy) <= 1e-12 * abs(L_numpy), (float(L), L_numpy)
