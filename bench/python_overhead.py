"""Per-run overhead of Session.run from Python against the same run made
from C++ in the same process (Session._time_cpp_runs), interleaved round by
round; and a numpy custom op's per-call cost against the built-in op doing
the same arithmetic, next to torch.autograd.Function's against torch's own
ops on the same 16 doubles (when torch imports: Debian's python3-torch, for
this benchmark only). Prints one RESULT line per row (medians over rounds).

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


try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    class TorchCube(torch.autograd.Function):
        """y = x^3 as a torch.autograd.Function (the custom op's twin)."""

        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t * t

        @staticmethod
        def backward(ctx, ybar):
            (t,) = ctx.saved_tensors
            return 3 * t * t * ybar

    t = torch.linspace(0, 1, 16, dtype=torch.float64, requires_grad=True)
    torch_rows = {"function_us": [], "builtin_us": []}

    def calls(function, n):
        start = time.perf_counter()
        for _ in range(n):
            function()
        return (time.perf_counter() - start) / n * 1e6

    for _ in range(rounds):
        torch_rows["function_us"].append(calls(lambda: TorchCube.apply(t), reps // 4))
        torch_rows["builtin_us"].append(calls(lambda: t * t * t, reps // 4))
    tmed = {k: statistics.median(v) for k, v in torch_rows.items()}
    print(f"RESULT torch_function_16 function_call_us={tmed['function_us']:.2f} "
          f"builtin_call_us={tmed['builtin_us']:.2f} "
          f"function_overhead_us={tmed['function_us'] - tmed['builtin_us']:.2f} "
          f"(torch {torch.__version__}, {torch.get_num_threads()} threads)")
