"""Issue #34's copy-free acceptance, from Python (docs/PERFORMANCE.md).

At one rank, a 64 MiB feed and fetch (y = 2x over 2^23 doubles):
Session.run_into and Session.run from Python against the same runs made
from C++ in the same process (Session._time_cpp_runs, the feed read in place
by both), rounds interleaved; and each one's peak RSS above the process's
before the arrays existed, in a child process of its own, against the
arrays' own 128 MiB.

At two or more ranks, run() with fresh outputs (what Python users call,
each result dropped before the next run) of an mpi_allreduce of 128 KiB to
8 MiB against raw MPI_Allreduce through mpi4py into a kept array, and
against the same fresh-output run from C++, interleaved.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_zero_copy.py copy [rounds]
    PYTHONPATH=build/python mpirun -n 2 /usr/bin/python3 \
        bench/python_zero_copy.py allreduce [rounds]

Prints RESULT lines (medians over rounds) on rank 0.
"""

import statistics
import subprocess
import sys
import time

import numpy as np
from mpi4py import MPI

import adgraph as ag

N64 = 1 << 23  # 64 MiB of doubles


def timed(function, reps):
    start = time.perf_counter()
    for _ in range(reps):
        function()
    return (time.perf_counter() - start) / reps


def rss_kib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def peak_rss_ratio(mode):
    """In this (fresh) process: peak RSS above the start, over the arrays'."""
    g = ag.Graph()
    x = g.placeholder("x", (N64,))
    y = x * 2.0
    session = ag.Session(g)
    base = rss_kib("VmRSS")
    xv = np.ones(N64)
    if mode == "run_into":
        out = np.zeros(N64)
        for _ in range(3):
            session.run_into(y, {x: xv}, out)
    else:
        for _ in range(3):
            out = session.run(y, {x: xv})
            assert out[0] == 2.0
            del out
    extra = rss_kib("VmHWM") - base
    return extra / (2 * N64 * 8 / 1024)


def copy_rows(rounds):
    g = ag.Graph()
    x = g.placeholder("x", (N64,))
    y = x * 2.0
    session = ag.Session(g)
    xv = np.random.default_rng(1).standard_normal(N64)
    out = np.empty(N64)
    rows = {"py_into": [], "cpp_into": [], "py_run": [], "cpp_run": []}

    def fresh():
        r = session.run(y, {x: xv})
        del r

    for _ in range(rounds):
        rows["py_into"].append(timed(lambda: session.run_into(y, {x: xv}, out), 5))
        rows["cpp_into"].append(session._time_cpp_runs(y, {x: xv}, 5, into=True))
        rows["py_run"].append(timed(fresh, 5))
        rows["cpp_run"].append(session._time_cpp_runs(y, {x: xv}, 5))
    np.testing.assert_array_equal(out, 2.0 * xv)
    med = {k: statistics.median(v) * 1e3 for k, v in rows.items()}
    ratios = {}
    for mode in ("run_into", "run"):
        child = subprocess.run(
            [sys.executable, __file__, "rss", mode], check=True,
            capture_output=True, text=True)
        ratios[mode] = float(child.stdout.split()[-1])
    print(f"RESULT feed_fetch_64MiB run_into_ms python={med['py_into']:.2f} "
          f"cpp={med['cpp_into']:.2f} ratio={med['py_into'] / med['cpp_into']:.3f} "
          f"peak_rss_over_arrays={ratios['run_into']:.3f}")
    print(f"RESULT feed_fetch_64MiB run_ms python={med['py_run']:.2f} "
          f"cpp={med['cpp_run']:.2f} ratio={med['py_run'] / med['cpp_run']:.3f} "
          f"peak_rss_over_arrays={ratios['run']:.3f}")


def allreduce_rows(rounds):
    comm = MPI.COMM_WORLD
    for kib in (128, 512, 2048, 8192):
        n = kib * 1024 // 8
        g = ag.Graph()
        x = g.placeholder("x", (n,))
        y = ag.mpi_allreduce(x)
        session = ag.Session(g)
        xv = np.full(n, 1.0 + comm.rank)
        out = np.empty(n)
        reps = max(10, 4096 // kib * 10)

        def fresh():
            r = session.run(y, {x: xv})
            del r

        rows = {"py": [], "mpi": [], "cpp": []}
        for _ in range(rounds):
            comm.Barrier()
            rows["py"].append(timed(fresh, reps))
            comm.Barrier()
            rows["mpi"].append(timed(lambda: comm.Allreduce(xv, out), reps))
            comm.Barrier()
            rows["cpp"].append(session._time_cpp_runs(y, {x: xv}, reps))
        expected = comm.size * (comm.size + 1) / 2
        assert session.run(y, {x: xv})[0] == expected
        med = {k: statistics.median(v) * 1e6 for k, v in rows.items()}
        if comm.rank == 0:
            print(f"RESULT allreduce_fresh P={comm.size} size_kib={kib} "
                  f"python_run_us={med['py']:.1f} mpi_allreduce_us={med['mpi']:.1f} "
                  f"cpp_run_us={med['cpp']:.1f} "
                  f"python_over_mpi={med['py'] / med['mpi']:.3f} "
                  f"cpp_over_mpi={med['cpp'] / med['mpi']:.3f}")


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "rss":
        print(peak_rss_ratio(sys.argv[2]))
    elif what == "copy":
        copy_rows(int(sys.argv[2]) if len(sys.argv) > 2 else 5)
    elif what == "allreduce":
        allreduce_rows(int(sys.argv[2]) if len(sys.argv) > 2 else 5)
    else:
        sys.exit(f"unknown part {what!r}: copy, allreduce or rss")
