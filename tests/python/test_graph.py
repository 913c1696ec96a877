"""Graph building, Session.run / run_into, derivatives, loops and errors,
with values derived by hand or by NumPy."""

import gc
import math
import threading
import time

import numpy as np
import pytest

import adgraph as ag

A = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, -1.0]])
B = np.array([1.0, 2.0])


def least_squares():
    g = ag.Graph()
    x = g.placeholder("x", (3,))
    loss = ag.sum(ag.square(ag.matvec(g.constant(A), x) - g.constant(B)))
    return g, x, loss


def test_quickstart_values_by_hand():
    g, x, loss = least_squares()
    grad = ag.gradient(loss, x)
    v = g.placeholder("v", (3,))
    hv = ag.gradient(ag.dot(grad, v), x)
    out = ag.Session(g).run([loss, grad, hv], {x: np.ones(3), "v": [1.0, 0, 0]})
    # Ax - b = (2, -2): L = 8, dL/dx = 2 A^T (2, -2) = (4, 4, 4), H e1 = 2 A^T A e1.
    assert out[0] == 8.0
    assert out[0].shape == () and out[0].dtype == np.float64
    np.testing.assert_array_equal(out[1], [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(out[2], 2 * A.T @ A @ [1.0, 0, 0])


def test_arithmetic_with_numbers_and_arrays_on_either_side():
    g = ag.Graph()
    x = g.placeholder("x", (3,))
    w = np.array([0.5, -1.0, 2.0])
    ys = [x + 1, 1 - x, 2.0 * x, x / 4, 3 / x, x ** 2, 2 ** x, -x, w + x, w * x,
          x - w, w / x, x ** x]
    xv = np.array([1.0, 2.0, 4.0])
    out = ag.Session(g).run(ys, {x: xv})
    expected = [xv + 1, 1 - xv, 2 * xv, xv / 4, 3 / xv, xv ** 2, 2 ** xv, -xv,
                w + xv, w * xv, xv - w, w / xv, xv ** xv]
    for got, want in zip(out, expected):
        np.testing.assert_allclose(got, want, rtol=1e-15)


def test_sums_along_axes_in_index_order_or_exactly_as_math_fsum():
    g = ag.Graph()
    x = g.placeholder("x", (3, 4))
    rng = np.random.default_rng(36)
    xv = rng.standard_normal((3, 4)) * 10.0 ** rng.integers(-12, 16, (3, 4))
    exact, ordered = ag.Session(g).run([ag.sum(x, axes=[1], exact="yes"), ag.sum(x, axes=[1])],
                                       {x: xv})
    assert list(exact) == [math.fsum(row) for row in xv]
    in_order = []
    for row in xv:
        total = 0.0
        for v in row:
            total += v
        in_order.append(total)
    assert list(ordered) == in_order
    with pytest.raises(ag.ShapeError, match='attribute "exact"'):
        ag.sum(x, axes=[0], exact="auto")


def test_fetched_arrays_own_their_data_and_outlive_the_graph():
    g, x, loss = least_squares()
    grad = ag.gradient(loss, x)
    session = ag.Session(g)
    first = session.run(grad, {x: np.ones(3)})
    second = session.run(grad, {x: np.zeros(3)})
    del session, g, x, loss, grad
    gc.collect()
    np.testing.assert_array_equal(first, [4.0, 4.0, 4.0])
    # At x = 0: 2 A^T (-b) = (-2, -8, 4).
    np.testing.assert_array_equal(second, [-2.0, -8.0, 4.0])
    assert first.flags.writeable and first.flags.c_contiguous


def test_run_into_writes_into_the_callers_array():
    g, x, loss = least_squares()
    grad = ag.gradient(loss, x)
    session = ag.Session(g)
    out = np.full(3, np.nan)
    scalar = np.empty(())
    address = out.__array_interface__["data"][0]
    session.run_into([grad, loss], {x: np.ones(3)}, [out, scalar])
    assert out.__array_interface__["data"][0] == address
    np.testing.assert_array_equal(out, [4.0, 4.0, 4.0])
    assert scalar == 8.0
    session.run_into(grad, {x: np.zeros(3)}, out)
    np.testing.assert_array_equal(out, [-2.0, -8.0, 4.0])


def libm_sin(v):
    # adgraph's sin is the C library's, element by element (ops/
    # elementwise.cc); NumPy's may be a SIMD version that rounds some
    # elements differently, so the oracle is math.sin (the C library's).
    return np.array([math.sin(e) for e in np.ravel(v)]).reshape(np.shape(v))


def test_run_into_writes_in_place_and_feeds_are_read_in_place():
    g = ag.Graph()
    x = g.placeholder("x", (4096,))
    seen = []

    def forward(v):
        seen.append(v.__array_interface__["data"][0])
        return v * 2.0

    twice = ag.custom_op("py_twice_seen", forward=forward,
                         vjp=lambda xs, y, ybar: [2.0 * ybar])
    y = ag.sin(twice(x))
    xv = np.linspace(-1.0, 1.0, 4096)
    xv.flags.writeable = False  # a read-only feed is fine: never written
    out = np.empty(4096)
    session = ag.Session(g)
    for _ in range(2):
        session.run_into(y, {x: xv}, out)
        # The op saw the caller's array itself, not a copy of it.
        assert seen[-1] == xv.__array_interface__["data"][0]
        assert session.stats["outputs_copied"] == 0
        np.testing.assert_array_equal(out, libm_sin(xv * 2.0))
    # A feed of another dtype or layout is converted (once), not refused.
    session.run_into(y, {x: xv.astype(np.float32)}, out)
    np.testing.assert_array_equal(
        out, libm_sin(xv.astype(np.float32).astype(np.float64) * 2.0))
    session.run_into(y, {x: list(xv)}, out)
    np.testing.assert_array_equal(out, libm_sin(xv * 2.0))


def test_run_into_writes_a_loops_result_in_place():
    # c_{t+1} = c_t / 2 + 1, 10 steps from x: c = 2 + (x - 2) / 1024.
    g = ag.Graph()
    x = g.placeholder("x", (600,))
    carry = ag.loop(10, [x], [], lambda a: [a.carries[0] * 0.5 + 1.0]).carries[0]
    xv = np.arange(600.0)
    out = np.empty(600)
    session = ag.Session(g)
    session.run_into(carry, {x: xv}, out)
    assert session.stats["outputs_copied"] == 0
    np.testing.assert_array_equal(out, 2.0 + (xv - 2.0) / 1024.0)


def test_run_into_refuses_outputs_that_share_memory():
    g, x, loss = least_squares()
    grad = ag.gradient(loss, x)
    session = ag.Session(g)
    feed = np.ones(3)
    with pytest.raises(ValueError, match='shares memory with the feed of "x"'):
        session.run_into(grad, {x: feed}, feed)
    both = np.empty(6)
    with pytest.raises(ValueError, match="shares memory with the output"):
        session.run_into([grad, grad], {x: feed}, [both[:3], both[2:5]])


def test_dropped_results_give_their_memory_to_the_next_run():
    g = ag.Graph()
    x = g.placeholder("x", (1 << 15,))
    y = x * 3.0
    session = ag.Session(g)
    xv = np.ones(1 << 15)
    first = session.run(y, {x: xv})
    address = first.__array_interface__["data"][0]
    del first
    second = session.run(y, {x: xv})
    assert second.__array_interface__["data"][0] == address
    assert session.stats["buffers_allocated"] == 0
    np.testing.assert_array_equal(second, np.full(1 << 15, 3.0))
    # A result that is kept is never reused.
    third = session.run(y, {x: xv})
    assert third.__array_interface__["data"][0] != address
    np.testing.assert_array_equal(second, np.full(1 << 15, 3.0))


@pytest.mark.parametrize("bad, why", [
    (np.empty(3, dtype=np.float32), "dtype float32"),
    (np.empty(4), "shape [4], expected [3]"),
    (np.empty(6)[::2], "not C-contiguous"),
    ([0.0, 0.0, 0.0], "not a numpy array"),
])
def test_run_into_refuses_an_unusable_array_naming_the_fetch(bad, why):
    g, x, loss = least_squares()
    grad = ag.gradient(loss, x)
    with pytest.raises(ValueError) as error:
        ag.Session(g).run_into(grad, {x: np.ones(3)}, bad)
    assert f'fetch "{grad.name}"' in str(error.value)
    assert why in str(error.value)


def test_feeds_by_name_and_fetches_by_name():
    g, x, loss = least_squares()
    assert ag.Session(g).run(loss.name, {"x": [1.0, 1.0, 1.0]}) == 8.0


def test_jvp_is_the_directional_derivative():
    g, x, loss = least_squares()
    t = np.array([1.0, -2.0, 0.5])
    (dl,) = ag.jvp([loss], [x], [g.constant(t)])
    assert ag.Session(g).run(dl, {x: np.ones(3)}) == pytest.approx(4 * t.sum(), rel=1e-15)


def test_the_gradient_checker_passes_and_reports_its_fields():
    g, x, loss = least_squares()
    r = ag.check_gradients(loss, [x], {x: np.array([0.3, -0.7, 1.1])}, directions=2)
    assert r.ok and r.message == ""
    assert r.max_fd_error < 1e-7 and r.max_jvp_error < 1e-9
    assert len(r.taylor_rates) == 2
    for rate in r.taylor_rates:
        assert abs(rate - 2) < 0.1
    with pytest.raises(ag.OptionsError, match="unknown option"):
        ag.check_gradients(loss, [x], {x: np.ones(3)}, stepp=1e-6)


def test_errors_have_the_librarys_types_and_messages():
    g = ag.Graph()
    a = g.placeholder("a", (3,))
    b = g.placeholder("b", (2,))
    with pytest.raises(ag.ShapeError) as error:
        ag.add(a, b, name="l")
    assert isinstance(error.value, ValueError) and isinstance(error.value, ag.Error)
    assert isinstance(error.value, RuntimeError)
    assert str(error.value).startswith('node "l" (add)')
    assert "[3]" in str(error.value) and "[2]" in str(error.value)
    with pytest.raises(ag.GraphError, match="unknown op"):
        ag._adgraph.add_node(g, "no_such_op", [a], {}, "", [])
    with pytest.raises(ag.RunError, match='"a"'):
        ag.Session(g).run(ag.sum(a))
    with pytest.raises(ag.RunError, match=r"expected shape \[3\], got \[2\]"):
        ag.Session(g).run(ag.sum(a), {a: np.ones(2)})
    with pytest.raises(ag.OptionsError):
        ag.Session(g, num_threads=-1)
    with pytest.raises(ag.GraphError, match="attribute"):
        ag.mpi_bcast(a, root=object())


def test_a_loop_and_its_gradient_by_hand_under_every_schedule():
    # c_{t+1} = a * c_t + t: c_n and dc_n/da derived by hand for n = 6.
    n, a0, c0 = 6, 1.5, np.array([1.0, -2.0])
    results = []
    for schedule in ["all", 2, {"every": 3}, None]:
        g = ag.Graph()
        a = g.placeholder("a", ())
        c = g.placeholder("c", (2,))
        r = ag.loop(n, [c], [a], lambda s: [s.invariants[0] * s.carries[0] + s.step],
                    checkpoints=schedule)
        loss = ag.sum(r.carries[0])
        da = ag.gradient(loss, a)
        results.append(ag.Session(g).run([loss, da], {a: a0, c: c0}))
    cs, dcs = c0.copy(), np.zeros(2)
    for t in range(n):
        dcs = cs + a0 * dcs
        cs = a0 * cs + t
    assert results[0][0] == pytest.approx(cs.sum(), rel=1e-14)
    assert results[0][1] == pytest.approx(dcs.sum(), rel=1e-14)
    for other in results[1:]:
        assert other[0] == results[0][0] and other[1] == results[0][1]


def test_loop_outputs_are_stacked_per_step():
    g = ag.Graph()
    c = g.placeholder("c", ())
    r = ag.loop(4, [c], [], lambda s: ([s.carries[0] * 2], [s.carries[0] + 0]),
                output_steps=[1, 3])
    out = ag.Session(g).run(r.outputs[0], {c: 1.0})
    np.testing.assert_array_equal(out, [2.0, 8.0])


def test_a_loop_body_that_raises_reaches_the_caller_with_its_type():
    g = ag.Graph()
    c = g.placeholder("c", ())

    def body(s):
        raise KeyError("no such carry")

    with pytest.raises(KeyError, match="no such carry"):
        ag.loop(3, [c], [], body)


def test_every_registered_op_is_a_documented_function():
    for op in ag._adgraph.registered_ops():
        f = getattr(ag, op["name"])
        assert callable(f)
    assert "root" in ag.mpi_bcast.__doc__
    assert "sum over ranks" in ag.mpi_sum.__doc__


def test_the_interpreter_runs_other_threads_during_a_run():
    g = ag.Graph()
    x = g.placeholder("x", (200000,))
    r = ag.loop(300, [x], [], lambda s: [ag.sin(s.carries[0])])
    y = ag.sum(r.carries[0])
    session = ag.Session(g)
    feed = {x: np.linspace(0, 1, 200000)}
    session.run(y, feed)
    ticks = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            ticks[0] += 1

    thread = threading.Thread(target=spin)
    thread.start()
    # The thread's pace while this one sleeps (the GIL free)...
    start, t0 = ticks[0], time.perf_counter()
    time.sleep(0.2)
    rate = (ticks[0] - start) / (time.perf_counter() - t0)
    # ... and while this one runs the session.
    start, t0 = ticks[0], time.perf_counter()
    session.run(y, feed)
    seconds = time.perf_counter() - t0
    during = ticks[0] - start
    done.set()
    thread.join()
    # A run that held the GIL would leave the thread a switch interval or
    # two (5 ms each), a few percent of a run this long.
    assert seconds > 0.1
    assert during > 0.2 * rate * seconds
