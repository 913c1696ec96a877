"""Hostile inputs, round three (issue #56), mechanisms 3-11: sparse
patterns and solves, heat, mpi4py objects, optimisers, loops, names,
load_json, interrupts and printing (mechanisms 1-2 are in test_hostile.py).
Each test feeds one mechanism's bad input and checks the message or the
right value. Run at 1 and 2 ranks. Expected values are by hand or from
NumPy."""

import os
import resource
import threading

# Read when PETSc starts (the first sparse node of this process): options
# under the prefix "h56" only, for the preonly test below.
os.environ["PETSC_OPTIONS"] = "-h56_ksp_type preonly -h56_pc_type jacobi"

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from mpi4py import MPI  # noqa: E402

import adgraph as ag  # noqa: E402

RANK, SIZE = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size


# 3. Sparse patterns and solves.

needs_petsc = pytest.mark.skipif(not ag.petsc_available(), reason="built without PETSc")


def own_matrix(first_row, row_offsets, columns):
    """A matrix of this rank alone (a graph on MPI.COMM_SELF)."""
    g = ag.Graph(MPI.COMM_SELF)
    return g, ag.sparse.SparseMatrix(first_row, row_offsets, columns)


@needs_petsc
@pytest.mark.parametrize("offsets, columns, message", [
    ([0, 5, 3], [0, 1, 1], r"row 0: row_offsets 5 is past the 3 columns given"),
    ([0, 3, 1, 3], [0, 1, 2], r"row 1: row_offsets decrease \(3 then 1\)"),
    ([0, 1, 2], [0, 7], r"row 1: column 7 is outside \[0, 2\)")])
def test_row_offsets_are_checked_before_any_column_is_read(offsets, columns, message):
    g, a = own_matrix(0, offsets, columns)
    n = len(offsets) - 1
    v = g.placeholder("v", (len(columns),))
    x = g.placeholder("x", (n,))
    with pytest.raises(ag.ShapeError, match=message):
        ag.sparse.matvec(a, v, x)


@needs_petsc
@pytest.mark.parametrize("function", [
    lambda: ag.solvers.five_point_matrix(4, 4, 1, 1, 5),
    lambda: ag.solvers.five_point_matrix(4, 4, 2, 1, -1)])
def test_five_point_matrix_checks_the_rank(function):
    with pytest.raises(ag.OptionsError, match=r"five_point_matrix: rank must be in \[0, [12]\) "
                                              r"for a [12] x 1 patch grid, got (5|-1)"):
        function()


@needs_petsc
def test_a_matrix_used_on_a_second_communicator_is_refused():
    # Each rank owns row `RANK` of the identity.
    a = ag.sparse.SparseMatrix(RANK, [0, 1], [RANK])
    first = ag.Graph(MPI.COMM_WORLD)
    v = first.placeholder("v", (1,))
    x = ag.Session(first).run(ag.sparse.solve(a, v, v * 2.0), {v: [4.0]})
    np.testing.assert_allclose(x, [2.0], rtol=1e-9)
    mine = MPI.COMM_WORLD.Split(RANK, 0)
    for other in (ag.Graph(), ag.Graph(mine)):
        w = other.placeholder("w", (1,))
        with pytest.raises(ag.ShapeError, match=r"comm: the matrix's nodes must all use one "
                                                rf"communicator .*: {SIZE} ranks\), but this "
                                                r"node's graph or CommScope has another"):
            ag.sparse.solve(a, w, w)
    mine.Free()


@needs_petsc
def test_symmetric_true_for_a_nonsymmetric_matrix_is_refused():
    # [[4, 1], [0, 3]]: A != A^T, so the adjoint may not solve with A.
    g, a = own_matrix(0, [0, 2, 4], [0, 1, 0, 1])
    v = g.placeholder("v", (4,))
    b = g.placeholder("b", (2,))
    x = ag.sparse.solve(a, v, b, ksp="gmres", pc="jacobi", symmetric=True)
    loss = ag.sum(ag.square(x))
    grad = ag.gradient(loss, b)
    with pytest.raises(ag.RunError, match="symmetric=True, but the matrix is not symmetric"):
        ag.Session(g).run([loss, grad], {v: [4.0, 1.0, 0.0, 3.0], b: [1.0, 2.0]})
    # Symmetric values pass, and the gradient is 2 A^-1 A^-T b (NumPy).
    values = np.array([4.0, 1.0, 1.0, 3.0])
    got_x, got_grad = ag.Session(g).run([x, grad], {v: values, b: [1.0, 2.0]})
    dense = values.reshape(2, 2)
    want_x = np.linalg.solve(dense, [1.0, 2.0])
    np.testing.assert_allclose(got_x, want_x, rtol=1e-9)
    np.testing.assert_allclose(got_grad, 2 * np.linalg.solve(dense.T, want_x), rtol=1e-9)


