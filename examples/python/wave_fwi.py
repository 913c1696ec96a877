"""Acoustic full-waveform inversion (issue #55, docs/WAVE_FWI.md): recover
the velocity c at every grid point from shot records, with shots × space
parallelism (adgraph.ensemble), one fused stencil per time step, sources
through Grid.inject and L-BFGS(-B) on the sharded control.

    PYTHONPATH=build/python mpirun -n 4 /usr/bin/python3 examples/python/wave_fwi.py \\
        --shot-groups 2 --pz 2 --px 1 --max-iter 20 --output fwi.json

The discrete problem (WAVE_SPEC): u^{n+1} = 2uⁿ − u^{n−1} + (c·dt/h)²·Lap(uⁿ)
+ A·r(tₙ) at each shot's source, u⁰ = u⁻¹ = 0, zero outside the grid;
records d_s[n] = u_s^{n+1} on the plane z = zr; J = ½ Σ (d − d_obs)².
Axis 0 is depth z; files are raw float64, row-major.
"""

import argparse
import json
import math
import os
import resource
import sys
import time

import numpy as np
from mpi4py import MPI

import adgraph as ag
from adgraph import grid as agg

world = MPI.COMM_WORLD
SPONGE_REFLECTION = 1e-3  # R in σ_max = 3·v·ln(1/R) / (2·W·h)


class Parser(argparse.ArgumentParser):
    """argparse whose usage, errors and --help print on world rank 0 only
    (every rank parses the same arguments and exits with the same status)."""

    def _print_message(self, message, file=None):
        if world.rank == 0:
            super()._print_message(message, file)


class Defaults(argparse.ArgumentDefaultsHelpFormatter):
    """--help shows each default that is not None (those are described)."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def parse(argv=None):
    p = Parser(description="Acoustic FWI with shots x space parallelism (docs/WAVE_FWI.md)",
               formatter_class=Defaults)
    p.add_argument("--nz", type=int, default=60, help="grid points along depth z (axis 0)")
    p.add_argument("--nx", type=int, default=80, help="grid points along x (axis 1)")
    p.add_argument("--ny", type=int, default=0, help="grid points along y: > 0 runs 3-D")
    p.add_argument("--h", type=float, default=10.0, help="grid spacing (m)")
    p.add_argument("--dt", type=float, default=1.5e-3, help="time step (s)")
    p.add_argument("--nt", type=int, default=400, help="time steps")
    p.add_argument("--f0", type=float, default=12.0, help="Ricker peak frequency (Hz)")
    p.add_argument("--amplitude", type=float, default=1.0, help="source amplitude A")
    p.add_argument("--source-depth", type=float, default=None,
                   help="zs, index along z (may be fractional; default nz - 4)")
    p.add_argument("--shots", type=float, nargs="+", default=None,
                   help="xs of each shot, index along x (default nx/4, nx/2, 3nx/4)")
    p.add_argument("--receiver-depth", type=float, default=2.0,
                   help="zr: a receiver at every grid point (x, y) of the plane z = zr; "
                   "a fractional zr samples between two rows (Grid.sample)")
    p.add_argument("--sponge", type=int, default=0, help="damping layer width W (points)")
    p.add_argument("--free-surface", action="store_true",
                   help="no damping layer at the top (u = 0 above it: pressure release)")
    p.add_argument("--pz", type=int, default=None, help="patches along z")
    p.add_argument("--px", type=int, default=None, help="patches along x")
    p.add_argument("--py", type=int, default=None, help="patches along y (3-D)")
    p.add_argument("--shot-groups", type=int, default=1,
                   help="G groups of ranks, each running its share of the shots")
    p.add_argument("--start-model", help="start velocity, raw float64 [nz, nx(, ny)]")
    p.add_argument("--true-model", help="true velocity, raw float64 [nz, nx(, ny)]")
    p.add_argument("--observed", help="observed data, raw float64 [shots, nt, nx(, ny)]")
    p.add_argument("--dump-gradient",
                   help="write dJ/dc at the start model (raw float64 [nz, nx(, ny)])")
    p.add_argument("--max-iter", type=int, default=20,
                   help="L-BFGS(-B) iterations; 0 with --dump-gradient: dump and exit")
    p.add_argument("--tol", type=float, default=1e-12, help="gradient tolerance (inf norm)")
    p.add_argument("--vmin", type=float, default=-math.inf, help="lower bound on c")
    p.add_argument("--vmax", type=float, default=math.inf, help="upper bound on c")
    p.add_argument("--checkpoints", default="all",
                   help="the loop adjoint's schedule: all, auto, N (binomial, N "
                   "snapshots), every:K or budget:BYTES")
    p.add_argument("--output", default="wave_fwi.json",
                   help="JSON result; figures and a .vti are written next to it")
    a = p.parse_args(argv)
    a.ndim = 3 if a.ny > 0 else 2
    if a.source_depth is None:
        a.source_depth = float(a.nz - 4)
    if a.shots is None:
        a.shots = [float(a.nx // 4), float(a.nx // 2), float(3 * a.nx // 4)]
    return a


def shape_of(a):
    return (a.nz, a.nx, a.ny) if a.ndim == 3 else (a.nz, a.nx)


def procs_of(a, patches):
    """Patches per axis: the options given, else balanced over `patches`."""
    given = [a.pz, a.px] + ([a.py] if a.ndim == 3 else [])
    if all(p is not None for p in given):
        return tuple(given)
    return agg.balanced_procs(patches, shape_of(a))


def checkpoint_schedule(text):
    """--checkpoints as ag.loop's `checkpoints`, or None when malformed (the
    library's schedule grammar: all, auto, N, every:K, budget:BYTES)."""
    try:
        ag.checkpoint_schedule(text)
    except ag.OptionsError:
        return None
    return text


