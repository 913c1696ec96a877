"""The 2-D FWI gradient of one shot (WAVE_SPEC, docs/WAVE_FWI.md) three ways,
run alternately in one invocation, each in a process of its own (so that
each has its own peak RSS), one thread each:

- adgraph: Python, one fused stencil node a step in ag.loop, the wavelet a
  per-step input (xs), the source through Grid.inject, the receiver row as a
  per-step output; store-all checkpoints.
- torch: Debian's PyTorch (python3-torch), float64, autograd through the same
  leapfrog written with slices and F.pad.
- hand: bench/stencil_bench's hand-written C++ loop and adjoint (wave2d,
  one shot, same grid and steps). It has no source or receivers: an initial
  pulse and a misfit of the last state. The stencil arithmetic per step is
  the same; the per-step source and receiver row are O(nx) a step.

    apt-get install python3-torch   # for impl=torch
    cmake --build build --target stencil_bench
    PYTHONPATH=build/python /usr/bin/python3 bench/wave_fwi_bench.py \
        [--n 120] [--steps 500] [--rounds 3] [--build build]

Prints one RESULT line per implementation: the medians over the rounds of
gradient_s (loss and gradient, after one warm-up run in the same process)
and peak_rss_mb, and the largest relative difference between adgraph's and
PyTorch's gradients (they sum in different orders: about 1e-13 is expected).
"""

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

H, DT, F0, ZS, ZR, AMPLITUDE = 10.0, 1.5e-3, 12.0, 3, 2, 1.0


def ricker(nt):
    t = np.arange(nt) * DT
    a = (math.pi * F0 * (t - 1.2 / F0)) ** 2
    return (1.0 - 2.0 * a) * np.exp(-a)


def models(n):
    z, x = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    start = 2000.0 + 4.0 * z
    anomaly = 150.0 * np.exp(-((z - 0.6 * n) ** 2 + (x - 0.5 * n) ** 2) / (0.1 * n) ** 2)
    return start, start + anomaly


def run_adgraph(n, nt, reps):
    import adgraph as ag
    from adgraph import grid as agg

    grid = agg.Grid((n, n))
    start, true = models(n)
    xs = n // 2
    wavelet = (AMPLITUDE * ricker(nt)).reshape(nt, 1)

    def records_of(g, c):
        c2 = (c * (DT / H)) * (c * (DT / H))
        zero = g.constant(np.zeros((n, n)))

        def step(a):
            u, um, k = (grid.field(v) for v in (a.carries[0], a.carries[1], a.invariants[0]))
            lap = u.shift((-1, 0)) + u.shift((1, 0)) + u.shift((0, -1)) + u.shift((0, 1)) - 4.0 * u
            nxt = grid.inject(grid.stencil(2.0 * u - um + k * lap), [[float(ZS), float(xs)]],
                              a.xs[0])
            return [nxt, a.carries[0]], [nxt[ZR]]

        return ag.loop(nt, [zero, zero], [c2], step, checkpoints="all",
                       xs=[g.constant(wavelet)]).outputs[0]

    g = ag.Graph()
    c = g.placeholder("c", (n, n))
    observed = ag.Session(g).run(records_of(g, c), {c: true})
    r = records_of(g, c) - g.constant(observed)
    loss = 0.5 * ag.mpi_total(r * r)
    session = ag.Session(g)
    fetch = [loss, ag.gradient(loss, c)]
    session.run(fetch, {c: start})  # first use: kernels, buffers
    times = []
    for _ in range(reps):
        begin = time.perf_counter()
        value, gradient = session.run(fetch, {c: start})
        times.append(time.perf_counter() - begin)
    return min(times), float(value), np.asarray(gradient)


def run_torch(n, nt, reps):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    start, true = models(n)
    wavelet = torch.tensor(AMPLITUDE * ricker(nt))
    xs = n // 2

    def records_of(c):
        c2 = (c * (DT / H)) * (c * (DT / H))
        u = torch.zeros((n, n), dtype=torch.float64)
        um = u
        rows = []
        for t in range(nt):
            p = F.pad(u, (1, 1, 1, 1))
            lap = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * u
            nxt = 2.0 * u - um + c2 * lap
            nxt = nxt.index_put((torch.tensor([ZS]), torch.tensor([xs])), wavelet[t:t + 1],
                                accumulate=True)
            rows.append(nxt[ZR])
            um, u = u, nxt
        return torch.stack(rows)

    with torch.no_grad():
        observed = records_of(torch.tensor(true))

    def gradient():
        c = torch.tensor(start, requires_grad=True)
        loss = 0.5 * ((records_of(c) - observed) ** 2).sum()
        loss.backward()
        return float(loss), c.grad.numpy()

    gradient()
    times = []
    for _ in range(reps):
        begin = time.perf_counter()
        value, g = gradient()
        times.append(time.perf_counter() - begin)
    return min(times), value, g


def child(args):
    """One implementation in this process: prints a JSON line."""
    run = {"adgraph": run_adgraph, "torch": run_torch}[args.child]
    seconds, loss, gradient = run(args.n, args.steps, args.reps)
    np.save(args.gradient_file, gradient)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"gradient_s": seconds, "loss": loss, "peak_rss_mb": peak}))


def hand(args, env):
    command = ["mpirun", "-n", "1", os.path.join(args.build, "bench", "stencil_bench"),
               "--case", "wave2d", "--n", str(args.n), "--steps", str(args.steps),
               "--shots", "1", "--reps", str(args.reps)]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("RESULT") and "impl=hand" in line:
            fields = dict(f.split("=", 1) for f in line.split()[1:])
            return {"gradient_s": float(fields["gradient_s"]),
                    "peak_rss_mb": float(fields["peak_rss_mb"])}
    raise RuntimeError("stencil_bench printed no hand RESULT line:\n" + out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=120, help="grid points per axis")
    parser.add_argument("--steps", type=int, default=500, help="time steps")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    parser.add_argument("--reps", type=int, default=2, help="timed runs per process (best)")
    parser.add_argument("--build", default="build", help="build folder (stencil_bench)")
    parser.add_argument("--child", choices=["adgraph", "torch"], help=argparse.SUPPRESS)
    parser.add_argument("--gradient-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1")
    results = {"adgraph": [], "torch": [], "hand": []}
    gradients = {}
    for _ in range(args.rounds):
        for impl in ("adgraph", "torch"):
            path = f"/tmp/wave_fwi_bench_{impl}_{os.getpid()}.npy"
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", impl,
                                  "--n", str(args.n), "--steps", str(args.steps),
                                  "--reps", str(args.reps), "--gradient-file", path],
                                 env=env, check=True, capture_output=True, text=True).stdout
            results[impl].append(json.loads(out.strip().splitlines()[-1]))
            gradients[impl] = np.load(path)
            os.remove(path)
        results["hand"].append(hand(args, env))
    a, t = gradients["adgraph"], gradients["torch"]
    difference = float(np.max(np.abs(a - t)) / np.max(np.abs(t)))
    for impl, runs in results.items():
        seconds = statistics.median(r["gradient_s"] for r in runs)
        rss = statistics.median(r["peak_rss_mb"] for r in runs)
        line = (f"RESULT case=wave_fwi2d impl={impl} ranks=1 n={args.n} steps={args.steps} "
                f"shots=1 rounds={args.rounds} gradient_s={seconds:.4g} peak_rss_mb={rss:.1f}")
        if impl == "adgraph":
            line += f" max_rel_diff_vs_torch={difference:.2g}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