@needs_petsc
def test_a_solve_stopped_by_its_count_needs_a_true_solution():
    # PETSC_OPTIONS makes prefix h56 preonly + jacobi: x = D^-1 b, not A^-1 b.
    g, a = own_matrix(0, [0, 2, 4], [0, 1, 0, 1])
    v = g.placeholder("v", (4,))
    b = g.placeholder("b", (2,))
    x = ag.sparse.solve(a, v, b, ksp="gmres", pc="jacobi", prefix="h56")
    # By hand: A = [[2, 1], [1, 2]], b = (1, 1): D^-1 b = (0.5, 0.5), A x = (1.5, 1.5),
    # |b - A x| / |b| = 0.5.
    with pytest.raises(ag.RunError, match=r"without a convergence test, and its true residual "
                                          r"\|b - A x\| / \|b\| is 0\.5, above"):
        ag.Session(g).run(x, {v: [2.0, 1.0, 1.0, 2.0], b: [1.0, 1.0]})


# 4. The heat solver's Python surface.

def explicit_limit(nx, ny):
    """h^2 / (4 max kappa_true) on the interior grid (by hand, with NumPy)."""
    h = 1.0 / (nx + 1)
    x = (np.arange(nx) + 1) * h
    y = (np.arange(ny) + 1) * h
    kappa = 1 + 0.5 * np.exp(-((x[:, None] - 0.5) ** 2 + (y[None, :] - 0.5) ** 2) / 0.05)
    return h * h / (4 * kappa.max())


def heat(**options):
    base = dict(nx=8, ny=8, px=SIZE, py=1, nt=4)
    base.update(options)
    return ag.solvers.HeatInverse(**base)


def test_an_explicit_dt_beyond_the_stability_limit_is_refused():
    limit = explicit_limit(8, 8)
    expected = (r"dt: HeatInverse: dt = 0\.01 is beyond the explicit scheme's stability "
                r"limit .* = " + f"{limit:.6g}".replace(".", r"\."))
    with pytest.raises(ag.OptionsError, match=expected):
        heat(dt=0.01)
    problem = heat(dt=0.99 * limit)
    assert np.isfinite(problem.loss(problem.kappa_start()))


@pytest.mark.parametrize("dt", [np.inf, np.nan, -1.0])
def test_dt_must_be_finite_and_is_named(dt):
    with pytest.raises(ag.OptionsError, match=r"dt: must be a finite number >= 0, got "
                                              r"(inf|nan|-1)$"):
        heat(dt=dt, scheme="backward_euler")


@pytest.mark.parametrize("size", [1, 9, 15, 1000])
def test_relative_kappa_error_refuses_kappa_of_the_wrong_size(size):
    problem = heat(nx=4, ny=4)
    shape = problem.kappa_start().shape
    with pytest.raises(ag.ShapeError, match=r"HeatInverse.relative_kappa_error: kappa has shape "
                                            rf"\[{size}\], expected \[{shape[0]}, {shape[1]}\]"):
        problem.relative_kappa_error(np.ones(size))
    assert problem.relative_kappa_error(problem.kappa_true()) == 0.0


# 5. mpi4py interop.

@pytest.mark.parametrize("make, why", [
    (lambda: MPI.COMM_WORLD.Irecv(bytearray(1), source=MPI.PROC_NULL), "Request"),
    (lambda: MPI.COMM_WORLD.Get_group(), "Group"),
    (lambda: MPI.DOUBLE, "Datatype"),
    (lambda: MPI.COMM_NULL, "MPI_COMM_NULL"),
    (lambda: 7, "got 7")])
def test_only_intracommunicators_are_taken(make, why):
    expected = r"comm: Graph\(comm=\)/communicator\(\): expected an mpi4py intracommunicator"
    with pytest.raises(ag.OptionsError, match=expected + ".*" + why):
        ag.Graph(make())


def test_an_intercommunicator_is_refused():
    if SIZE < 2:
        pytest.skip("an intercommunicator needs two groups")
    local = MPI.COMM_WORLD.Split(RANK % 2, RANK)
    inter = local.Create_intercomm(0, MPI.COMM_WORLD, 1 - RANK % 2, tag=7)
    with pytest.raises(ag.OptionsError, match="an intercommunicator"):
        ag.Graph(inter)
    inter.Free()
    local.Free()


@pytest.mark.parametrize("rows, cols, message", [
    (-1, -2, "rows and cols must be >= 1, got -1 x -2"),
    (0, 5, "rows and cols must be >= 1, got 0 x 5"),
    (SIZE, 2, f"a {SIZE} x 2 patch grid needs {2 * SIZE} ranks, the communicator has {SIZE}")])
