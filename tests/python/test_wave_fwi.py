"""examples/python/wave_fwi.py and adgraph.ensemble (issue #55): the FWI
gradient against a discrete adjoint of WAVE_SPEC written here in NumPy
(2-D and 3-D) and against finite differences; loss and gradient bitwise
the same on every patch layout, shot grouping and checkpoint schedule (each
compared with the same problem run alone on every rank, COMM_SELF, so
every rank count checks against the one-rank result); bad options refused.

Sizes are small so that the file runs in seconds at 1-4 ranks.
"""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from mpi4py import MPI

import adgraph as ag

world = MPI.COMM_WORLD
EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "wave_fwi.py"
_spec = importlib.util.spec_from_file_location("wave_fwi", EXAMPLE)
fwi = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fwi)

ADJOINT_TOLERANCE = 1e-10  # relative, the acceptance bound
FD_TOLERANCE = 1e-6  # relative, central differences with a step of 1e-3 m/s
SMALL_2D = ["--nz", "24", "--nx", "20", "--nt", "40", "--shots", "5", "10", "14",
            "--source-depth", "3", "--receiver-depth", "2"]
SPONGE_2D = SMALL_2D + ["--sponge", "4", "--free-surface"]
SAMPLED_2D = SMALL_2D + ["--receiver-depth", "2.25"]
SMALL_3D = ["--nz", "10", "--nx", "8", "--ny", "6", "--nt", "24", "--shots", "2", "5",
            "--source-depth", "6", "--receiver-depth", "1", "--dt", "2e-3"]


def everywhere(ok, what):
    """Rank 0's verdict on every rank: a failure fails the test everywhere."""
    ok, what = world.bcast((bool(ok), what), root=0)
    assert ok, what


# --- the reference: WAVE_SPEC and its discrete adjoint, by hand ----------

def laplacian(u, ndim):
    """Σ_axes (u[i−1] + u[i+1]) − 2·ndim·u, zero outside the grid, on the
    last ndim axes (a leading shot axis rides along)."""
    p = np.pad(u, [(0, 0)] + [(1, 1)] * ndim)
    inner = [slice(None)] + [slice(1, -1)] * ndim
    out = None
    for axis in range(1, ndim + 1):
        lo, hi = list(inner), list(inner)
        lo[axis], hi[axis] = slice(0, -2), slice(2, None)
        pair = p[tuple(lo)] + p[tuple(hi)]
        out = pair if out is None else out + pair
    return out - 2.0 * ndim * u