def ricker(a):
    """r(tₙ) = (1 − 2α)·e^{−α}, α = (π f0 (tₙ − 1.2/f0))², tₙ = n·dt."""
    t = np.arange(a.nt) * a.dt
    alpha = (np.pi * a.f0 * (t - 1.2 / a.f0)) ** 2
    return (1.0 - 2.0 * alpha) * np.exp(-alpha)


def builtin_models(a):
    """(true, start): 2000 m/s with a smooth +10% Gaussian anomaly at the
    centre (width a sixth of the smaller extent); start: 2000 m/s."""
    shape = shape_of(a)
    axes = np.meshgrid(*[np.arange(n, dtype=np.float64) for n in shape], indexing="ij")
    r2 = sum((x - (n - 1) / 2.0) ** 2 for x, n in zip(axes, shape))
    width = min(shape) / 6.0
    true = 2000.0 * (1.0 + 0.1 * np.exp(-r2 / (2.0 * width ** 2)))
    return true, np.full(shape, 2000.0)


def read_model(path, a):
    return np.fromfile(path, dtype=np.float64).reshape(shape_of(a))


def file_problem(a):
    """Why a model or data file is unusable, or None (sizes checked)."""
    n = int(np.prod(shape_of(a)))
    wanted = {"start_model": n, "true_model": n,
              "observed": len(a.shots) * a.nt * n // a.nz}
    for name, count in wanted.items():
        path = getattr(a, name)
        if path is None:
            continue
        option = "--" + name.replace("_", "-")
        if not os.path.isfile(path):
            return f"{option}: {path}: no such file"
        size = os.path.getsize(path)
        if size != 8 * count:
            return (f"{option}: {path}: {size} bytes, expected {8 * count} "
                    f"({count} float64 values)")
        values = np.fromfile(path, dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            return (f"{option}: {path}: {bad.size} values are not finite, the first "
                    f"at flat index {bad[0]} ({values[bad[0]]})")
        if name != "observed":
            bad = np.flatnonzero(values <= 0.0)
            if bad.size:
                return (f"{option}: {path}: {bad.size} velocities are not positive, the "
                        f"first at flat index {bad[0]} ({values[bad[0]]})")
    return None


def bounds_problem(a):
    """A start model outside [--vmin, --vmax] (L-BFGS-B would silently
    project it onto the bounds), or None."""
    if not (math.isfinite(a.vmin) or math.isfinite(a.vmax)):
        return None
    start = read_model(a.start_model, a) if a.start_model else builtin_models(a)[1]
    lo, hi = float(np.min(start)), float(np.max(start))
    if a.vmin <= lo and hi <= a.vmax:
        return None
    what = f"--start-model: {a.start_model}" if a.start_model else \
        "--vmin/--vmax: the built-in start model"
    return (f"{what}: values from {lo:g} to {hi:g} lie outside the bounds "
            f"[{a.vmin:g}, {a.vmax:g}] of --vmin/--vmax")


def option_problem(a, size):
    """The first bad option, as one message naming it, or None. Every rank
    computes the same answer from the same options and files."""
    shape = shape_of(a)
    for name in ("nz", "nx", "nt"):
        if getattr(a, name) < 2:
            return f"--{name}: expected at least 2, got {getattr(a, name)}"
    if a.ny < 0 or a.ny == 1:
        return f"--ny: expected 0 (2-D) or at least 2, got {a.ny}"
    if a.ndim == 2 and a.py is not None:
        return "--py: patches along y need a 3-D grid (--ny)"
    for name in ("h", "dt", "f0"):
        if not (math.isfinite(getattr(a, name)) and getattr(a, name) > 0):
            return f"--{name}: expected a positive number, got {getattr(a, name)}"
    if not math.isfinite(a.amplitude):
        return f"--amplitude: expected a finite number, got {a.amplitude}"
    if not (math.isfinite(a.tol) and a.tol >= 0):
        return f"--tol: expected a finite number >= 0, got {a.tol}"
    if not 1 <= a.shot_groups <= size:
        return f"--shot-groups: {a.shot_groups} groups for {size} ranks (1 to {size})"
    if a.shot_groups > len(a.shots):
        return f"--shot-groups: {a.shot_groups} groups for {len(a.shots)} shots"
    if size % a.shot_groups:
        return f"--shot-groups: {size} ranks do not split into {a.shot_groups} equal groups"
    patches = size // a.shot_groups
    given = [a.pz, a.px] + ([a.py] if a.ndim == 3 else [])
    names = ["--pz", "--px", "--py"][:a.ndim]
    if any(p is not None for p in given):
        if any(p is None or p < 1 for p in given):
            return f"{'/'.join(names)}: give all of them, each >= 1"
        if int(np.prod(given)) != patches:
            return (f"{'*'.join(names)}: {'*'.join(map(str, given))} = {int(np.prod(given))} "
                    f"patches, but {size} ranks in {a.shot_groups} groups need {patches}")
        for p, n, name in zip(given, shape, names):
            if p > n:
                return f"{name}: {p} patches for {n} points"
    if not 0 <= a.source_depth <= a.nz - 1:
        return f"--source-depth: {a.source_depth} is outside the grid [0, {a.nz - 1}]"
    for x in a.shots:
        if not 0 <= x <= a.nx - 1:
            return f"--shots: source x = {x} is outside the grid [0, {a.nx - 1}]"
    if not 0 <= a.receiver_depth <= a.nz - 1:
        return f"--receiver-depth: {a.receiver_depth} is outside the grid [0, {a.nz - 1}]"
    if a.sponge < 0 or 2 * a.sponge >= min(shape):
        return f"--sponge: width {a.sponge} must be >= 0 and leave an interior"
    if checkpoint_schedule(a.checkpoints) is None:
        try:
            ag.checkpoint_schedule(a.checkpoints)
        except ag.OptionsError as e:
            return f"--{e}"
    if a.max_iter < 0:
        return f"--max-iter: expected >= 0, got {a.max_iter}"
    if not a.vmin < a.vmax:
        return f"--vmin/--vmax: expected vmin < vmax, got {a.vmin} and {a.vmax}"
    return file_problem(a) or bounds_problem(a) or cfl_problem(a)


def path_problem(option, path):
    """Why `path` cannot be written (a folder, a missing or unwritable
    folder), or None. Tries to create it, and removes what it created."""
    if os.path.isdir(path):
        return f"{option}: {path} is a folder; give a file name"
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        what = "is not a folder" if os.path.exists(folder) else "does not exist"
        return f"{option}: {path}: the folder {folder} {what}"
    existed = os.path.exists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as e:
        return f"{option}: {path}: cannot be written ({e.strerror})"
    if not existed:
        os.remove(path)
    return None


def output_problem(a):
    """The first output path that cannot be written, or None (rank 0 only:
    the files are written there)."""
    if os.path.isdir(a.output):
        return f"--output: {a.output} is a folder; give a file name"
    problem = path_problem("--output", a.output + ".partial")
    if problem:
        return problem.replace(a.output + ".partial", a.output)
    if a.dump_gradient:
        return path_problem("--dump-gradient", a.dump_gradient)
    return None


def cfl_problem(a):
    """--dt beyond the CFL limit c_max·dt/h·sqrt(ndim) ≤ 1 of any model used."""
    true, start = models(a)
    c_max = max(float(np.max(m)) for m in (true, start) if m is not None)
    if math.isfinite(a.vmax):
        c_max = max(c_max, a.vmax)
    number = c_max * a.dt / a.h * math.sqrt(a.ndim)
    if not number <= 1.0:
        return (f"--dt: {a.dt} is beyond the CFL limit: c_max·dt/h·sqrt({a.ndim}) = "
                f"{number:.4g} > 1 (c_max = {c_max:g}); take dt <= "
                f"{a.h / (c_max * math.sqrt(a.ndim)):.4g}")
    return None


def sponge_warnings(a):
    """Sources or the receiver plane inside the damping layer, as warnings
    (the source is added undamped; records there are damped)."""
    w = a.sponge
    if w == 0:
        return []

    def inside(i, n, top=False):
        return (i < w and not (top and a.free_surface)) or i > n - 1 - w

    out = []
    where = [x for x in a.shots if inside(x, a.nx)]
    if inside(a.source_depth, a.nz, top=True) or where:
        at = (f"--source-depth {a.source_depth:g}" if inside(a.source_depth, a.nz, top=True)
              else "--shots " + " ".join(f"{x:g}" for x in where))
        out.append(f"{at}: sources inside the {w}-point sponge layer (--sponge), where "
                   "they are added undamped")
    if inside(a.receiver_depth, a.nz, top=True):
        out.append(f"--receiver-depth {a.receiver_depth:g}: the receivers lie inside the "
                   f"{w}-point sponge layer (--sponge), which damps what they record")
    return out


def round_down(x, digits=3):
    """x rounded down to `digits` significant digits (x > 0): a limit to
    quote that still satisfies it."""
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(x)))
    return math.floor(x * scale) / scale