def test_patch_grid_communicators_check_the_grid(rows, cols, message):
    comm = ag.communicator()
    with pytest.raises(ag.OptionsError, match="Communicator.row_communicator: " + message):
        comm.row_communicator(rows, cols)


# 6. Optimisers.

def quadratic():
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    loss = ag.sum(ag.square(x - np.array([1.0, -2.0])))
    return g, x, loss


def test_replicated_starts_that_differ_between_ranks_are_refused():
    g, x, loss = quadratic()
    if SIZE == 1:
        r = ag.minimize(loss, [x], [np.zeros(2)], layout="replicated")
        np.testing.assert_allclose(r.x[0], [1.0, -2.0], atol=1e-6)
        return
    with pytest.raises(ag.OptionsError, match=r'layout: layout "replicated": the start values '
                                              r"differ between ranks \(entry 0 ranges from 0"):
        ag.minimize(loss, [x], [np.array([float(RANK), 0.0])], layout="replicated")


@pytest.mark.parametrize("bounds, message", [
    ([(0, 1), (0, 1), (0, 1)], r"3 \(lower, upper\) pairs for 1 variables"),
    ([(np.zeros(3), 1)], r"lower bound of variable 0 \(x\) has shape \(3,\); expected \(\) "
                         r"or the variable's shape \(2,\)"),
    ({"lower": [0, 0]}, "2 lower bounds for 1 variables"),
    ([(0, "a")], r"upper bound of variable 0 \(x\) is 'a'")])
def test_bounds_of_the_wrong_number_or_shape_are_named(bounds, message):
    g, x, loss = quadratic()
    with pytest.raises(ag.OptionsError, match="bounds: minimize: .*" + message):
        ag.minimize(loss, [x], [np.zeros(2)], bounds=bounds)


def test_bounds_that_fit_give_the_projected_minimum():
    g, x, loss = quadratic()
    r = ag.minimize(loss, [x], [np.zeros(2)], bounds=[(0.0, 0.5)])
    np.testing.assert_allclose(r.x[0], [0.5, 0.0], atol=1e-8)


def test_no_variables_is_named():
    g, x, loss = quadratic()
    with pytest.raises(ag.OptionsError, match="variables: minimize: no variables to optimise"):
        ag.minimize(loss, [], [])
    with pytest.raises(ag.OptionsError, match="variables: scipy_objective: no variables"):
        ag.scipy_objective(loss, [])


# 7. Loops.

def test_a_store_all_loop_beyond_ulimit_v_is_refused_before_it_runs():
    g = ag.Graph()
    x = g.placeholder("x", (1 << 20,))
    r = ag.loop(300, [x], [], lambda a: [a.carries[0] * 1.0001], checkpoints="all",
                name="big")
    grad = ag.gradient(ag.sum(r.carries[0]), x)
    with open("/proc/self/status") as status:
        vm = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    # 300 snapshots of 8 MiB (2.3 GiB) against 1 GiB of room.
    resource.setrlimit(resource.RLIMIT_AS, (vm * 1024 + (1 << 30), hard))
    try:
        with pytest.raises(ag.RunError, match=r'snapshots of loop node "big".*more than the '
                                              r".* this process can allocate \(MemAvailable, or "
                                              r"what ulimit -v/-d leave"):
            ag.Session(g).run(grad, {x: np.ones(1 << 20)})
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.mark.parametrize("result, shown", [(3, "3"), (None, "None"), ("c", "'c'"),
                                           ([None], r"a list holding None")])
def test_a_body_returning_what_is_not_values_names_the_loop(result, shown):
    g = ag.Graph()
    x = g.placeholder("x", ())
    with pytest.raises(ag.GraphError, match=rf'body: the body of loop "stepper" returned {shown} '
                                            "as its carries; expected a Value"):
        ag.loop(2, [x], [], lambda a: result, name="stepper")


# 8. Names.

@pytest.mark.parametrize("name", ["gradient", "Graph", "check_gradients", "minimize", "sparse"])
def test_custom_op_names_may_not_replace_the_modules_api(name):
    before = getattr(ag, name)
    with pytest.raises(ag.OptionsError, match=f'"{name}" is a name of the adgraph module'):
        ag.custom_op(name, forward=lambda x: x, vjp=lambda xs, y, ybar: [ybar])
    assert getattr(ag, name) is before


def test_custom_op_names_must_be_identifiers():
    with pytest.raises(ag.OptionsError, match="must be a Python identifier"):
        ag.custom_op("my op", forward=lambda x: x, vjp=lambda xs, y, ybar: [ybar])


