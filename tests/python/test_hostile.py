"""Hostile inputs, round three (issue #56): each test feeds one mechanism's
bad input and checks the message or the right value. Run at 1 and 2 ranks.
Expected values are by hand or from NumPy."""

import os
import threading

# Read when PETSc starts (the first sparse node of this process): options
# under the prefix "h56" only, for the preonly test below.
os.environ["PETSC_OPTIONS"] = "-h56_ksp_type preonly -h56_pc_type jacobi"

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from mpi4py import MPI  # noqa: E402

import adgraph as ag  # noqa: E402

RANK, SIZE = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size


# 1. Lifetimes and threads in the Python layer.

def test_a_body_value_used_after_its_body_returned_is_refused():
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    kept = []

    def body(a):
        kept.append((a.carries[0], a.graph))
        return [a.carries[0] * 2]

    r = ag.loop(3, [x], [], body, name="doubling")
    assert np.array_equal(ag.Session(g).run(r.carries[0], {x: [1.0, 2.0]}), [8.0, 16.0])
    value, body_graph = kept[0]
    session = ag.Session(g)
    for use in (lambda: value + 1, lambda: value.shape, lambda: ag.square(value),
                lambda: body_graph.constant(1.0), lambda: session.run(value)):
        with pytest.raises(ag.GraphError, match=r'body of loop "doubling" was used after'):
            use()
    del g, r
    with pytest.raises(ag.GraphError, match="doubling"):
        value * 3
    assert "no longer valid" in repr(value)


def test_a_loop_built_inside_another_loops_body():
    g = ag.Graph()
    x = g.placeholder("x", (2,))

    def outer(a):
        inner = ag.loop(2, [a.carries[0]], [], lambda b: [b.carries[0] + 1])
        return [inner.carries[0]]

    r = ag.loop(3, [x], [], outer)
    # Each outer step adds 2.
    assert np.array_equal(ag.Session(g).run(r.carries[0], {x: [0.0, 1.0]}), [6.0, 7.0])


def test_a_freed_to_mpi4py_communicator_is_refused_and_the_graph_still_runs():
    g = ag.Graph()
    lent = g.comm.to_mpi4py()
    with pytest.raises(ag.Error, match=r"to_mpi4py\(\).*cannot be freed; Dup\(\)"):
        lent.Free()
    x = g.placeholder("x", ())
    assert ag.Session(g).run(ag.mpi_allreduce(x), {x: 1.0}) == SIZE
    own = lent.Dup()
    own.Free()


slow_calls = []


def slow_identity(x):
    slow_calls.append(threading.get_ident())
    threading.Event().wait(0.002)
    return np.array(x)


ag.custom_op("py_hostile_slow", forward=slow_identity, vjp=lambda xs, y, ybar: [ybar])


