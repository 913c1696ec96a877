"""Per-run overhead of Session.run from Python against the same run made
from C++ in the same process (Session._time_cpp_runs), interleaved round by
round; and a numpy custom op's per-call cost against the built-in op doing
the same arithmetic. Prints one RESULT line per row (medians over rounds).

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [rounds]
"""

import statistics
import sys
import time

import numpy as np

import adgraph as ag

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
reps = 20000


def python_runs(session, fetch, feeds, n):
    start = time.perf_counter()
    for _ in range(n):
        session.run(fetch, feeds)
    return (time.perf_counter() - start) / n


g = ag.Graph()
x = g.placeholder("x", ())
one_node = ag.neg(x)
session = ag.Session(g)
feeds = {x: 1.0}
cube = ag.custom_op("bench_cube", forward=lambda v: v * v * v,
                    vjp=lambda xs, y, ybar: [3 * xs[0] ** 2 * ybar])
v = g.placeholder("v", (16,))
custom = cube(v)
builtin = v * v * v
vfeeds = {v: np.linspace(0, 1, 16)}

rows = {"python_run_us": [], "cpp_run_us": [], "custom_op_run_us": [], "builtin_run_us": []}
for _ in range(rounds):
    rows["python_run_us"].append(python_runs(session, one_node, feeds, reps) * 1e6)
    rows["cpp_run_us"].append(session._time_cpp_runs(one_node, feeds, reps) * 1e6)
    rows["custom_op_run_us"].append(python_runs(session, custom, vfeeds, reps // 4) * 1e6)
    rows["builtin_run_us"].append(python_runs(session, builtin, vfeeds, reps // 4) * 1e6)
med = {k: statistics.median(v) for k, v in rows.items()}
print(f"RESULT one_node python_run_us={med['python_run_us']:.2f} "
      f"cpp_run_us={med['cpp_run_us']:.2f} "
      f"python_minus_cpp_us={med['python_run_us'] - med['cpp_run_us']:.2f}")
print(f"RESULT custom_op_16 custom_run_us={med['custom_op_run_us']:.2f} "
      f"builtin_run_us={med['builtin_run_us']:.2f} "
      f"custom_op_overhead_us={med['custom_op_run_us'] - med['builtin_run_us']:.2f}")
