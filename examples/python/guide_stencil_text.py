"""docs/STENCILS.md's text form of a stencil expression, and a stencil node
of a JSON document (tests/guides/stencil_node.json) run on 4 ranks.

    PYTHONPATH=build/python mpirun -n 4 /usr/bin/python3 examples/python/guide_stencil_text.py

The node is y = u + c2 * lap(u) on an 8 x 8 grid in 2 x 2 patches, zero
outside. By hand, with u = 1 and c2 = 0.5: lap(u) is -2 at the 4 corners,
-1 at the 24 other edge points and 0 inside, so L = sum(y) over every rank
= 64 + 0.5 * (4 * -2 + 24 * -1) = 48, and dL/dc2 = lap(u). The test
examples/python/guide_stencil_text compares the output with
tests/guides/guide_stencil_text.expected.
"""

import json
import os

import numpy as np

import adgraph as ag
from adgraph import grid as agg

grid = agg.Grid((8, 8), procs=(2, 2))
g = ag.Graph()
U = grid.field(g.placeholder("u", grid.local_shape()))
c = grid.field(g.placeholder("c", grid.local_shape()))
# doc:begin text
expr = agg.where(U > 0.5, agg.exp(U.shift((0, 1))) * c, -U) + U ** 2
text = expr.text
# doc:end text
if grid.rank == 0:
    print(text)

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "..", "..", "tests", "guides", "stencil_node.json")) as f:
    node = json.load(f)
document = {
    "adgraph": 1,
    "nodes": [{"name": "u", "op": "placeholder", "shape": [4, 4]},
              {"name": "c2", "op": "placeholder", "shape": [4, 4]},
              node,
              {"name": "L", "op": "mpi_total", "inputs": ["y"]}],
    "gradients": {"g": {"of": "L", "wrt": "c2"}},
    "feeds": {"u": np.ones((4, 4)).tolist(), "c2": np.full((4, 4), 0.5).tolist()},
    "fetch": ["L", "g"],
}
loaded = ag.load_json(json.dumps(document))
L, dc2 = ag.Session(loaded.graph).run(loaded.fetch_values, loaded.feeds)
gradient = grid.gather(dc2)
if grid.rank == 0:
    p = np.pad(np.ones((8, 8)), 1)
    lap = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0
    print(f"L = {float(L):g}")
    same = "yes" if np.array_equal(gradient, lap) else "NO"
    print(f"dL/dc2 at a corner, an edge, inside: {gradient[0, 0]:g} {gradient[0, 3]:g} "
          f"{gradient[3, 3]:g}; equal to lap(u): {same}")