def frequency_warnings(a, true, start):
    """--f0 too high for the grid: fewer than 5 points per minimum
    wavelength c_min / (2.5·f0·h), with 2.5·f0 taken as the Ricker's
    highest useful frequency and c_min the slowest velocity of the models
    used (the wave is then dispersed by the second-order stencil)."""
    c_min = min(float(np.min(m)) for m in (true, start) if m is not None)
    points = c_min / (2.5 * a.f0 * a.h)
    if points >= 5.0:
        return []
    return [f"--f0 {a.f0:g}: {points:.3g} points per minimum wavelength "
            f"c_min/(2.5·f0·h) (c_min = {c_min:g}, h = {a.h:g}, 2.5·f0 the Ricker's highest "
            "useful frequency), below 5, so the stencil disperses the wave; --f0 "
            f"{round_down(c_min / (2.5 * 5.0 * a.h)):g} or less gives 5"]


def sponge_factors(a, c_ref):
    """(α, β) of the damped update u⁺ = α·(2u − β·u⁻ + (c·dt/h)²·Lap(u)):
    α = 1/(1 + σ·dt/2), β = 1 − σ·dt/2, the centred discretisation of
    u_tt + σ·u_t = c²·Δu. σ = Σ_axes σ_max·(d/W)², d the distance (points)
    into a layer W points wide at each edge (none at the top with
    --free-surface), σ_max = 3·c_ref·ln(1/R)/(2·W·h), R = 1e-3."""
    shape = shape_of(a)
    w = a.sponge
    sigma_max = 3.0 * c_ref * math.log(1.0 / SPONGE_REFLECTION) / (2.0 * w * a.h)
    sigma = np.zeros(shape)
    for axis, n in enumerate(shape):
        i = np.arange(n, dtype=np.float64)
        low = np.maximum(w - i, 0.0)
        if axis == 0 and a.free_surface:
            low = np.zeros(n)
        d = np.maximum(low, np.maximum(i - (n - 1 - w), 0.0))
        view = [1] * len(shape)
        view[axis] = n
        sigma = sigma + (sigma_max * (d / w) ** 2).reshape(view)
    return 1.0 / (1.0 + 0.5 * a.dt * sigma), 1.0 - 0.5 * a.dt * sigma


