"""Ops written in Python with ag.custom_op: values, the gradient checker (a
right and a deliberately wrong vjp), forward mode, loops and schedules,
exceptions and bad results. Run at 1-4 ranks, also through communication."""

import numpy as np
import pytest
from mpi4py import MPI

import adgraph as ag

RANK, SIZE = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size

cube = ag.custom_op(
    "py_cube",
    forward=lambda x: x ** 3,
    vjp=lambda xs, y, ybar: [3 * xs[0] ** 2 * ybar],
    jvp=lambda xs, ts: 3 * xs[0] ** 2 * ts[0],
    doc="y = x^3, written in numpy")

wrong_cube = ag.custom_op(
    "py_cube_wrong_vjp",
    forward=lambda x: x ** 3,
    vjp=lambda xs, y, ybar: [2 * xs[0] ** 2 * ybar])  # should be 3 x^2

outer = ag.custom_op(
    "py_outer",
    forward=lambda a, b: np.outer(a, b),
    vjp=lambda xs, y, ybar: [ybar @ xs[1], ybar.T @ xs[0]],
    jvp=lambda xs, ts: np.outer(ts[0], xs[1]) + np.outer(xs[0], ts[1]),
    shape=lambda shapes: (shapes[0][0], shapes[1][0]))


def failing_forward(x):
    raise ValueError("the kernel refused this input")


failing = ag.custom_op("py_failing", forward=failing_forward,
                       vjp=lambda xs, y, ybar: [ybar])
wrong_shape = ag.custom_op("py_wrong_shape", forward=lambda x: np.zeros(7),
                           vjp=lambda xs, y, ybar: [ybar])


def test_a_python_op_computes_and_differentiates():
    g = ag.Graph()
    x = g.placeholder("x", (3,))
    loss = ag.sum(cube(x) * np.array([1.0, 2.0, 3.0]))
    xv = np.array([0.5, -1.0, 2.0])
    value, grad = ag.Session(g).run([loss, ag.gradient(loss, x)], {x: xv})
    assert value == pytest.approx(np.dot(xv ** 3, [1, 2, 3]), rel=1e-15)
    np.testing.assert_allclose(grad, 3 * xv ** 2 * [1, 2, 3], rtol=1e-15)
    assert ag.py_cube is cube
    assert "written in numpy" in cube.__doc__


def test_a_python_op_passes_the_checker_through_communication():
    # Every rank's loss differs, and reaches the sum through mpi_allreduce.
    g = ag.Graph()
    a = g.placeholder("a", (2,))
    b = g.placeholder("b", (3,))
    y = ag.mpi_allreduce(outer(a, cube(b)) * (1.0 + 0.25 * RANK))
    loss = ag.sum(ag.square(y)) * (0.5 + 0.25 * RANK)
    feeds = {a: [0.3 + 0.1 * RANK, -0.2], b: [0.1, 0.7, -0.4 - 0.1 * RANK]}
    r = ag.check_gradients(loss, [a, b], feeds)
    assert r.ok, r.message


def test_a_wrong_vjp_fails_the_checker():
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    loss = ag.sum(wrong_cube(x))
    r = ag.check_gradients(loss, [x], {x: [0.7, 1.3]}, check_jvp=False)
    assert not r.ok
    assert r.max_fd_error > 0.1


def test_forward_mode_without_jvp_says_so():
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    y = wrong_cube(x)
    with pytest.raises(ag.GraphError, match="registered without jvp"):
        ag.jvp([y], [x], [g.constant([1.0, 1.0])])


def test_a_python_op_inside_a_loop_under_every_schedule():
    # c_{t+1} = cube(c_t) * k, 5 steps, from c0 small enough to stay finite.
    results = []
    for schedule in ["all", 1, 2, "every:2"]:
        g = ag.Graph()
        c = g.placeholder("c", (2,))
        k = g.placeholder("k", ())
        r = ag.loop(5, [c], [k], lambda s: [cube(s.carries[0]) * s.invariants[0]],
                    checkpoints=schedule)
        loss = ag.sum(r.carries[0])
        results.append(ag.Session(g).run([loss] + ag.gradients(loss, [c, k]),
                                         {c: [0.9, -0.8], k: 1.1}))
    c0, k0 = np.array([0.9, -0.8]), 1.1
    cs, dc, dk = c0.copy(), np.ones(2), np.zeros(2)
    for _ in range(5):
        dk = 3 * cs ** 2 * k0 * dk + cs ** 3
        dc = 3 * cs ** 2 * k0 * dc
        cs = cs ** 3 * k0
    assert results[0][0] == pytest.approx(cs.sum(), rel=1e-14)
    np.testing.assert_allclose(results[0][1], dc, rtol=1e-13)
    assert results[0][2] == pytest.approx(dk.sum(), rel=1e-13)
    for other in results[1:]:
        for got, want in zip(other, results[0]):
            assert np.array_equal(got, want)


def test_an_exception_in_a_kernel_reaches_the_caller_with_its_type():
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    y = failing(x)
    session = ag.Session(g)
    with pytest.raises(ValueError, match="the kernel refused this input"):
        session.run(y, {x: [1.0, 2.0]})
    # The session is usable afterwards.
    assert session.run(ag.sum(x), {x: [1.0, 2.0]}) == 3.0


def test_an_exception_on_every_rank_before_communication_reaches_each_caller():
    # Every rank fails before the allreduce the run still holds: they agree
    # that all failed (no rank waits for another), so each gets its own
    # exception and the session stays usable.
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    y = ag.mpi_allreduce(failing(x))
    session = ag.Session(g)
    with pytest.raises(ValueError, match="the kernel refused this input"):
        session.run(y, {x: [1.0, 2.0]})
    assert session.run(ag.mpi_allreduce(ag.sum(x)), {x: [1.0, 2.0]}) == 3.0 * SIZE


def test_a_wrong_result_shape_is_a_run_error_naming_the_node():
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    y = wrong_shape(x, name="w")
    with pytest.raises(ag.RunError,
                       match=r'node "w" \(py_wrong_shape\).*shape \[7\], expected \[2\]'):
        ag.Session(g).run(y, {x: [1.0, 2.0]})


def test_a_taken_name_is_refused():
    with pytest.raises(ag.GraphError, match="already registered"):
        ag.custom_op("py_cube", forward=lambda x: x, vjp=lambda xs, y, ybar: [ybar])
    with pytest.raises(ag.GraphError, match="already registered"):
        ag.custom_op("add", forward=lambda x: x, vjp=lambda xs, y, ybar: [ybar])
