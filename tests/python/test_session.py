"""Session (python/src/session_bindings.cc): run and run_into with the
caller's arrays written and read in place, memory handed back, feeds and
fetches by name, the gradient checker, and the interpreter free during a
run; values derived by hand or by NumPy."""

import math
import threading
import time

import numpy as np
import pytest

import adgraph as ag
from least_squares import least_squares


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


def test_feeds_by_name_and_fetches_by_name():
    g, x, loss = least_squares()
    assert ag.Session(g).run(loss.name, {"x": [1.0, 1.0, 1.0]}) == 8.0


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
