"""Graph building (python/src/graph_bindings.cc): arithmetic with numbers
and arrays, sums, derivatives and loops, with values derived by hand or
by NumPy. Sessions, arrays and the module's errors have suites of their
own (test_session, test_arrays, test_module)."""

import math

import numpy as np
import pytest

import adgraph as ag
from least_squares import A, least_squares


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


def test_jvp_is_the_directional_derivative():
    g, x, loss = least_squares()
    t = np.array([1.0, -2.0, 0.5])
    (dl,) = ag.jvp([loss], [x], [g.constant(t)])
    assert ag.Session(g).run(dl, {x: np.ones(3)}) == pytest.approx(4 * t.sum(), rel=1e-15)


def test_a_loop_and_its_gradient_by_hand_under_every_schedule():
    # c_{t+1} = a * c_t + t: c_n and dc_n/da derived by hand for n = 6.
    n, a0, c0 = 6, 1.5, np.array([1.0, -2.0])
    results = []
    for schedule in ["all", 2, "every:3", "auto", None]:
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