class Fwi:
    """The FWI problem of one ensemble group: a graph on the group's
    communicator whose loss is the ensemble's exact total over every shot.

    Attributes: ``ensemble``, ``grid``, ``graph``, ``c`` (the control's
    placeholder, this rank's patch), ``observed`` (placeholder
    [nt, k, *plane patch]), ``records`` (the predicted records), ``loss``
    and ``gradient`` (Values).
    """

    def __init__(self, a, comm=None, c_ref=None):
        self.a = a
        self.ensemble = ag.ensemble.Ensemble(len(a.shots), a.shot_groups, comm=comm)
        patches = self.ensemble.patches
        self.grid = agg.Grid(shape_of(a), procs_of(a, patches),
                             comm=self.ensemble.group_comm)
        self.graph = ag.Graph(comm=self.ensemble.group_comm)
        lo, n = self.grid.offset()[0], self.grid.local_shape()[0]
        # A grid row is read where it lies; a plane between two rows is
        # sampled (the same values on every rank) and its misfit counted on
        # the group's rank 0.
        self.sampled = not float(a.receiver_depth).is_integer()
        self.owns_receivers = (self.ensemble.position == 0 if self.sampled
                               else lo <= a.receiver_depth < lo + n)
        self.c = self.graph.placeholder("c", self.grid.local_shape())
        rows = self.ensemble.tile(self.c)
        self.records = self._simulate(rows, c_ref)
        self.observed = self.graph.placeholder("observed", self.records.shape)
        losses = self.ensemble.member_totals(self._terms())
        self.loss = self.ensemble.objective(self.c, rows, losses)
        self.gradient = ag.gradient(self.loss, self.c)
        self._session = ag.Session(self.graph)

    def patch(self, values):
        """This rank's patch of a global array [..., *shape]."""
        cut = tuple(slice(o, o + n) for o, n in zip(self.grid.offset(), self.grid.local_shape()))
        return np.ascontiguousarray(values[(Ellipsis,) + cut])

    def plane_part(self):
        """(offset, extent) of this rank's part of the receiver plane: its
        patch's, or the whole plane when sampled."""
        if self.sampled:
            return (0,) * (self.a.ndim - 1), shape_of(self.a)[1:]
        return tuple(self.grid.offset()[1:]), tuple(self.grid.local_shape()[1:])

    def observed_patch(self, data):
        """This rank's part of observed data [shots, nt, *plane] as fed:
        [nt, k, *plane part] (this group's shots)."""
        mine = data[list(self.ensemble.members)]
        cut = tuple(slice(o, o + n) for o, n in zip(*self.plane_part()))
        return np.ascontiguousarray(np.swapaxes(mine[(Ellipsis,) + cut], 0, 1))

    def _sources(self):
        a = self.a
        extra = [float(a.ny // 2)] if a.ndim == 3 else []
        return [[float(a.source_depth), float(self.a.shots[m])] + extra
                for m in self.ensemble.members]

    def _simulate(self, rows, c_ref):
        a, grid, k = self.a, self.grid, len(self.ensemble.members)
        wavelet = np.zeros((a.nt, k, k))
        for b in range(k):
            wavelet[:, b, b] = a.amplitude * ricker(a)
        invariants = [rows]
        if a.sponge > 0:
            alpha, beta = sponge_factors(a, c_ref)
            invariants += [self.graph.constant(self.patch(alpha)),
                           self.graph.constant(self.patch(beta))]
        zero = self.graph.constant(np.zeros((k,) + tuple(grid.local_shape())))
        row = int(a.receiver_depth) - grid.offset()[0] if self.owns_receivers else 0
        points, ratio = self._sources(), a.dt / a.h
        plane = list(shape_of(a)[1:])
        receivers = [[a.receiver_depth] + [float(i) for i in index]
                     for index in np.ndindex(*plane)]

        def record(u):
            if self.sampled:
                return ag.reshape(grid.sample(u, receivers), shape=[k] + plane)
            return u[:, row]

        def step(s):
            U, Um, C = (grid.field(v) for v in (s.carries[0], s.carries[1], s.invariants[0]))
            lap = U.shift((-1,)) + U.shift((1,))
            for axis in range(1, a.ndim):
                e = [0] * a.ndim
                e[axis] = 1
                lap = lap + (U.shift(tuple(-x for x in e)) + U.shift(tuple(e)))
            lap = lap - float(2 * a.ndim) * U
            if a.sponge > 0:
                A, B = grid.field(s.invariants[1]), grid.field(s.invariants[2])
                update = A * (2.0 * U - B * Um + (C * ratio) * (C * ratio) * lap)
            else:
                update = 2.0 * U - Um + (C * ratio) * (C * ratio) * lap
            u = grid.inject(grid.stencil(update), points, s.xs[0])
            return [u, s.carries[0]], [record(u)]

        loop = ag.loop(a.nt, [zero, zero], invariants, step,
                       checkpoints=checkpoint_schedule(a.checkpoints),
                       xs=[self.graph.constant(wavelet)], name="wave")
        self.loop_node = loop.node
        return loop.outputs[0]

    def _terms(self):
        """½(d − d_obs)² on the ranks holding the receiver plane (0 elsewhere),
        as [k, ...]: one row per shot."""
        nt, k = self.records.shape[0], self.records.shape[1]
        r = self.records - self.observed
        terms = (r * r) * (0.5 if self.owns_receivers else 0.0)
        flat = ag.transpose(ag.reshape(terms, shape=[nt, -1]))
        return ag.reshape(flat, shape=[k, -1])

    def evaluate(self, c_local, observed_local):
        """(J, this rank's dJ/dc): J on every rank of the ensemble."""
        f, g = self._session.run([self.loss, self.gradient],
                                 {self.c: c_local, self.observed: observed_local})
        total = self.ensemble.comm.to_mpi4py().bcast(float(f), root=0)
        return total, g

    def predict(self, c_local):
        """This rank's predicted records [nt, k, *plane patch] at c."""
        return self._session.run([self.records], {self.c: c_local})[0]

    def gather_plane(self, local, member=0):
        """Member `member`'s gather [nt, *plane] on world rank 0 (None
        elsewhere) from the ranks of its group that hold the plane."""
        ens = self.ensemble
        mine = None
        if self.owns_receivers and member in ens.members:
            mine = (self.plane_part()[0], np.asarray(local)[:, member - ens.members[0]])
        parts = ens.comm.to_mpi4py().gather(mine, root=0)
        if ens.comm.rank != 0:
            return None
        out = np.zeros((self.a.nt,) + shape_of(self.a)[1:])
        for part in parts:
            if part is not None:
                offset, values = part
                out[(slice(None),) + tuple(slice(o, o + n) for o, n in
                                           zip(offset, values.shape[1:]))] = values
        return out


def fail(message, status=2):
    """One message from rank 0, then `status` on every rank."""
    if world.rank == 0:
        print(f"wave_fwi.py: {message}", file=sys.stderr, flush=True)
    world.Barrier()
    sys.exit(status)


def models(a):
    """(true, start) global models from the files or built in. With
    --observed and no --true-model there is no true model: None (the
    built-in one did not make those data)."""
    true, start = builtin_models(a)
    if a.true_model:
        true = read_model(a.true_model, a)
    elif a.observed:
        true = None
    if a.start_model:
        start = read_model(a.start_model, a)
    return true, start


def observed_data(a, problem, true):
    """Observed data [nt, k, *plane patch] for this rank: the file's, or
    predicted from the true model."""
    if a.observed:
        data = np.fromfile(a.observed, dtype=np.float64)
        return problem.observed_patch(data.reshape((len(a.shots), a.nt) + shape_of(a)[1:]))
    return problem.predict(problem.patch(true))


def gather_model(problem, local):
    """The whole model on world rank 0 from group 0's patches (None elsewhere)."""
    whole = problem.grid.gather(local) if problem.ensemble.group == 0 else None
    return whole if world.rank == 0 else None


def invert(a, problem, start, true, observed):
    bounds = None
    if math.isfinite(a.vmin) or math.isfinite(a.vmax):
        bounds = {"lower": a.vmin, "upper": a.vmax}
    return ag.minimize(problem.loss, [problem.c], [problem.patch(start)], bounds=bounds,
                       layout="sharded", feeds={problem.observed: observed},
                       max_iterations=a.max_iter, tolerance_gradient=a.tol,
                       trace=world.rank == 0)


def silence_message(a, loss, silent, start):
    """The line for a gradient that is exactly 0 at the start model: the
    predicted records are all 0 (`silent`: the wave never reaches the
    receivers), the start model fits the data exactly, or the records do
    not depend on c."""
    if silent and a.amplitude == 0.0:
        return ("the predicted records and the gradient are exactly 0 at the start model: "
                "--amplitude is 0, so the sources emit nothing")
    if silent:
        c = float(np.max(start))
        delay = 1.2 / a.f0
        travel = abs(a.source_depth - a.receiver_depth) * a.h / c
        return (f"the predicted records are exactly 0 at the start model (loss {loss:g}, "
                f"gradient 0): the wave does not reach the receivers within --nt {a.nt} "
                "steps; its peak arrives after about "
                f"{math.ceil((delay + travel) / a.dt)} steps "
                f"(1.2/f0 = {delay:.3g} s, plus {travel:.3g} s from --source-depth "
                f"{a.source_depth:g} to --receiver-depth {a.receiver_depth:g} at c = {c:g}): "
                "raise --nt, or move the sources and receivers closer")
    if loss == 0.0:
        return ("the loss and its gradient are exactly 0 at the start model: it fits the "
                "data exactly, so there is nothing to invert (check --start-model and "
                "--true-model or --observed)")
    return (f"the gradient is exactly 0 at the start model (loss {loss:g}): the predicted "
            f"records do not depend on c within --nt {a.nt} steps (only the sources' own "
            "signal reaches the receivers): raise --nt, or move the sources away from "
            "--receiver-depth")


def silence_problem(a, problem, summary, start, observed):
    """The line of silence_message when dJ/dc is exactly 0 at the start
    model, else None (also when only the projected gradient is 0: a start
    on a bound). The same answer on every rank; evaluated only when the
    first gradient norm is 0."""
    if summary.gradient_norm_history[0] != 0.0:
        return None
    c = problem.patch(start)
    _, g = problem.evaluate(c, observed)
    records = problem.predict(c)
    biggest = world.allreduce(float(np.max(np.abs(g), initial=0.0)), op=MPI.MAX)
    heard = world.allreduce(float(np.max(np.abs(records), initial=0.0))
                            if problem.owns_receivers else 0.0, op=MPI.MAX)
    if biggest != 0.0:
        return None
    return silence_message(a, summary.f_history[0], heard == 0.0, start)


def write_vti(path, h, fields):
    """A ParaView ImageData file of 2-D or 3-D point fields (x fastest)."""
    shape = next(iter(fields.values())).shape
    dims = list(reversed(shape)) + [1] * (3 - len(shape))
    extent = " ".join(f"0 {n - 1}" for n in dims)
    with open(path, "w") as f:
        f.write('<?xml version="1.0"?>\n<VTKFile type="ImageData" version="0.1">\n'
                f'<ImageData WholeExtent="{extent}" Origin="0 0 0" '
                f'Spacing="{h} {h} {h}">\n<Piece Extent="{extent}">\n<PointData>\n')
        for name, values in fields.items():
            f.write(f'<DataArray type="Float64" Name="{name}" format="ascii">\n')
            f.write("\n".join(repr(float(v)) for v in np.ravel(values)) + "\n</DataArray>\n")
        f.write("</PointData>\n</Piece>\n</ImageData>\n</VTKFile>\n")


def draw(a, stem, true, start, found, observed, predicted, summary):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    files = [stem + "_velocity.png", stem + "_gather.png", stem + "_convergence.png"]
    cut = (slice(None), slice(None), a.ny // 2) if a.ndim == 3 else (Ellipsis,)
    shown = [(m, t) for m, t in ((true, "true"), (start, "start"), (found, "recovered"))
             if m is not None]
    # One colour scale over every model shown, so that a result beyond the
    # true model's range (an overshoot) is not clipped away.
    lo = min(float(np.min(m[cut])) for m, _ in shown)
    hi = max(float(np.max(m[cut])) for m, _ in shown)
    where = f", y index {a.ny // 2} (y = {a.ny // 2 * a.h:g} m)" if a.ndim == 3 else ""
    extent = (0, (a.nx - 1) * a.h, (a.nz - 1) * a.h, 0)
    fig, axes = plt.subplots(1, len(shown), figsize=(5 * len(shown), 4.5),
                             constrained_layout=True)
    for ax, (model, title) in zip(axes, shown):
        image = ax.imshow(model[cut], extent=extent, vmin=lo, vmax=hi, cmap="viridis")
        ax.plot([x * a.h for x in a.shots], [a.source_depth * a.h] * len(a.shots), "r*",
                label="sources")
        ax.axhline(a.receiver_depth * a.h, color="w", lw=1, ls="--", label="receivers")
        ax.set_xlabel("x (m)")
        ax.set_ylabel("z (m)")
        ax.set_title(f"{title} velocity{where}")
        fig.colorbar(image, ax=ax, label="c (m/s)", shrink=0.8)
    axes[0].legend(loc="center right", fontsize=7)
    fig.savefig(files[0], dpi=100)
    plt.close(fig)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), constrained_layout=True)
    span = float(np.max(np.abs(observed))) or 1.0
    gather_cut = (Ellipsis, a.ny // 2) if a.ndim == 3 else (Ellipsis,)
    for ax, data, title in zip(axes, (observed, predicted), ("observed", "predicted")):
        image = ax.imshow(data[gather_cut], aspect="auto", cmap="seismic", vmin=-span,
                          vmax=span, extent=(0, (a.nx - 1) * a.h, a.nt * a.dt, 0))
        ax.set_xlabel("receiver x (m)")
        ax.set_ylabel("t (s)")
        ax.set_title(f"{title}, shot 0 (x = {a.shots[0] * a.h:g} m){where}")
        fig.colorbar(image, ax=ax, label="u")
    fig.savefig(files[1], dpi=100)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(summary.f_history, label="loss J")
    bounded = math.isfinite(a.vmin) or math.isfinite(a.vmax)
    ax.plot(summary.gradient_norm_history,
            label=("projected " if bounded else "") + "gradient norm (inf)")
    if min(min(summary.f_history), min(summary.gradient_norm_history)) > 0:
        ax.set_yscale("log")  # a loss or norm of exactly 0 stays on a linear axis
    ax.set_xlabel("iteration")
    ax.set_title("L-BFGS convergence")
    ax.legend()
    fig.savefig(files[2], dpi=100)
    plt.close(fig)
    return files


def report(a, problem, summary, true, start, observed, seconds):
    """JSON, figures and .vti on world rank 0 (collective gathers first)."""
    found = gather_model(problem, summary.x[0])
    obs0 = problem.gather_plane(observed)
    pred0 = problem.gather_plane(problem.predict(summary.x[0]))
    peak = world.allreduce(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                           op=MPI.MAX)
    if world.rank != 0:
        return
    before = after = None  # no true model (--observed alone): no model error
    if true is not None:
        before = float(np.linalg.norm(start - true) / np.linalg.norm(true))
        after = float(np.linalg.norm(found - true) / np.linalg.norm(true))
    stem = a.output[:-5] if a.output.endswith(".json") else a.output
    result = {
        "loss_history": summary.f_history,
        "gradient_norm_history": summary.gradient_norm_history,
        "iterations": summary.iterations, "evaluations": summary.evaluations,
        "termination": summary.termination, "message": summary.message,
        "relative_model_error": {"start": before, "final": after},
        "ranks": world.size, "shot_groups": a.shot_groups,
        "procs": list(problem.grid.procs), "shape": list(shape_of(a)), "nt": a.nt,
        "shots": a.shots, "sponge": a.sponge, "free_surface": a.free_surface,
        "checkpoints": a.checkpoints, "wall_time_s": seconds, "peak_rss_mb": peak,
        "files": [stem + s for s in ("_velocity.png", "_gather.png", "_convergence.png",
                                     ".vti")],
    }
    with open(a.output + ".partial", "w") as f:
        json.dump(result, f, indent=2, allow_nan=False)
        f.write("\n")
    os.replace(a.output + ".partial", a.output)
    draw(a, stem, true, start, found, obs0, pred0, summary)
    fields = {"c_true": true, "c_start": start, "c": found}
    write_vti(stem + ".vti", a.h, {k: v for k, v in fields.items() if v is not None})
    error = (f"relative model error {before:.6e} -> {after:.6e}" if true is not None
             else f"loss {summary.f_history[0]:.6e} -> {summary.f_history[-1]:.6e}")
    print(f"{error} after {summary.iterations} iterations; wrote {a.output} and "
          f"{stem}_*.png, {stem}.vti", flush=True)


def dump_gradient(a, problem, start, observed):
    began = time.perf_counter()
    f, g = problem.evaluate(problem.patch(start), observed)
    seconds = world.allreduce(time.perf_counter() - began, op=MPI.MAX)
    peak = world.allreduce(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                           op=MPI.MAX)
    whole = gather_model(problem, g)
    if world.rank == 0:
        whole.astype(np.float64).tofile(a.dump_gradient)
        print(f"J = {f:.17g}, |dJ/dc| = {np.linalg.norm(whole):.17g}; gradient "
              f"{seconds:.3g} s, peak RSS {peak:.1f} MB (the largest rank); wrote "
              f"{a.dump_gradient}", flush=True)


def main(argv=None):
    a = parse(argv)
    message = option_problem(a, world.size)
    if message is None and world.rank == 0:
        message = output_problem(a)
    message = world.bcast(message, root=0)
    if message:
        fail(message)
    true, start = models(a)
    if world.rank == 0:
        for warning in sponge_warnings(a) + frequency_warnings(a, true, start):
            print(f"wave_fwi.py: warning: {warning}", file=sys.stderr, flush=True)
    c_ref = max(float(np.max(m)) for m in (true, start) if m is not None)
    problem = Fwi(a, c_ref=c_ref)
    observed = observed_data(a, problem, true)
    if a.dump_gradient:
        dump_gradient(a, problem, start, observed)
        if a.max_iter == 0:
            return 0
    began = time.perf_counter()
    summary = invert(a, problem, start, true, observed)
    if not all(math.isfinite(f) for f in summary.f_history):
        # Every rank holds the same history. The JSON cannot hold a NaN.
        fail(f"the loss or its gradient is not finite ({summary.message}); the wavefield "
             "overflowed: try a smaller --amplitude", status=1)
    report(a, problem, summary, true, start, observed, time.perf_counter() - began)
    message = silence_problem(a, problem, summary, start, observed)
    if message:  # after the JSON and the figures: they keep what the run found
        fail(message)
    return 0


if __name__ == "__main__":
    sys.exit(main())
