"""heat_inversion from Python: recover the diffusivity kappa(x, y) of a 2-D
heat equation from temperature observations on px x py ranks, with the same
options, the same numbers and the same JSON result as the C++ program
(examples/heat_inversion.cc); the figures are drawn with matplotlib.

    mpirun -n 2 /usr/bin/python3 examples/python/heat_inversion.py \\
        --px 2 --py 1 --nx 32 --ny 32 --nt 200 --output heat_py.json
"""

import argparse
import json
import math
import os
import resource
import sys

import numpy as np
from mpi4py import MPI

import adgraph as ag

world = MPI.COMM_WORLD
rank = world.rank
root = rank == 0


LBFGS_FIELDS = ["history", "max_iterations", "max_evaluations",
                "tolerance_gradient", "tolerance_function"]


def parse():
    p = argparse.ArgumentParser(description="Recover the diffusivity of a 2-D "
                                "heat equation with distributed L-BFGS")
    # The problem's options and the optimiser's limits from the library's
    # field tables, as the C++ heat_inversion takes them (--nx, --nt,
    # --checkpoints, --kappa-min, ...; --max-iter and --tol too).
    ag.add_table_options(p, "HeatInverseOptions")
    ag.add_table_options(p, "LbfgsOptions", LBFGS_FIELDS,
                         aliases={"max_iterations": "--max-iter",
                                  "tolerance_gradient": "--tol"})
    p.add_argument("--output", default="heat_inversion.json",
                   help="JSON result; PNG files are written next to it")
    return p.parse_args()


def fail(message):
    """One message from rank 0, status 2 on every rank (every rank knows)."""
    if root:
        print(f"heat_inversion.py: {message}", file=sys.stderr)
    sys.exit(2)


def writable(path):
    """Why rank 0 could not write `path`, or None: checked before any work."""
    if os.path.isdir(path):
        return f"--output: {path}: is a directory, not a file; nothing was run"
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        return f"--output: {path}: cannot be written (no such folder); nothing was run"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"--output: {path}: cannot be written (permission denied); nothing was run"
    return None


def gather_grid(local, problem, nx, ny):
    """The whole grid on rank 0 (None elsewhere), from every rank's patch."""
    if problem.layout == "replicated":
        return np.asarray(local).reshape(nx, ny)
    parts = world.gather((problem.patch, np.asarray(local)), root=0)
    if not root:
        return None
    grid = np.empty((nx, ny))
    for patch, values in parts:
        r, c = patch["row0"], patch["col0"]
        grid[r:r + patch["n"], c:c + patch["m"]] = values
    return grid