def test_node_names_may_not_hold_a_colon():
    g = ag.Graph()
    x = g.placeholder("pe", (2,))
    with pytest.raises(ag.GraphError, match=r'square: node name "pe:1" holds \':\''):
        ag.square(x, name="pe:1")
    with pytest.raises(ag.GraphError, match="Graph.placeholder: node name"):
        g.placeholder("q:0", ())
    with pytest.raises(ag.GraphError, match="Graph.constant: node name"):
        g.constant(1.0, name="c:2")
    with pytest.raises(ag.GraphError, match='loop: node name "l:1"'):
        ag.loop(2, [x], [], lambda a: [a.carries[0]], name="l:1")


# 9. load_json input.

DOCUMENT = '{"adgraph": 1, "nodes": [{"name": "a", "op": "constant", "attrs": {"value": 2.5}}], ' \
           '"fetch": ["a"]}'


@pytest.mark.parametrize("document", [DOCUMENT.encode(), "\ufeff" + DOCUMENT,
                                      b"\xef\xbb\xbf" + DOCUMENT.encode()])
def test_load_json_takes_bytes_and_a_byte_order_mark(document):
    loaded = ag.load_json(document)
    assert ag.Session(loaded.graph).run(loaded.fetch_values[0]) == 2.5


def test_load_json_names_a_file_that_is_not_utf8(tmp_path):
    path = tmp_path / f"latin1_{RANK}.json"
    path.write_bytes('{"adgraph": 1, "nodes": [], "fetch": [], "x": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(ag.JsonError, match=r"latin1_\d\.json: load_json: the document is not "
                                           r"UTF-8 text \(byte 0xe9 at offset 50"):
        ag.load_json(path)


def test_load_json_stops_at_the_document_bound():
    with pytest.raises(ag.JsonError, match=r"/dev/zero: the document is larger than 64 MiB"):
        ag.load_json("/dev/zero")
    with pytest.raises(ag.JsonError, match="larger than 64 MiB"):
        ag.load_json(b" " * (64 * 2 ** 20 + 1))


def test_load_json_refuses_what_is_not_a_document():
    with pytest.raises(ag.JsonError, match="load_json: document: expected a file name"):
        ag.load_json(42)


# 10. Interrupts (the job-ending path at several ranks:
# tests/python/interrupt_on_one_rank.py).

def time_to_interrupt(run):
    """Sends SIGINT to this process 0.2 s into ``run()`` and returns how
    long ``run()`` took to raise KeyboardInterrupt."""
    import signal
    import time
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run()
    finally:
        timer.join()
    return time.monotonic() - start


one_rank_only = pytest.mark.skipif(
    SIZE > 1, reason="on several ranks an interrupt ends the job "
                     "(tests/python/interrupt_on_one_rank.py)")


@one_rank_only
def test_ctrl_c_stops_a_loop_between_steps():
    # 1e5 steps of 65536 sines: a minute of work, stopped in its first
    # second (between two steps), not at its end; the session runs again.
    g = ag.Graph()
    x = g.placeholder("x", (1 << 16,))
    r = ag.loop(100000, [x], [], lambda a: [ag.sin(a.carries[0])])
    session = ag.Session(g)
    took = time_to_interrupt(lambda: session.run(ag.sum(r.carries[0]), {x: np.ones(1 << 16)}))
    assert took < 2.0
    assert session.run(ag.sum(x), {x: np.full(1 << 16, 0.5)}) == 2.0 ** 15


@one_rank_only
@pytest.mark.parametrize("concurrent", [False, True])
def test_ctrl_c_stops_a_run_between_nodes(concurrent):
    # 20000 nodes of 2^18 sines each (no loop): about a minute, stopped
    # between two nodes; no KeyboardInterrupt is left pending afterwards.
    g = ag.Graph()
    x = g.placeholder("x", (1 << 18,))
    y = x
    for _ in range(20000):
        y = ag.sin(y)
    session = ag.Session(g, concurrent=concurrent)
    took = time_to_interrupt(lambda: session.run(ag.sum(y), {x: np.zeros(1 << 18)}))
    assert took < 2.0
    for _ in range(1000):
        pass
    assert session.run(ag.sum(x), {x: np.ones(1 << 18)}) == 2.0 ** 18


# 11. Printing.

def test_gradient_check_results_print_small_errors_in_g_form():
    g = ag.Graph()
    x = g.placeholder("x", (3,))
    result = ag.check_gradients(ag.sum(ag.square(x)), [x], {x: np.array([1.0, -2.0, 0.5])})
    assert result.ok
    text = repr(result)
    shown = float(text.split("max_fd_error=")[1].split()[0])
    assert shown == pytest.approx(result.max_fd_error, rel=1e-5)
    assert "0.000000" not in text