def test_one_session_from_two_threads_is_serialised():
    g = ag.Graph()
    x = g.placeholder("x", (3,))
    y = ag.py_hostile_slow(x) * 2.0
    session = ag.Session(g)
    results, errors = {}, []

    def work(k):
        try:
            for _ in range(30):
                out = session.run(y, {x: np.full(3, float(k))})
                assert np.array_equal(out, np.full(3, 2.0 * k))
            results[k] = True
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    if SIZE == 1:
        threads = [threading.Thread(target=work, args=(k,)) for k in (1, 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and results == {1: True, 2: True}
    else:
        work(1)
        assert results == {1: True}


def raise_named(x):
    raise ValueError(f"from {threading.current_thread().name}")


ag.custom_op("py_hostile_raise", forward=raise_named, vjp=lambda xs, y, ybar: [ybar])


def test_each_thread_gets_its_own_custom_op_exception():
    if SIZE > 1:
        pytest.skip("two threads running graphs are refused on several ranks")
    g = ag.Graph()
    x = g.placeholder("x", ())
    y = ag.py_hostile_raise(x)
    mixed = []

    def work(name):
        session = ag.Session(g)
        for _ in range(100):
            try:
                session.run(y, {x: 1.0})
            except ValueError as e:
                if str(e) != f"from {name}":
                    mixed.append((name, str(e)))

    threads = [threading.Thread(target=work, args=(n,), name=n) for n in "AB"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert mixed == []


def test_two_threads_running_graphs_on_several_ranks_are_refused():
    if SIZE == 1:
        pytest.skip("one rank: no messages to cross")
    g = ag.Graph()
    x = g.placeholder("x", ())
    y = ag.mpi_allreduce(ag.py_hostile_slow(x))
    started, errors = threading.Event(), []

    def inner(x):
        started.set()
        threading.Event().wait(0.5)
        return np.array(x)

    ag.custom_op("py_hostile_wait", forward=inner, vjp=lambda xs, y, ybar: [ybar])
    h = ag.Graph()
    z = h.placeholder("z", ())
    held = ag.py_hostile_wait(z)

    def other():
        started.wait()
        try:
            ag.Session(g).run(y, {x: 1.0})
        except ag.RunError as e:
            errors.append(str(e))

    t = threading.Thread(target=other)
    t.start()
    ag.Session(h).run(held, {z: 1.0})
    t.join()
    assert len(errors) == 1 and "Session.run: another thread" in errors[0]
    assert ag.Session(g).run(y, {x: 1.0}) == SIZE


def test_release_buffers_from_inside_a_run_is_refused():
    g = ag.Graph()
    x = g.placeholder("x", (600,))
    sessions = []

    def release(x):
        sessions[0].release_buffers()
        return np.array(x)

    ag.custom_op("py_hostile_release", forward=release, vjp=lambda xs, y, ybar: [ybar])
    y = ag.py_hostile_release(x * 2.0) + 1.0
    sessions.append(ag.Session(g))
    with pytest.raises(ag.RunError, match=r"Session.release_buffers: called from inside a run "
                                          r"of the same session"):
        sessions[0].run(y, {x: np.ones(600)})


# 2. Conversion at the Python boundary.

needs_petsc_early = pytest.mark.skipif(not ag.petsc_available(), reason="built without PETSc")


@pytest.mark.parametrize("bad, got", [
    (None, "got None"), ("3", "got str '3'"), (1 + 2j, "got complex"),
    (True, "got bool True"), ([1.0, None], "NoneType None at flat index 1"),
    (np.array(["1", "2"]), "an array of <U1"), (np.array([1 + 1j, 2]), "complex128"),
    (np.array([True, False]), "an array of bool")])
def test_feeds_refuse_what_is_not_real_numbers(bad, got):
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    with pytest.raises(ag.ShapeError, match=r'feed of "x": expected a real number.*' + got):
        ag.Session(g).run(x + 1.0, {x: bad})


@pytest.mark.parametrize("bad", [None, "3", 2j, True])
def test_operands_and_constants_refuse_what_is_not_real_numbers(bad):
    g = ag.Graph()
    x = g.placeholder("x", ())
    with pytest.raises(ag.ShapeError, match="operand: expected a real number"):
        x + bad
    with pytest.raises(ag.ShapeError, match="Graph.constant: value: expected a real number"):
        g.constant(bad)


def test_numbers_of_every_real_kind_are_taken():
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    s = ag.Session(g)
    for feed in ([1, 2], np.array([1, 2], dtype=np.int32), np.array([1, 2], dtype=np.float32),
                 np.array([1.0, 2.0], dtype=object)):
        assert np.array_equal(s.run(x * 2, {x: feed}), [2.0, 4.0])
    assert s.run(x ** 2 + np.float32(1), {x: [3, 4]}).tolist() == [10.0, 17.0]


def test_fetches_and_feeds_of_the_wrong_kind_are_named():
    g = ag.Graph()
    x = g.placeholder("x", ())
    s = ag.Session(g)
    with pytest.raises(ag.RunError, match="fetches: expected a Value, a node name or a list of "
                                          "them, got 5"):
        s.run(5, {x: 1.0})
    with pytest.raises(ag.RunError, match=r"feeds: expected a dict \{Value or node name: array\} "
                                          r"or None, got \[1\.0\]"):
        s.run(x, [1.0])


@pytest.mark.parametrize("call, message", [
    (lambda g, x: g.placeholder("y", 3),
     r"^Graph\.placeholder\(\): argument 'shape': expected a sequence of integers "
     r"\(List\[int\]\), got int 3; it takes \(name: str, shape: List\[int\]\)$"),
    (lambda g, x: ag.Session(g, concurrent="yes"),
     r"^Session\(\): argument 'concurrent': expected True or False \(bool\), got str 'yes'"),
    (lambda g, x: ag.gradients(ag.sum(x), x),
     r"^gradients\(\): argument 'xs': expected a sequence of Values \(List\[Value\]\), "
     r"got Value <adgraph\.Value \"x\""),
    (lambda g, x: ag.gradient(ag.sum(x), [x]),
     r"^gradient\(\): argument 'x': expected a Value; for several, gradients\(y, xs\), "
     r"got list \[<adgraph\.Value \"x\""),
    (lambda g, x: ag.sum(x, name=3), r"^sum\(\): argument 'name': expected a string, got int 3$"),
    (lambda g, x: g.get(3), r"^Graph\.get\(\): argument 'name': expected a string, got int 3"),
    (lambda g, x: ag.Session(g).run(x, {x: [1.0, 2.0]}, extra=1),
     r"^Session\.run\(\): unexpected keyword argument 'extra'; it takes \(fetches: object"),
    (lambda g, x: ag.loop("3", [x], [], lambda a: [a.carries[0]]),
     r"^loop\(\): argument 'trips': expected an integer, got str '3'"),
    (lambda g, x: g.placeholder("z"), r"^Graph\.placeholder\(\): argument 'shape' is missing"),
    # Pure-Python functions name theirs the same way.
    (lambda g, x: ag.check_gradients(ag.sum(x), 3, {x: [1.0, 2.0]}),
     r"^check_gradients\(\): argument 'xs': expected a sequence of Values "
     r"\(List\[Value\]\), got int 3$"),
    (lambda g, x: ag.check_gradients(ag.sum(x), x, {x: [1.0, 2.0]}),
     r"^check_gradients\(\): argument 'xs': expected a sequence of Values "
     r"\(List\[Value\]\), got Value"),
    (lambda g, x: ag.check_gradients(ag.sum(x), [x, "x"], {x: [1.0, 2.0]}),
     r"^check_gradients\(\): argument 'xs' entry 1: expected a Value, got str 'x'$"),
    (lambda g, x: ag.loop(3, [x], 5, lambda a: [a.carries[0]]),
     r"^loop\(\): argument 'invariants': expected a sequence of Values "
     r"\(List\[Value\]\), got int 5$")])
def test_arguments_of_the_wrong_type_name_the_function_and_the_argument(call, message):
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    with pytest.raises(ag.ArgumentError, match=message) as error:
        call(g, x)
    assert isinstance(error.value, TypeError)
    assert "incompatible" not in str(error.value)


@pytest.mark.parametrize("result, message", [
    (lambda x: np.ravel(np.outer(x, x)),
     r"forward returned shape \[4\], expected \[2, 2\] \(exactly"),
    (lambda x: np.outer(x, x).T.reshape(4, 1), r"returned shape \[4, 1\]"),
    (lambda x: None, "not an array of real numbers: .*got None"),
    (lambda x: "1", "got str")])
def test_a_custom_ops_result_must_have_its_declared_shape(result, message):
    name = f"py_hostile_shape_{abs(hash(message)) % 10**8}"
    op = ag.custom_op(name, forward=result, vjp=lambda xs, y, ybar: [None],
                      shape=lambda shapes: (2, 2))
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    with pytest.raises(ag.RunError, match=message):
        ag.Session(g).run(op(x), {x: [1.0, 2.0]})


def test_a_vjp_returning_a_number_for_two_inputs_is_named():
    op = ag.custom_op("py_hostile_vjp_int", forward=lambda a, b: a + b,
                      vjp=lambda xs, y, ybar: 3)
    g = ag.Graph()
    x = g.placeholder("x", ())
    grad = ag.gradient(op(x, x), x)
    with pytest.raises(ag.RunError, match="vjp returned int; expected a list or tuple of 2"):
        ag.Session(g).run(grad, {x: 1.0})


@pytest.mark.parametrize("field, kwargs", [
    ("vjp", dict(vjp=3)), ("shape", dict(shape="(2,)")), ("jvp", dict(jvp=1.5))])
def test_custom_op_refuses_what_cannot_be_called_when_registered(field, kwargs):
    args = dict(forward=lambda x: x, vjp=lambda xs, y, ybar: [ybar])
    args.update(kwargs)
    expected = field + r": custom_op\(\"py_hostile_call.*expected a callable"
    with pytest.raises(ag.OptionsError, match=expected):
        ag.custom_op("py_hostile_call_" + field, **args)
    assert not hasattr(ag, "py_hostile_call_" + field)


@pytest.mark.parametrize("call, message", [
    (lambda loss, x: ag.minimize(loss, [x], [np.zeros(2)], history=2 ** 63),
     r"history: must be in \[1, 1000\], got 9223372036854775808"),
    (lambda loss, x: ag.minimize(loss, [x], [np.zeros(2)], max_iterations=2 ** 40),
     r"max_iterations: must be in \[0, 2147483647\], got 1099511627776"),
    (lambda loss, x: ag.minimize(loss, [x], [np.zeros(2)], trace="yes"),
     r"trace: LbfgsOptions: expected True or False, got str 'yes'"),
    (lambda loss, x: ag.minimize(loss, [x], [np.zeros(2)], tolerance_gradient="1e-3"),
     r"tolerance_gradient: LbfgsOptions: expected a real number \(int or float\), got str"),
    (lambda loss, x: ag.minimize(loss, [x], [np.zeros(2)], history=2.5),
     r"history: LbfgsOptions: expected an integer, got float 2.5"),
    (lambda loss, x: ag.check_gradients(loss, [x], {x: np.zeros(2)}, directions=True),
     r"directions: check_gradients: expected an integer, got bool True"),
    (lambda loss, x: ag.loop(2, [x], [], lambda a: [a.carries[0]], checkpoints=True),
     r"checkpoints: a checkpoint schedule is all, auto, N .*; got True"),
    (lambda loss, x: ag.loop(2, [x], [], lambda a: [a.carries[0]],
                             checkpoints={"every": "2"}),
     r"checkpoints: a checkpoint schedule is all, auto, N .*; got {'every': '2'}"),
    (lambda loss, x: ag.solvers.HeatInverse(nx=8, ny=8, px=SIZE, py=1, nt=2 ** 40),
     r"nt: must be in \[1, 2147483647\], got 1099511627776"),
    (lambda loss, x: ag.solvers.HeatInverse(nx=8, ny=8, px=SIZE, py=1, checkpoints=True),
     r"checkpoints: a checkpoint schedule is all, auto, N .*; got True")])
def test_options_of_the_wrong_type_or_range_are_named(call, message):
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    loss = ag.sum(ag.square(x))
    with pytest.raises(ag.OptionsError, match=message):
        call(loss, x)


@needs_petsc_early
@pytest.mark.parametrize("options, message", [
    (dict(symmetric="yes"), r"symmetric: sparse.solve: expected True or False, got str 'yes'"),
    (dict(ksp=3), r"ksp: sparse.solve: expected a string, got int 3"),
    (dict(max_it=2 ** 63), r"max_it: must be in \[1, 2147483647\], got 9223372036854775808")])
def test_solver_options_of_the_wrong_type_are_named(options, message):
    g = ag.Graph(MPI.COMM_SELF)
    a = ag.sparse.SparseMatrix(0, [0, 1], [0])
    v = g.placeholder("v", (1,))
    with pytest.raises(ag.OptionsError, match=message):
        ag.sparse.solve(a, v, v, **options)