def draw_field(path, values, h, title, unit, lo, hi, sensors, diverging=False):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    nx, ny = values.shape
    fig, ax = plt.subplots(figsize=(6, 5))
    extent = (0.5 * h, (ny + 0.5) * h, 0.5 * h, (nx + 0.5) * h)
    shown = np.where(np.isfinite(values), values, lo)
    image = ax.imshow(shown, origin="lower", extent=extent, vmin=lo, vmax=hi,
                      cmap="RdBu_r" if diverging else "viridis")
    if sensors:
        ax.plot([(j + 1) * h for _, j in sensors], [(i + 1) * h for i, _ in sensors],
                "k+", markersize=4)
    ax.set_xlabel("y")
    ax.set_ylabel("x")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label=unit)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw_convergence(path, loss, gradient_norm, label):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for series, name in ((loss, "loss"), (gradient_norm, label)):
        at = [k for k, v in enumerate(series) if math.isfinite(v) and v > 0]
        ax.semilogy(at, [series[k] for k in at], label=name)
    ax.set_xlabel("iteration")
    ax.set_title("L-BFGS convergence")
    ax.legend()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    a = parse()
    problem_here = world.bcast(writable(a.output) if root else None, root=0)
    if problem_here:
        fail(problem_here)
    try:
        problem = ag.solvers.HeatInverse(**ag.table_values(a, "HeatInverseOptions"))
    except ag.Error as e:
        fail(str(e))
    if root:
        print(f"heat inversion: {a.nx} x {a.ny} grid, {a.px} x {a.py} patches on "
              f"{world.size} ranks, {a.nt} steps, dt = {problem.dt:.6g}", flush=True)
    kappa = problem.kappa_start()
    try:
        summary = problem.fit(kappa, **ag.table_values(a, "LbfgsOptions", LBFGS_FIELDS),
                              trace=True)
    except ag.OptionsError as e:
        fail(str(e))
    kappa = summary.x
    forward, adjoint = problem.loop_stats()
    peak_rss_mb = world.allreduce(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                                  op=MPI.MAX)
    terms = problem.terms(kappa)
    truth = problem.kappa_true()
    relative_error = problem.relative_kappa_error(kappa)
    found = gather_grid(kappa, problem, a.nx, a.ny)
    exact = gather_grid(truth, problem, a.nx, a.ny)
    if not root:
        return 0
    print(f"relative L2 error of kappa: {relative_error:.6e}")
    bounded = a.kappa_min is not None or a.kappa_max is not None
    stem = a.output[:-5] if a.output.endswith(".json") and len(a.output) > 5 else a.output
    files = [stem + "_kappa_true.png", stem + "_kappa.png", stem + "_difference.png",
             stem + "_convergence.png"]

    def bound(b):
        return b if b is not None and math.isfinite(b) else None

    result = {
        "loss_history": summary.f_history,
        "iterations": summary.iterations,
        "resumed_at": summary.resumed_at,
        "evaluations": summary.evaluations,
        "termination": summary.termination,
        "relative_kappa_error": relative_error,
        "wall_time_s": summary.seconds,
        "ranks": world.size,
        "decomposition": {"px": a.px, "py": a.py, "nx": a.nx, "ny": a.ny, "nt": a.nt},
        "kappa_layout": problem.layout,
        "checkpoints": {
            "schedule": adjoint["schedule"],
            "snapshots": adjoint["max_snapshots"],
            "snapshot_mb": adjoint["snapshot_bytes"] / 1048576.0,
            "forward_evaluations_per_gradient":
                forward["forward_steps"] + adjoint["forward_steps"],
            "taped_steps_per_gradient": adjoint["taped_steps"]},
        "peak_rss_mb": peak_rss_mb,
        "observe_steps": a.observe_steps,
        "misfit": terms["misfit"],
        "regularization": {"tikhonov": terms["tikhonov"], "smoothness": terms["smoothness"]},
        "bounds": {"kappa_min": bound(a.kappa_min), "kappa_max": bound(a.kappa_max)},
        "active_bounds": summary.active_bounds,
        "sensors": len(problem.sensors),
        "noise": a.noise,
        "gradient_norm_history": summary.gradient_norm_history,
        "message": summary.message,
        "files": files,
    }
    # The result first, whole or not at all; then the figures.
    with open(a.output + ".partial", "w") as f:
        json.dump(result, f, indent=2, allow_nan=False)
        f.write("\n")
    os.replace(a.output + ".partial", a.output)
    h = 1.0 / (a.nx + 1)
    lo, hi = float(exact.min()), float(exact.max())
    difference = found - exact
    span = max(1e-12, float(np.max(np.abs(difference[np.isfinite(difference)]), initial=0)))
    draw_field(files[0], exact, h, "true diffusivity kappa", "kappa", lo, hi, problem.sensors)
    draw_field(files[1], found, h, f"recovered kappa ({summary.iterations} iterations, "
               f"rel. error {relative_error:.2e})", "kappa", lo, hi, problem.sensors)
    draw_field(files[2], difference, h, "recovered - true kappa", "difference", -span, span,
               problem.sensors, diverging=True)
    draw_convergence(files[3], summary.f_history, summary.gradient_norm_history,
                     "projected gradient norm" if bounded else "gradient norm")
    print("wrote " + ", ".join([a.output] + files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
