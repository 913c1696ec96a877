"""NumPy's basic indexing and comparison operators on Values
(python/adgraph/_indexing.py; Value.__eq__ and friends in
python/src/graph_bindings.cc), against NumPy as the oracle, with the
gradient checker; identity hashing of Values kept. Run at 1 and 2 ranks."""

import numpy as np
import pytest
from mpi4py import MPI

import adgraph as ag

RANK, SIZE = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size
ALL = slice(None)
# Central differences of losses of up to ~100: errors of ~1e-7.
FD_TOLERANCE = 1e-6

# (shape, index): ints, slices with every kind of start/stop/step, ...,
# None, on 1- to 4-D values.
CASES = [
    ((5,), 2), ((5,), -1), ((5,), slice(1, 4)), ((5,), slice(None, None, 2)),
    ((5,), slice(None, None, -1)), ((5,), slice(-2, None)), ((5,), slice(4, 0, -2)),
    ((5,), slice(1, 100)), ((5,), slice(10, 20)), ((5,), slice(None, None, 3)),
    ((5,), slice(-100, 2)), ((5,), slice(3, 1)), ((5,), slice(None, None, -7)),
    ((7,), slice(-2, 0, -3)), ((6,), slice(1, None, 4)), ((1,), 0),
    ((4, 6), (1, ALL)), ((4, 6), (ALL, -2)), ((4, 6), (Ellipsis, slice(1, 5, 2))),
    ((4, 6), (slice(None, None, -1), slice(None, None, -3))), ((4, 6), (None, 2)),
    ((4, 6), (slice(1, 3), None, ALL)), ((4, 6), (-1, -1)), ((4, 6), Ellipsis),
    ((4, 6), ()), ((4, 6), (ALL, slice(4, 1, -1))), ((4, 6), np.int64(3)),
    ((3, 4, 5), (Ellipsis, 0)), ((3, 4, 5), (1, Ellipsis, slice(None, None, -2))),
    ((3, 4, 5), (ALL, slice(1, None, 2), 2)), ((3, 4, 5), (None, Ellipsis, None)),
    ((3, 4, 5), (0, 0, 0)), ((3, 4, 5), (slice(2, None, -1), Ellipsis)),
    ((3, 4, 5), (slice(None, None, 2), slice(None, None, 3), slice(None, None, 4))),
    ((2, 3, 4, 5), (Ellipsis, slice(0, 5, 4), ALL)),
    ((2, 3, 4, 5), (-1, None, slice(None, None, -1), 1, slice(1, -1))),
]
IDS = [f"{shape}-{index!r}".replace(" ", "") for shape, index in CASES]


def values(shape):
    """Distinct entries in [-2, 2.5], different on each rank."""
    return np.linspace(-2.0, 2.0, int(np.prod(shape))).reshape(shape) + 0.25 * RANK


@pytest.mark.parametrize("shape, index", CASES, ids=IDS)
def test_indexing_gives_numpys_result(shape, index):
    g = ag.Graph()
    x = g.placeholder("x", shape)
    xv = values(shape)
    y = x[index]
    expected = xv[index]
    assert y.shape == expected.shape
    np.testing.assert_array_equal(ag.Session(g).run(y, {x: xv}), expected)


@pytest.mark.parametrize("shape, index", CASES, ids=IDS)
def test_indexing_gradient_scatters_the_cotangent_back(shape, index):
    # d/dx sum(w * x[index]) = w placed where x[index] reads, zeros elsewhere.
    g = ag.Graph()
    x = g.placeholder("x", shape)
    xv = values(shape)
    w = np.random.default_rng(len(IDS)).uniform(0.5, 2.0, np.shape(xv[index]))
    loss = ag.sum(x[index] * w)
    expected = np.zeros(shape)
    expected[index] = w
    np.testing.assert_array_equal(ag.Session(g).run(ag.gradient(loss, x), {x: xv}),
                                  expected)
    result = ag.check_gradients(ag.sum(ag.square(x[index]) * w), [x], {x: xv},
                                directions=2, tolerance=FD_TOLERANCE)
    assert result.ok, result.message


def test_indexing_composes_with_arithmetic_and_chained_indexing():
    g = ag.Graph()
    u = g.placeholder("u", (6, 7))
    uv = values((6, 7))
    lap = u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4 * u[1:-1, 1:-1]
    expected = (uv[2:, 1:-1] + uv[:-2, 1:-1] + uv[1:-1, 2:] + uv[1:-1, :-2]
                - 4 * uv[1:-1, 1:-1])
    np.testing.assert_array_equal(ag.Session(g).run(lap, {u: uv}), expected)
    np.testing.assert_array_equal(ag.Session(g).run(u[::-2][1][2:5], {u: uv}),
                                  uv[::-2][1][2:5])
    result = ag.check_gradients(ag.sum(ag.square(lap)), [u], {u: uv},
                                tolerance=FD_TOLERANCE)
    assert result.ok, result.message


def test_indexing_inside_a_loop_body_under_checkpoints():
    # u <- u / 2 + (u shifted left by one, 0 at the end), 4 steps.
    g = ag.Graph()
    u = g.placeholder("u", (5,))
    r = ag.loop(4, [u], [], lambda a: [
        a.carries[0] * 0.5 + ag.pad(a.carries[0][1:], axis=0, after=1)],
        checkpoints=2)
    uv = values((5,))
    expected = uv.copy()
    for _ in range(4):
        expected = expected * 0.5 + np.pad(expected[1:], (0, 1))
    np.testing.assert_array_equal(ag.Session(g).run(r.carries[0], {u: uv}), expected)
    result = ag.check_gradients(ag.sum(ag.square(r.carries[0])), [u], {u: uv},
                                tolerance=FD_TOLERANCE)
    assert result.ok, result.message