def sources(a):
    """Each shot's source as an index tuple (grid points)."""
    extra = (a.ny // 2,) if a.ndim == 3 else ()
    return [(int(a.source_depth), int(x)) + extra for x in a.shots]


def damping(a):
    """(α, β) of the sponge (1 and 1 without one): the example's layer
    coefficients are data here; the update and its adjoint are derived
    below."""
    if a.sponge == 0:
        return 1.0, 1.0
    true, start = fwi.builtin_models(a)
    return fwi.sponge_factors(a, max(float(np.max(true)), float(np.max(start))))


def rows_of(a):
    """The receiver plane z = zr as (row, weight) pairs: the row itself, or
    the two rows around it with linear weights."""
    z0 = int(np.floor(a.receiver_depth))
    w = a.receiver_depth - z0
    return [(z0, 1.0)] if w == 0 else [(z0, 1.0 - w), (z0 + 1, w)]


def plane(a, u):
    """The records of the plane z = zr from u [shots, *shape]."""
    return sum(weight * u[:, row] for row, weight in rows_of(a))


def forward(a, c):
    """Records [shots, nt, *plane] and the states u⁰ … u^{nt} of WAVE_SPEC,
    damped: u^{n+1} = α·(2uⁿ − β·u^{n−1} + s·L uⁿ) + fⁿ, s = (c·dt/h)²."""
    shape = fwi.shape_of(a)
    s = (c * (a.dt / a.h)) ** 2
    alpha, beta = damping(a)
    r = a.amplitude * fwi.ricker(a)
    u_prev = np.zeros((len(a.shots),) + shape)
    u = np.zeros_like(u_prev)
    states, records = [u], []
    for n in range(a.nt):
        u_next = alpha * (2.0 * u - beta * u_prev + s * laplacian(u, a.ndim))
        for k, point in enumerate(sources(a)):
            u_next[(k,) + point] += r[n]
        records.append(plane(a, u_next))
        u_prev, u = u, u_next
        states.append(u)
    return np.stack(records, axis=1), states


def adjoint_gradient(a, c, observed):
    """(J, dJ/dc) by the discrete adjoint: with s = (c·dt/h)² and the
    symmetric Laplacian L, u^{n+1} = α(2 + s·L)uⁿ − αβu^{n−1} + fⁿ gives
    λⁿ = eⁿ + 2αλ^{n+1} + L(s·α·λ^{n+1}) − αβλ^{n+2} (λ^{nt+1} = λ^{nt+2}
    = 0), eⁿ the residual of the records made from uⁿ, and
    dJ/dc = Σ_n α·λ^{n+1}·2c(dt/h)²·L uⁿ summed over shots."""
    records, states = forward(a, c)
    residual = records - observed
    J = 0.5 * np.sum(residual ** 2)
    s = (c * (a.dt / a.h)) ** 2
    ds = 2.0 * c * (a.dt / a.h) ** 2
    alpha, beta = damping(a)
    lam_next = np.zeros_like(states[0])  # λ^{n+1}
    lam_next2 = np.zeros_like(states[0])  # λ^{n+2}
    grad = np.zeros(fwi.shape_of(a))
    for n in range(a.nt, 0, -1):
        lam = (2.0 * alpha * lam_next + laplacian(s * alpha * lam_next, a.ndim)
               - alpha * beta * lam_next2)
        for row, weight in rows_of(a):
            lam[:, row] += weight * residual[:, n - 1]
        # u^{n} = α(… + s·L u^{n−1}): λⁿ meets α·L u^{n−1}.
        grad += np.sum(alpha * lam * ds * laplacian(states[n - 1], a.ndim), axis=0)
        lam_next2, lam_next = lam_next, lam
    return J, grad


# --- helpers -------------------------------------------------------------

def build_problem(argv, comm=None):
    a = fwi.parse(argv)
    true, start = fwi.builtin_models(a)
    return a, fwi.Fwi(a, comm=comm, c_ref=float(np.max(true))), true, start


def run(argv, data, c, comm=None):
    """(J, the whole gradient on world rank 0 or None) of the example's problem."""
    a, problem, _, _ = build_problem(argv, comm)
    J, g = problem.evaluate(problem.patch(c), problem.observed_patch(data))
    if comm is not None:
        return J, g
    return J, fwi.gather_model(problem, g)


def data_from(argv, model):
    a = fwi.parse(argv)
    return forward(a, model)[0]


def problem(argv):
    """The options, the start model and the data of the built-in true
    model."""
    a = fwi.parse(argv)
    true, start = fwi.builtin_models(a)
    return a, start, data_from(argv, true)


# --- tests -----------------------------------------------------------------

EVERY_CASE = pytest.mark.parametrize("argv", [SMALL_2D, SMALL_3D, SPONGE_2D, SAMPLED_2D],
                                     ids=["2d", "3d", "sponge", "sampled"])


@EVERY_CASE
def test_gradient_matches_handwritten_adjoint(argv):
    a, start, observed = problem(argv)
    J, g = run(argv, observed, start)
    if world.rank == 0:
        J_ref, g_ref = adjoint_gradient(a, start, observed)
        error = np.max(np.abs(g - g_ref)) / np.max(np.abs(g_ref))
        ok = abs(J - J_ref) <= ADJOINT_TOLERANCE * J_ref and error <= ADJOINT_TOLERANCE
        what = f"J {J!r} vs {J_ref!r}, gradient relative error {error:.3e}"
    everywhere(ok if world.rank == 0 else None, what if world.rank == 0 else None)


def test_gradient_matches_finite_differences():
    a = fwi.parse(SMALL_2D)
    true, start = fwi.builtin_models(a)
    observed = data_from(SMALL_2D, true)
    _, problem, _, _ = build_problem(SMALL_2D)
    feed = problem.observed_patch(observed)
    _, g = run(SMALL_2D, observed, start)
    z, x = np.meshgrid(np.arange(a.nz), np.arange(a.nx), indexing="ij")
    for v in (np.exp(-((z - 12.0) ** 2 + (x - 9.0) ** 2) / 20.0), np.sin(0.3 * z + 0.2 * x)):
        step = 1e-3
        plus, _ = problem.evaluate(problem.patch(start + step * v), feed)
        minus, _ = problem.evaluate(problem.patch(start - step * v), feed)
        if world.rank == 0:
            fd, exact = (plus - minus) / (2 * step), float(np.sum(g * v))
            ok, what = abs(fd - exact) <= FD_TOLERANCE * abs(exact), f"fd {fd!r} vs {exact!r}"
        everywhere(ok if world.rank == 0 else None, what if world.rank == 0 else None)


def layouts(size, ndim, shots):
    """(groups, procs) for every shot grouping of 1-3 groups that divides the
    ranks (at most one group per shot) and every patch layout of a group."""
    out = []
    for groups in (1, 2, 3):
        if size % groups or groups > shots:
            continue
        patches = size // groups
        for pz in range(1, patches + 1):
            if patches % pz:
                continue
            if ndim == 2:
                out.append((groups, (pz, patches // pz)))
            else:
                for px in range(1, patches // pz + 1):
                    if (patches // pz) % px == 0:
                        out.append((groups, (pz, px, patches // pz // px)))
    return out


def layout_argv(argv, groups, procs, checkpoints):
    names = ["--pz", "--px", "--py"]
    extra = [str(t) for pair in zip(names, procs) for t in pair]
    return argv + ["--shot-groups", str(groups), "--checkpoints", checkpoints] + extra


@EVERY_CASE
def test_bitwise_on_every_layout_grouping_and_schedule(argv):
    a, start, observed = problem(argv)
    # The same problem alone on each rank: the one-rank result.
    J_one, g_one = run(argv, observed, start, comm=MPI.COMM_SELF)
    for groups, procs in layouts(world.size, a.ndim, len(a.shots)):
        for checkpoints in ("all", "3", "every:5"):
            J, g = run(layout_argv(argv, groups, procs, checkpoints), observed, start)
            what = f"groups {groups}, procs {procs}, checkpoints {checkpoints}"
            if world.rank == 0:
                ok = J == J_one and np.array_equal(g, g_one)
            everywhere(ok if world.rank == 0 else None, what)


def test_inversion_iterates_are_the_same_on_every_grouping():
    """Three L-BFGS-B iterations: the loss history and the recovered model
    == the one-rank run's, for every grouping the ranks allow (each group
    runs the optimiser in lockstep on its own communicator)."""
    argv = SMALL_2D + ["--vmin", "1950", "--vmax", "2250", "--max-iter", "3"]
    a = fwi.parse(argv)
    true, start = fwi.builtin_models(a)
    observed = data_from(argv, true)

    def invert(argv, comm=None):
        a, problem, _, _ = build_problem(argv, comm)
        summary = fwi.invert(a, problem, start, true, problem.observed_patch(observed))
        if comm is not None:
            return summary.f_history, summary.x[0]
        return summary.f_history, fwi.gather_model(problem, summary.x[0])

    history_one, model_one = invert(argv, MPI.COMM_SELF)
    assert len(history_one) == 4 and history_one[-1] < 0.5 * history_one[0], history_one
    for groups in (1, 2, 3):
        if world.size % groups or groups > len(a.shots):
            continue
        history, model = invert(argv + ["--shot-groups", str(groups)])
        if world.rank == 0:
            ok = history == history_one and np.array_equal(model, model_one)
        everywhere(ok if world.rank == 0 else None, f"groups {groups}: {history}")


def test_ensemble_assignment_and_refusals():
    ranges = ag.ensemble.assignment(7, 3)
    assert [list(r) for r in ranges] == [[0, 1, 2], [3, 4], [5, 6]]
    with pytest.raises(ag.OptionsError, match="groups"):
        ag.ensemble.Ensemble(3, world.size + 1)
    with pytest.raises(ag.OptionsError, match="patches"):
        ag.ensemble.Ensemble(3, 1, patches=world.size + 1)
    with pytest.raises(ag.OptionsError, match="members"):
        ag.ensemble.Ensemble(world.size - 1, world.size)
    # Not integers: named, not truncated (1.5 -> 1) or failing inside int().
    for kwargs, name in ((dict(members=3, groups=1.5), "groups"),
                         (dict(members=2.7, groups=1), "members"),
                         (dict(members=3, groups="1"), "groups"),
                         (dict(members=None, groups=1), "members"),
                         (dict(members=3, groups=float("nan")), "groups"),
                         (dict(members=3, groups=True), "groups"),
                         (dict(members=3, groups=1, patches=world.size + 0.5), "patches")):
        with pytest.raises(ag.OptionsError, match=f"^{name}: Ensemble: expected an integer"):
            ag.ensemble.Ensemble(**kwargs)
    assert ag.ensemble.Ensemble(np.int64(3), np.int32(1)).groups == 1
    e = ag.ensemble.Ensemble(5, world.size)
    assert e.group == world.rank and e.position == 0 and e.group_comm.size == 1
    assert list(e.members) == list(ag.ensemble.assignment(5, world.size)[world.rank])


def test_bad_options_are_refused_naming_the_option():
    size = world.size
    cases = [
        (SMALL_2D + ["--shots", "5", "25"], "--shots"),
        (SMALL_2D + ["--source-depth", "24"], "--source-depth"),
        (SMALL_2D + ["--dt", "4e-3"], "--dt"),  # 2200·4e-3/10·√2 = 1.24 > 1
        (SMALL_2D + ["--shot-groups", str(size + 1)], "--shot-groups"),
        (SMALL_2D + ["--pz", str(size + 1), "--px", "1"], "--pz"),
        (SMALL_2D + ["--checkpoints", "some"], "--checkpoints"),
        (SMALL_2D + ["--checkpoints", "\u00b2"], "--checkpoints"),  # isdigit, not int
        (SMALL_2D + ["--checkpoints", "every:\u00b2"], "--checkpoints"),
        (SMALL_2D + ["--tol", "-1"], "--tol"),
        (SMALL_2D + ["--tol", "nan"], "--tol"),
        (SMALL_2D + ["--amplitude", "nan"], "--amplitude"),
        (SMALL_2D + ["--ny", "-3"], "--ny"),
        (SMALL_2D + ["--py", "1"], "--py"),
    ]
    for argv, option in cases:
        message = fwi.option_problem(fwi.parse(argv), size)
        assert message is not None and message.startswith(option), (argv, message)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.bin")
        np.zeros(24 * 20 - 1).tofile(path)
        message = fwi.option_problem(fwi.parse(SMALL_2D + ["--start-model", path]), size)
        assert message.startswith("--start-model") and "3832 bytes" in message, message
        np.zeros(3 * 40 * 20 + 1).tofile(path)
        message = fwi.option_problem(fwi.parse(SMALL_2D + ["--observed", path]), size)
        assert message.startswith("--observed") and "expected 19200" in message, message
    assert fwi.option_problem(fwi.parse(SMALL_2D), size) is None


def test_the_program_exits_with_the_message_before_any_work():
    """The script itself, on one process of its own: status 2 and one line."""
    if world.rank == 0:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OMPI_", "PMIX_", "PRTE_"))}
        env["OMPI_ALLOW_RUN_AS_ROOT"] = env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
        done = subprocess.run([sys.executable, str(EXAMPLE)] + SMALL_2D + ["--dt", "4e-3"],
                              capture_output=True, text=True, env=env, timeout=60)
        ok = done.returncode == 2 and done.stderr.startswith("wave_fwi.py: --dt: ")
        what = f"status {done.returncode}, stderr {done.stderr!r}"
    everywhere(ok if world.rank == 0 else None, what if world.rank == 0 else None)


def test_bad_values_in_files_and_a_start_outside_the_bounds_are_refused():
    """NaN, ±inf or c <= 0 in a model, NaN in the data and a start model
    outside [vmin, vmax] name the file's option (not --dt's CFL check, and
    no silent projection by L-BFGS-B)."""
    size = world.size
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.bin")
        for value, option, words in ((np.nan, "--start-model", "not finite"),
                                     (np.inf, "--true-model", "not finite"),
                                     (-2000.0, "--start-model", "not positive"),
                                     (0.0, "--true-model", "not positive")):
            model = np.full((24, 20), 2000.0)
            model[3, 4] = value
            model.tofile(path)
            message = fwi.option_problem(fwi.parse(SMALL_2D + [option, path]), size)
            assert message is not None and message.startswith(option) and words in message \
                and "index 64" in message, message
        data = np.zeros((3, 40, 20))
        data[1, 2, 3] = np.nan
        data.tofile(path)
        message = fwi.option_problem(fwi.parse(SMALL_2D + ["--observed", path]), size)
        assert message is not None and message.startswith("--observed: ") \
            and "not finite" in message, message
        np.full((24, 20), 2500.0).tofile(path)
        message = fwi.option_problem(fwi.parse(
            SMALL_2D + ["--start-model", path, "--vmin", "1900", "--vmax", "2300"]), size)
        assert message is not None and message.startswith("--start-model") \
            and "outside the bounds" in message, message
    message = fwi.option_problem(fwi.parse(SMALL_2D + ["--vmin", "2100"]), size)
    assert message is not None and message.startswith("--vmin/--vmax"), message
    assert fwi.option_problem(fwi.parse(SMALL_2D + ["--vmin", "1900", "--vmax", "2300"]),
                              size) is None


def test_outputs_that_cannot_be_written_are_refused_before_any_work():
    """--output and --dump-gradient: a folder, a missing folder, a file as
    the folder (each failed on rank 0 after the work, with a traceback)."""
    with tempfile.TemporaryDirectory() as folder:
        plain = os.path.join(folder, "plain")
        open(plain, "w").close()
        cases = [
            (["--output", folder], "--output", "is a folder"),
            (["--output", os.path.join(folder, "no", "x.json")], "--output", "does not exist"),
            (["--output", os.path.join(plain, "x.json")], "--output", "is not a folder"),
            (["--dump-gradient", folder], "--dump-gradient", "is a folder"),
            (["--dump-gradient", os.path.join(folder, "no", "g.bin")], "--dump-gradient",
             "does not exist"),
        ]
        for extra, option, words in cases:
            a = fwi.parse(SMALL_2D + ["--output", os.path.join(folder, "r.json")] + extra)
            message = fwi.output_problem(a)
            assert message is not None and message.startswith(option + ": ") \
                and words in message, (extra, message)
        a = fwi.parse(SMALL_2D + ["--output", os.path.join(folder, "r.json"),
                                  "--dump-gradient", os.path.join(folder, "g.bin")])
        assert fwi.output_problem(a) is None
        assert sorted(os.listdir(folder)) == ["plain"]  # the probes leave nothing


def test_usage_and_argument_errors_print_on_rank_0_only(capsys):
    """argparse's messages came once per rank (N usages for one typo)."""
    parser = fwi.Parser(prog="wave_fwi.py")
    parser.print_usage()
    printed = capsys.readouterr().out
    assert (printed.startswith("usage: wave_fwi.py") if world.rank == 0 else printed == ""), \
        printed


def test_sources_and_receivers_inside_the_sponge_are_warned_about():
    """The default source depth nz − 4 sat inside any layer of 4 or more
    points without a word (WAVE_FWI.md: keep the source outside it)."""
    assert fwi.sponge_warnings(fwi.parse(SPONGE_2D)) == []
    assert fwi.sponge_warnings(fwi.parse(SMALL_2D)) == []
    [source] = fwi.sponge_warnings(fwi.parse(SPONGE_2D + ["--source-depth", "21"]))
    assert source.startswith("--source-depth 21: sources inside"), source
    [shot] = fwi.sponge_warnings(fwi.parse(SPONGE_2D + ["--shots", "10", "2.5"]))
    assert shot.startswith("--shots 2.5: "), shot
    [receivers] = fwi.sponge_warnings(fwi.parse(SMALL_2D + ["--sponge", "4",
                                                            "--source-depth", "12"]))
    assert receivers.startswith("--receiver-depth 2: the receivers"), receivers


def test_observed_data_without_a_true_model_use_no_built_in_true_model():
    """With --observed and no --true-model, the built-in true model made
    none of the data: it no longer enters the CFL check (which refused a
    dt that is stable for every model used), the model error or figures."""
    size = world.size
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "observed.bin")
        np.zeros((3, 40, 20)).tofile(path)
        dt = ["--dt", "3.4e-3"]  # 2000·dt/h·√2 = 0.96, 2200·dt/h·√2 = 1.06
        a = fwi.parse(SMALL_2D + dt + ["--observed", path])
        assert fwi.option_problem(a, size) is None
        true, start = fwi.models(a)
        assert true is None and np.all(start == 2000.0)
        message = fwi.option_problem(fwi.parse(SMALL_2D + dt), size)
        assert message is not None and message.startswith("--dt"), message


def test_a_loss_that_is_not_finite_ends_with_one_message():
    """An overflowing wavefield gave NaN, and report()'s json.dump then
    failed with a traceback on rank 0 after the work."""
    if world.rank == 0:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OMPI_", "PMIX_", "PRTE_"))}
        env["OMPI_ALLOW_RUN_AS_ROOT"] = env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
        with tempfile.TemporaryDirectory() as folder:
            done = subprocess.run(
                [sys.executable, str(EXAMPLE)] + SMALL_2D +
                ["--amplitude", "1e200", "--max-iter", "1",
                 "--output", os.path.join(folder, "r.json")],
                capture_output=True, text=True, env=env, timeout=60)
            left = os.listdir(folder)
        ok = (done.returncode == 1 and left == [] and done.stderr.startswith(
            "wave_fwi.py: the loss or its gradient is not finite") and
            "Traceback" not in done.stderr)
        what = f"status {done.returncode}, files {left}, stderr {done.stderr!r}"
    everywhere(ok if world.rank == 0 else None, what if world.rank == 0 else None)


def test_a_frequency_too_high_for_the_grid_is_warned_about():
    """--f0 beyond 5 points per minimum wavelength c_min/(2.5·f0·h) ran
    without a word; c_min is the slower of the models used."""
    a = fwi.parse(SMALL_2D)  # c_min 2000, h 10, f0 12: 6.67 points
    true, start = fwi.builtin_models(a)
    assert fwi.frequency_warnings(a, true, start) == []
    [line] = fwi.frequency_warnings(fwi.parse(SMALL_2D + ["--f0", "20"]), true, start)
    assert line.startswith("--f0 20: 4 points per minimum wavelength"), line
    assert "c_min = 2000, h = 10" in line and line.endswith("--f0 16 or less gives 5"), line
    shape = fwi.shape_of(a)
    # Exactly 5 points (1500/(2.5·12·10)) is enough; 1400 gives 4.67.
    assert fwi.frequency_warnings(a, None, np.full(shape, 1500.0)) == []
    [line] = fwi.frequency_warnings(a, None, np.full(shape, 1400.0))
    assert line.startswith("--f0 12: 4.67 points") and "--f0 11.2 or less" in line, line
    slow = np.full(shape, 2000.0)
    slow[3, 4] = 1000.0  # the true model's slowest point decides: 3.33 points
    [line] = fwi.frequency_warnings(a, slow, start)
    assert line.startswith("--f0 12: 3.33 points") and "--f0 8 or less" in line, line
    assert fwi.round_down(13.3366) == 13.3 and fwi.round_down(0.0123456) == 0.0123


def test_the_frequency_warning_is_one_line_on_rank_0_and_the_run_goes_on(capsys):
    """main() at this test's rank count: the warning once, on rank 0's
    stderr, and the gradient is still dumped."""
    folder = world.bcast(tempfile.mkdtemp() if world.rank == 0 else None, root=0)
    dump = os.path.join(folder, "g.bin")
    argv = SMALL_2D + ["--f0", "20", "--max-iter", "0", "--dump-gradient", dump,
                       "--output", os.path.join(folder, "r.json")]
    status = fwi.main(argv)
    printed = capsys.readouterr()
    world.Barrier()
    if world.rank == 0:
        a = fwi.parse(argv)
        [warning] = fwi.frequency_warnings(a, *fwi.builtin_models(a))
        size = os.path.getsize(dump)
        ok = (status == 0 and printed.err == f"wave_fwi.py: warning: {warning}\n"
              and printed.out.startswith("J = ") and size == 8 * 24 * 20)
        what = f"status {status}, {printed}, dump of {size} bytes"
        for name in os.listdir(folder):
            os.remove(os.path.join(folder, name))
        os.rmdir(folder)
    else:
        ok, what = status == 0 and printed.err == "", f"rank {world.rank}: {printed}"
    assert world.allreduce(int(not ok)) == 0, what


def test_a_gradient_of_exactly_zero_is_explained():
    """Records that never see the wave (3-D, --nt 4: the stencil reaches
    the receivers 5 rows up after 6 steps) gave loss 0, gradient 0 and a
    normal end. Patches along z: ranks without the receiver plane read a row
    that the wave does reach, which must not count."""
    argv = SMALL_3D + ["--nt", "4", "--max-iter", "3", "--pz", str(world.size), "--px", "1",
                       "--py", "1"]
    a, problem, true, start = build_problem(argv)
    observed = problem.predict(problem.patch(true))
    summary = fwi.invert(a, problem, start, true, observed)
    assert summary.f_history == [0.0] and summary.gradient_norm_history == [0.0]
    message = fwi.silence_problem(a, problem, summary, start, observed)
    everywhere(world.allgather(message) == [message] * world.size, message)
    # The peak: (1.2/f0 + 5 rows·h/c)/dt = (0.1 + 0.025)/2e-3 = 62.5 steps.
    expected = ("the predicted records are exactly 0 at the start model (loss 0, gradient 0): "
                "the wave does not reach the receivers within --nt 4 steps; its peak arrives "
                "after about 63 steps (1.2/f0 = 0.1 s, plus 0.025 s")
    assert message.startswith(expected), message
    assert message.endswith("raise --nt, or move the sources and receivers closer"), message
    # The start model is the true one: the data are fitted exactly.
    a, problem, true, start = build_problem(SMALL_2D + ["--max-iter", "2"])
    observed = problem.predict(problem.patch(true))
    summary = fwi.invert(a, problem, true, true, observed)
    message = fwi.silence_problem(a, problem, summary, true, observed)
    assert summary.f_history == [0.0] and message.startswith(
        "the loss and its gradient are exactly 0 at the start model: it fits"), message
    # A usual start: no message.
    summary = fwi.invert(a, problem, start, true, observed)
    assert summary.gradient_norm_history[0] > 0
    assert fwi.silence_problem(a, problem, summary, start, observed) is None
    a = fwi.parse(SMALL_2D + ["--amplitude", "0"])
    assert "--amplitude is 0" in fwi.silence_message(a, 0.0, True, start)
    assert fwi.silence_message(a, 2.5, False, start).startswith(
        "the gradient is exactly 0 at the start model (loss 2.5): the predicted records do "
        "not depend on c within --nt 40 steps")


def test_a_run_whose_records_never_see_the_wave_exits_2_after_writing_its_results():
    """The script on one process of its own: the JSON, figures and .vti,
    then one line on stderr and status 2."""
    if world.rank == 0:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OMPI_", "PMIX_", "PRTE_"))}
        env["OMPI_ALLOW_RUN_AS_ROOT"] = env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
        with tempfile.TemporaryDirectory() as folder:
            output = os.path.join(folder, "r.json")
            done = subprocess.run(
                [sys.executable, str(EXAMPLE)] + SMALL_3D +
                ["--nt", "4", "--max-iter", "3", "--output", output],
                capture_output=True, text=True, env=env, timeout=60)
            with open(output) as f:
                result = json.load(f)
            left = sorted(os.listdir(folder))
        lines = done.stderr.splitlines()
        files = ["r.json", "r.vti", "r_convergence.png", "r_gather.png", "r_velocity.png"]
        ok = (done.returncode == 2 and len(lines) == 1 and lines[0].startswith(
            "wave_fwi.py: the predicted records are exactly 0 at the start model") and
            "--nt 4 steps" in lines[0] and "raise --nt" in lines[0] and
            result["loss_history"] == [0.0] and result["gradient_norm_history"] == [0.0] and
            result["iterations"] == 0 and result["shape"] == [10, 8, 6] and
            result["nt"] == 4 and left == files)
        what = f"status {done.returncode}, files {left}, stderr {done.stderr!r}"
    everywhere(ok if world.rank == 0 else None, what if world.rank == 0 else None)