def test_indexing_picks_this_ranks_row_of_an_allgather():
    g = ag.Graph()
    x = g.placeholder("x", (3,))
    xv = values((3,))
    np.testing.assert_array_equal(
        ag.Session(g).run(ag.mpi_allgather(x)[RANK], {x: xv}), xv)


@pytest.mark.parametrize("index, kind, says", [
    (1.0, TypeError, "float 1.0"),
    (True, TypeError, "booleans are not accepted"),
    ([0, 1], TypeError, "list [0, 1]"),
    (np.array([0, 1]), TypeError, "ndarray"),
    (np.array([True, False, True]), TypeError, "ndarray"),
    ("a", TypeError, "str 'a'"),
    ((slice(0, 1.5),), TypeError, "stop is float 1.5"),
    (3, IndexError, "index 3 is out of bounds for axis 0 with size 3"),
    (-4, IndexError, "index -4 is out of bounds for axis 0 with size 3"),
    ((0, 0, 0), IndexError, "too many indices"),
    ((Ellipsis, 0, Ellipsis), IndexError, "single ellipsis"),
    (slice(None, None, 0), ValueError, "step 0"),
])
def test_a_bad_index_is_refused_naming_it_and_what_is_accepted(index, kind, says):
    g = ag.Graph()
    x = g.placeholder("x", (3, 2))
    with pytest.raises(kind) as error:
        x[index]
    assert says in str(error.value)
    if kind is TypeError:
        assert "a slice (start:stop:step" in str(error.value)


def test_a_value_is_not_an_index_and_not_iterable():
    g = ag.Graph()
    x = g.placeholder("x", (3,))
    with pytest.raises(TypeError, match="Value"):
        x[x]
    with pytest.raises(TypeError, match="not iterable"):
        list(x)


# Comparison operators: NumPy's result as 0.0/1.0, NaN unequal to all.
COMPARISONS = [
    (lambda a, b: a < b, "less"), (lambda a, b: a <= b, "less_equal"),
    (lambda a, b: a > b, "greater"), (lambda a, b: a >= b, "greater_equal"),
    (lambda a, b: a == b, "equal"), (lambda a, b: a != b, "not_equal"),
]
A = np.array([[1.0, 2.0, np.nan, -1.0]]).T * np.ones((4, 3))  # [4, 3]
B = np.array([2.0, 1.0, -1.0])                                 # [3]


@pytest.mark.parametrize("compare, op", COMPARISONS, ids=[op for _, op in COMPARISONS])
def test_comparisons_give_numpys_result_with_broadcasting(compare, op):
    g = ag.Graph()
    a = g.placeholder("a", A.shape)
    b = g.placeholder("b", B.shape)
    column = g.placeholder("column", (4, 1))
    cases = [
        (compare(a, b), compare(A, B)),            # Value, Value, broadcast
        (compare(a, 1.0), compare(A, 1.0)),        # Value, scalar
        (compare(2.0, a), compare(2.0, A)),        # scalar, Value
        (compare(B, a), compare(B, A)),            # array, Value
        (compare(a, B), compare(A, B)),            # Value, array
        (compare(column, b), compare(A[:, :1], B)),
    ]
    assert cases[0][0].op == op
    feeds = {a: A, b: B, column: A[:, :1]}
    got = ag.Session(g).run([value for value, _ in cases], feeds)
    for k, (result, (_, expected)) in enumerate(zip(got, cases)):
        np.testing.assert_array_equal(result, expected.astype(float), err_msg=f"case {k}")


def test_a_comparison_has_a_zero_derivative():
    # d/dx sum([x > 0] x + [x <= 0.7] x^2) = [x > 0] + 2 x [x <= 0.7] away
    # from the kinks.
    g = ag.Graph()
    x = g.placeholder("x", (4,))
    xv = np.array([-1.5, -0.3, 0.4, 2.0]) + 0.01 * RANK
    loss = ag.sum((x > 0) * x + (x <= 0.7) * ag.square(x))
    grad = ag.Session(g).run(ag.gradient(loss, x), {x: xv})
    np.testing.assert_array_equal(grad, (xv > 0) + 2 * xv * (xv <= 0.7))
    result = ag.check_gradients(loss, [x], {x: xv})
    assert result.ok, result.message


def test_values_keep_identity_hashing_in_dicts_sets_and_lists():
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    y = g.placeholder("y", (2,))
    again = g.get("x")  # another Python object for the same output
    assert again is not x and hash(again) == hash(x)
    assert len({x, again, y}) == 2
    assert {x: 1.0}[again] == 1.0
    assert x in [y, again] and x not in [y]
    assert [y, x].index(again) == 1
    assert bool(x == again) and not bool(x != again)
    assert not bool(x == y) and bool(x != y)
    # What no node can compare falls back to identity.
    other = ag.Graph().placeholder("x", (2,))
    assert (x == other) is False and (x != other) is True
    assert (x == None) is False and (x != "x") is True  # noqa: E711
    # Feeds keyed by Values still work.
    np.testing.assert_array_equal(
        ag.Session(g).run(x + y, {x: np.ones(2), y: np.full(2, 2.0)}), [3.0, 3.0])


def test_equality_builds_a_node_whose_truth_value_is_identity():
    g = ag.Graph()
    x = g.placeholder("x", (3,))
    same = x == x
    assert same.op == "equal" and same.shape == (3,)
    np.testing.assert_array_equal(
        ag.Session(g).run(same, {x: [1.0, np.nan, 3.0]}), [1.0, 0.0, 1.0])
    with pytest.raises(TypeError, match="truth value of an adgraph.Value"):
        bool(x < 1.0)
    with pytest.raises(TypeError, match="truth value"):
        if x:
            pass
