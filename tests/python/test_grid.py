"""Grids, halos and stencils from Python (python/src/grid_bindings.cc,
python/adgraph/grid.py) against NumPy references written with np.pad and
np.roll, and the gradient checker, at 1-4 ranks."""

import itertools

import numpy as np
import pytest
from mpi4py import MPI

import adgraph as ag
from adgraph import grid as agg

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.rank, WORLD.size


def process_grids(shape):
    """Every process grid of SIZE ranks that fits ``shape``."""
    out = []
    for procs in itertools.product(*[range(1, SIZE + 1)] * len(shape)):
        if int(np.prod(procs)) == SIZE and all(p <= n for p, n in zip(procs, shape)):
            out.append(procs)
    return out


def global_field(shape, seed, lo=-1.0, hi=1.0):
    """The same array on every rank."""
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def my_patch(grid, array):
    """This rank's patch of a global [batch..., shape...] array, by hand."""
    index = [slice(None)] * (array.ndim - grid.ndim)
    for a, (start, n) in enumerate(zip(grid.offset(), grid.local_shape())):
        index.append(slice(start, start + n))
    return array[tuple(index)]


def padded_reference(array, widths, periodic, rule, ndim):
    """np.pad axis by axis: mode "wrap" on periodic axes, else the rule's."""
    modes = {"zero": "constant", "mirror": "reflect", "copy": "edge"}
    out = array
    batch = array.ndim - ndim
    for a in range(ndim):
        pad = [(0, 0)] * out.ndim
        pad[batch + a] = (widths[a], widths[a])
        out = np.pad(out, pad, mode="wrap" if periodic[a] else modes[rule])
    return out


def test_scatter_then_gather_gives_the_array_back():
    for shape in [(13,), (7, 5), (5, 4, 3)]:
        for procs in process_grids(shape):
            grid = agg.Grid(shape, procs)
            full = global_field((2,) + shape, 1)
            mine = grid.scatter(full if RANK == 0 else None)
            np.testing.assert_array_equal(mine, my_patch(grid, full))
            back = grid.gather(mine)
            if RANK == 0:
                np.testing.assert_array_equal(back, full)
            else:
                assert back is None


@pytest.mark.parametrize("rule", ["zero", "mirror", "copy"])
@pytest.mark.parametrize("corners", [True, False])
def test_halo_matches_np_pad(rule, corners):
    cases = [((23,), (False,), (4,)), ((23,), (True,), (2,)),
             ((17, 18), (True, False), (2, 1)), ((17, 18), (False, False), (1, 4)),
             ((9, 10, 9), (False, True, False), (1, 2, 1))]
    for shape, periodic, widths in cases:
        full = global_field(shape, 2)
        for procs in process_grids(shape):
            grid = agg.Grid(shape, procs, periodic=periodic)
            smallest = [n // p for n, p in zip(shape, procs)]
            narrow = any(w > 0 and (p > 1 or per) and s < w or
                         w > 0 and rule == "mirror" and not per and s <= w
                         for w, p, per, s in zip(widths, procs, periodic, smallest))
            g = ag.Graph()
            x = g.placeholder("x", grid.local_shape())
            if narrow:
                with pytest.raises(ag.ShapeError, match='attribute "width"'):
                    grid.halo(x, list(widths), corners=corners, boundary=rule)
                continue
            y = grid.halo(x, list(widths), corners=corners, boundary=rule)
            got = ag.Session(g).run(y, {x: my_patch(grid, full)})
            ref = padded_reference(full, widths, periodic, rule, len(shape))
            index = tuple(slice(o, o + n + 2 * w)
                          for o, n, w in zip(grid.offset(), grid.local_shape(), widths))
            want = ref[index].copy()
            if not corners:
                # Ghost points on two or more axes are left zero.
                ghost = np.zeros(want.shape, dtype=int)
                for a, (n, w) in enumerate(zip(grid.local_shape(), widths)):
                    i = np.arange(n + 2 * w)
                    mask = ((i < w) | (i >= n + w)).astype(int)
                    ghost += mask.reshape([-1 if b == a else 1 for b in range(len(shape))])
                want[ghost > 1] = 0.0
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("corners", [True, False])
def test_halo_start_and_finish_give_the_halo_with_work_between(corners):
    shape, periodic, widths = (12, 11), (False, True), [2, 1]
    full = global_field(shape, 3)
    grid = agg.Grid(shape, process_grids(shape)[-1], periodic=periodic)
    g = ag.Graph()
    x = g.placeholder("x", grid.local_shape())
    request = grid.halo_start(x, widths, corners=corners, boundary="copy")
    work = ag.sum(x * x)  # needs no ghost: runs while the messages travel
    split = grid.halo_finish(request)
    plain = grid.halo(x, widths, corners=corners, boundary="copy")
    got, want, _ = ag.Session(g).run([split, plain, work], {x: my_patch(grid, full)})
    np.testing.assert_array_equal(got, want)
    ref = padded_reference(full, widths, periodic, "copy", 2)
    index = tuple(slice(o, o + n + 2 * w)
                  for o, n, w in zip(grid.offset(), grid.local_shape(), widths))
    if corners:
        np.testing.assert_array_equal(got, ref[index])
    weights = g.constant(global_field(got.shape, 4 + RANK))
    result = ag.check_gradients(ag.mpi_total(ag.sum(ag.square(split) * weights)),
                                [x], {x: my_patch(grid, full)})
    assert result.ok, result.message


# Each function inside a stencil, against NumPy on the global field; u and
# v lie in [0.5, 1.5]. E = u at +(0, 1), N = v at -(1, 0), zero outside.
FUNCTIONS = {
    "arith": (lambda u, v, E, N: E(u) * N(v) - u / (N(v) + 1.0) + 2.0,
              lambda u, v, e, n: e * n - u / (n + 1.0) + 2.0),
    "pow": (lambda u, v, E, N: u ** (N(v) + 1.0), lambda u, v, e, n: u ** (n + 1.0)),
    "exp": (lambda u, v, E, N: agg.exp(E(u)) * u, lambda u, v, e, n: np.exp(e) * u),
    "log": (lambda u, v, E, N: agg.log(u + E(u)), lambda u, v, e, n: np.log(u + e)),
    "sin": (lambda u, v, E, N: agg.sin(E(u) * N(v)), lambda u, v, e, n: np.sin(e * n)),
    "cos": (lambda u, v, E, N: agg.cos(E(u)) + u, lambda u, v, e, n: np.cos(e) + u),
    "tanh": (lambda u, v, E, N: agg.tanh(E(u) - N(v)), lambda u, v, e, n: np.tanh(e - n)),
    "abs": (lambda u, v, E, N: agg.abs(u - N(v)) * u, lambda u, v, e, n: np.abs(u - n) * u),
    "sqrt": (lambda u, v, E, N: agg.sqrt(u + E(u)), lambda u, v, e, n: np.sqrt(u + e)),
    "minimum": (lambda u, v, E, N: agg.minimum(u, N(v)) * E(u),
                lambda u, v, e, n: np.minimum(u, n) * e),
    "maximum": (lambda u, v, E, N: agg.maximum(E(u), N(v)) + u,
                lambda u, v, e, n: np.maximum(e, n) + u),
    "where": (lambda u, v, E, N: agg.where(u > N(v), u * E(u), N(v) - u),
              lambda u, v, e, n: np.where(u > n, u * e, n - u)),
    "compare": (lambda u, v, E, N: (u < N(v)) * 2.0 + (u >= E(u)) * 3.0 + (u <= N(v)),
                lambda u, v, e, n: (u < n) * 2.0 + (u >= e) * 3.0 + (u <= n) * 1.0),
}


def shifted(array, offset, periodic):
    """array[i + offset]: np.roll on periodic axes, zero past other edges."""
    out = array
    for a, (o, per) in enumerate(zip(offset, periodic)):
        if o == 0:
            continue
        out = np.roll(out, -o, axis=a)
        if not per:
            index = [slice(None)] * array.ndim
            index[a] = slice(-o, None) if o > 0 else slice(0, -o)
            out[tuple(index)] = 0.0
    return out


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_function_matches_numpy_on_every_process_grid(name):
    shape = (7, 9)
    expr, reference = FUNCTIONS[name]
    u = global_field(shape, 3, 0.5, 1.5)
    v = global_field(shape, 4, 0.5, 1.5)
    for periodic in [(False, False), (True, False), (False, True)]:
        want = reference(u, v, shifted(u, (0, 1), periodic), shifted(v, (-1, 0), periodic))
        for procs in process_grids(shape):
            grid = agg.Grid(shape, procs, periodic=periodic)
            g = ag.Graph()
            uu = g.placeholder("u", grid.local_shape())
            vv = g.placeholder("v", grid.local_shape())
            U, V = grid.field(uu), grid.field(vv)
            y = grid.stencil(expr(U, V, lambda f: f.shift((0, 1)), lambda f: f.shift((-1, 0))))
            got = ag.Session(g).run(y, {uu: my_patch(grid, u), vv: my_patch(grid, v)})
            np.testing.assert_allclose(got, my_patch(grid, want), rtol=1e-13, atol=1e-13)
            if name != "compare":
                # Σ w·y² with w > 0: a loss whose curvature does not cancel
                # between points, so the Taylor remainders stay quadratic.
                weights = g.constant(np.random.default_rng(10 + RANK).uniform(
                    0.5, 1.5, grid.local_shape()))
                # Taylor steps from 1e-3: small enough not to cross a kink
                # (abs, minimum, maximum, where) between these points, and
                # for the quadratic term to dominate the remainder.
                result = ag.check_gradients(ag.sum(ag.square(y) * weights), [uu, vv],
                                            {uu: my_patch(grid, u), vv: my_patch(grid, v)},
                                            taylor_epsilon=1e-3, taylor_steps=4)
                assert result.ok, result.message


def test_3d_uneven_periodic_diffusion_with_a_batch_and_a_coefficient():
    shape = (5, 6, 4)
    periodic = (False, True, False)
    u = global_field((2,) + shape, 5)
    kappa = global_field(shape, 6, 0.5, 1.0)
    lap = -6.0 * u
    for a in range(3):
        for side in (-1, 1):
            offset = [0, 0, 0]
            offset[a] = side
            lap = lap + np.stack([shifted(u[b], offset, periodic) for b in range(2)])
    want = u + 0.1 * kappa * lap
    for procs in process_grids(shape):
        grid = agg.Grid(shape, procs, periodic=periodic)
        g = ag.Graph()
        uu = g.placeholder("u", [2] + list(grid.local_shape()))
        kk = g.placeholder("k", grid.local_shape())
        U = grid.field(uu)
        lap_expr = -6.0 * U
        for a in range(3):
            for side in (-1, 1):
                offset = [0, 0, 0]
                offset[a] = side
                lap_expr = lap_expr + U.shift(offset)
        y = grid.stencil(U + 0.1 * grid.field(kk) * lap_expr)
        feeds = {uu: my_patch(grid, u), kk: my_patch(grid, kappa)}
        np.testing.assert_allclose(ag.Session(g).run(y, feeds), my_patch(grid, want),
                                   rtol=1e-13, atol=1e-13)
        weights = g.constant(np.random.default_rng(20 + RANK).uniform(-1, 1, y.shape))
        result = ag.check_gradients(ag.sum(y * weights), [uu, kk], feeds)
        assert result.ok, result.message


def test_bad_stencils_name_what_is_wrong():
    grid = agg.Grid((8, 8))
    g = ag.Graph()
    u = g.placeholder("u", grid.local_shape())
    w = g.placeholder("w", (3, 3))
    with pytest.raises(ag.ShapeError, match=r'input in0 \("w"\): shape \[3, 3\] does not '
                       r"end in this rank's patch"):
        grid.stencil(grid.field(w) + 1.0)
    with pytest.raises(ag.OptionsError, match="expected a StencilExpr"):
        grid.stencil("in0")
    with pytest.raises(ag.OptionsError, match="expected a StencilExpr, a Value or a number"):
        grid.field(u) + "3"
    with pytest.raises(ag.OptionsError, match="procs"):
        agg.Grid((8, 8), procs=(SIZE + 1, 1))


def test_loop_hands_each_step_its_row_of_xs():
    # c_{t+1} = 2 c_t + x_t: c_T = 2^T c_0 + sum_t 2^(T-1-t) x_t, and
    # d(w . c_T)/dx_t = 2^(T-1-t) w, by hand; the same under every schedule.
    steps = 5
    xs_value = np.arange(2.0 * steps).reshape(steps, 2)
    grads = []
    for checkpoints in ["all", 2, "every:2"]:
        g = ag.Graph()
        c0 = g.placeholder("c0", (2,))
        xs = g.placeholder("xs", (steps, 2))
        r = ag.loop(steps, [c0], [], lambda a: [2.0 * a.carries[0] + a.xs[0]],
                    checkpoints=checkpoints, xs=[xs])
        w = g.constant(np.array([3.0, -1.0]))
        loss = ag.sum(r.carries[0] * w)
        c, grad = ag.Session(g).run([r.carries[0], ag.gradient(loss, xs)],
                                    {c0: [1.0, 2.0], xs: xs_value})
        powers = 2.0 ** np.arange(steps - 1, -1, -1)
        np.testing.assert_array_equal(c, 2.0 ** steps * np.array([1.0, 2.0]) + powers @ xs_value)
        np.testing.assert_array_equal(grad, np.outer(powers, [3.0, -1.0]))
        grads.append(grad)
    np.testing.assert_array_equal(grads[1], grads[0])
    np.testing.assert_array_equal(grads[2], grads[0])
    g = ag.Graph()
    with pytest.raises(ag.GraphError, match=r"xs\[0\] must be a Value with a first axis of 5"):
        ag.loop(5, [g.placeholder("c", (2,))], [], lambda a: [a.carries[0]],
                xs=[g.placeholder("x", (4, 2))])


def test_a_stencil_expression_has_no_truth_value_and_eq_builds_a_node():
    grid = agg.Grid((8, 6), process_grids((8, 6))[-1])
    g = ag.Graph()
    a = g.placeholder("a", grid.local_shape())
    A = agg.field(a)
    # Python's if/max/min would silently pick a branch: refused.
    for use in (lambda: bool(A > 0), lambda: max(A, 0), lambda: A if A else -A):
        with pytest.raises(TypeError, match="no truth value"):
            use()
    av = my_patch(grid, global_field((8, 6), 5))
    av[0, 0] = 0.0
    for expr, want in [(agg.where(A == 0, 1.0, 2.0), np.where(av == 0, 1.0, 2.0)),
                       (agg.where(A != 0, 1.0, 2.0), np.where(av != 0, 1.0, 2.0))]:
        got = ag.Session(g).run(grid.stencil(expr), {a: av})
        np.testing.assert_array_equal(got, want)
    assert (A == None) is False and (A != "x") is True  # noqa: E711
    assert len({A, A}) == 1  # hashable by identity


def test_halo_takes_one_int_for_every_axis():
    grid = agg.Grid((8, 6), process_grids((8, 6))[-1])
    g = ag.Graph()
    x = g.placeholder("x", grid.local_shape())
    one, each = grid.halo(x, 1), grid.halo(x, [1, 1])
    xv = my_patch(grid, global_field((8, 6), 6))
    got = ag.Session(g).run([one, each], {x: xv})
    np.testing.assert_array_equal(got[0], got[1])
    with pytest.raises(ag.OptionsError, match="width: expected an int or a list"):
        grid.halo(x, "1")
    # What help(Grid.halo) says of the output: each extent n becomes n + 2w.
    n0, n1 = grid.local_shape()
    assert tuple(grid.halo(x, [1, 2]).shape) == (n0 + 2, n1 + 4)


def test_scatter_gives_float64_patches_of_int_and_float32_arrays():
    grid = agg.Grid((7, 5), process_grids((7, 5))[-1])
    full = np.arange(35).reshape(7, 5)
    for array in [full, full.astype(np.float32)]:
        mine = grid.scatter(array if RANK == 0 else None)
        assert mine.dtype == np.float64
        assert mine.shape == tuple(grid.local_shape())
        np.testing.assert_array_equal(mine, my_patch(grid, full.astype(np.float64)))


def test_scatter_of_a_bad_array_raises_on_every_rank():
    grid = agg.Grid((8, 6), process_grids((8, 6))[-1])
    for bad in [np.ones((6, 8)), None, "text"]:
        with pytest.raises(ag.OptionsError, match="scatter"):
            grid.scatter(bad if RANK == 0 else None)
    full = global_field((8, 6), 7)
    np.testing.assert_array_equal(grid.scatter(full if RANK == 0 else None),
                                  my_patch(grid, full))


def test_gather_of_unreadable_or_mismatched_patches_raises_on_every_rank():
    """Every rank raises (none waits, MPI does not fail) when one rank's
    patch cannot be read or has other batch axes, or the root is no rank."""
    grid = agg.Grid((8, 6), process_grids((8, 6))[-1])
    patch = np.ones(grid.local_shape())
    for mine in ["text" if RANK == SIZE - 1 else patch,
                 np.ones((1 + (RANK == SIZE - 1), *grid.local_shape()))]:
        if SIZE == 1 and not isinstance(mine, str) and mine.ndim == 3:
            continue  # one rank: one batch, nothing differs
        with pytest.raises(ag.OptionsError, match="gather: local"):
            grid.gather(mine)
    with pytest.raises(ag.OptionsError, match="root: 9 is not a rank"):
        grid.gather(patch, root=9)
    back = grid.gather(patch)
    if RANK == 0:
        np.testing.assert_array_equal(back, np.ones((8, 6)))


def test_grid_refuses_arguments_it_would_have_coerced():
    for kwargs, field in [({"shape": (8.7, 8)}, "shape"),
                          ({"shape": (8, 8), "procs": (1.5, 1)}, "procs"),
                          ({"shape": (8, 8), "periodic": ("no", "no")}, "periodic")]:
        with pytest.raises(ag.OptionsError, match=f"Grid: {field}: expected"):
            agg.Grid(**kwargs)


def test_a_stencil_whose_derivative_is_zero_has_zero_gradients():
    """U - U is the number 0 after differentiation (ȳ·(1 - 1)): the gradient
    is zeros, as for U > 0.5, not a node that reads no input."""
    grid = agg.Grid((8,))
    g = ag.Graph()
    u = g.placeholder("u", grid.local_shape())
    s = g.placeholder("s", ())
    U, S = grid.field(u), grid.field(s)
    loss = ag.mpi_total(grid.stencil(U - U + S * 0.0 + (U > 0.5)))
    du, ds = ag.gradients(loss, [u, s])
    L, gu, gs = ag.Session(g).run([loss, du, ds], {u: np.full(grid.local_shape(), 0.75),
                                                   s: np.array(2.0)})
    assert float(L) == (8.0 if RANK == 0 else 0.0)
    np.testing.assert_array_equal(gu, np.zeros(grid.local_shape()))
    assert float(gs) == 0.0


def test_fields_of_two_grids_do_not_mix():
    """Two grids whose patches have the same shape on every rank ([4, 4] at
    2 ranks): a field of one is never read as the other's (that gave B's
    values laid out on A, silently). An equal grid is the same grid."""
    a = agg.Grid((4 * SIZE, 4), (SIZE, 1))
    b = agg.Grid((4, 4 * SIZE), (1, SIZE))
    g = ag.Graph()
    u = g.placeholder("u", a.local_shape())
    c = g.placeholder("c", b.local_shape())
    if SIZE > 1:
        with pytest.raises(ag.OptionsError, match="fields of two grids"):
            a.field(u) + b.field(c)
        with pytest.raises(ag.OptionsError, match="belong to another grid"):
            a.stencil(b.field(c) * 2.0)
    same = agg.Grid((4 * SIZE, 4), (SIZE, 1))
    y = a.stencil(a.field(u) + same.field(u).shift((0, 1)) + agg.field(u))
    full = global_field((4 * SIZE, 4), 11)
    out = a.gather(ag.Session(g).run([y], {u: a.scatter(full if RANK == 0 else None)})[0])
    if RANK == 0:
        np.testing.assert_array_equal(out, full + np.pad(full, ((0, 0), (0, 1)))[:, 1:] + full)


def test_a_part_used_twice_is_written_once_with_a_label():
    """STENCILS.md's text form: the same object in two places is one part,
    labelled, and the node computes what NumPy does with it."""
    grid = agg.Grid((8, 6), process_grids((8, 6))[-1])
    g = ag.Graph()
    u, c = (g.placeholder(n, grid.local_shape()) for n in ("u", "c"))
    x = agg.field(u) * agg.field(c)
    expr = x + agg.sin(x)
    assert expr.text == "add($0=mul(in0,in1),sin($0))"
    fu, fc = global_field((8, 6), 9), global_field((8, 6), 10)
    got = ag.Session(g).run(grid.stencil(expr),
                            {u: my_patch(grid, fu), c: my_patch(grid, fc)})
    # (sin may round differently in the kernel's vector library: 1 ulp)
    np.testing.assert_allclose(got, my_patch(grid, fu * fc + np.sin(fu * fc)),
                               rtol=1e-15, atol=1e-15)


def test_a_value_on_the_left_of_an_expression_builds_the_expression():
    grid = agg.Grid((8, 6), process_grids((8, 6))[-1])
    g = ag.Graph()
    u = g.placeholder("u", grid.local_shape())
    U = agg.field(u)
    for built, text in [(u + U, "add(in0,in0)"), (u - 2 * U, "sub(in0,mul(2,in0))"),
                        (u * U, "mul(in0,in0)"), (u < U, "gt(in0,in0)"),
                        (u == U, "eq(in0,in0)")]:
        assert isinstance(built, agg.StencilExpr)
        assert built.text == text
    full = global_field((8, 6), 8)
    got = ag.Session(g).run(grid.stencil(u * U.shift((0, 1)) + 1.0),
                            {u: my_patch(grid, full)})
    right = np.pad(full, [(0, 0), (0, 1)])[:, 1:]  # u[i, j + 1], 0 past the edge
    np.testing.assert_array_equal(got, my_patch(grid, full * right + 1.0))
    assert isinstance(u + 1.0, ag.Value)  # Values among themselves unchanged


def random_case(seed):
    """A grid, offsets and coefficients drawn from ``seed`` (the same on
    every rank): 1-3 axes of 6-9 points (1-D: 14-17), some periodic, reads
    up to 2 away on each axis (rows end at every offset the kernel peels)."""
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(1, 4))
    shape = tuple(int(n) + 8 * (ndim == 1) for n in rng.integers(6, 10, size=ndim))
    periodic = tuple(bool(p) for p in rng.integers(0, 2, size=ndim))
    offsets = [tuple(int(o) for o in rng.integers(-2, 3, size=ndim)) for _ in range(3)]
    coefficients = [float(c) for c in rng.uniform(-1, 1, size=3)]
    batch = (2,) if rng.integers(0, 2) else ()
    return shape, periodic, offsets, coefficients, batch


@pytest.mark.parametrize("seed", range(6))
def test_random_shifted_sums_and_their_gradients_match_numpy_bitwise_on_every_grid(seed):
    """y = v ⊙ Σ_k c_k·u(· + o_k), L = Σ g ⊙ y: y, ū = Σ_k c_k·S_{−o_k}(v ⊙ g)
    and v̄ = g ⊙ Σ_k c_k·u(· + o_k) (summed over u's batch) by NumPy; the
    results of every process grid equal each other bit for bit."""
    shape, periodic, offsets, coefficients, batch = random_case(seed)
    u = global_field(batch + shape, 100 + seed)
    v = global_field(shape, 200 + seed)
    g_weights = global_field(batch + shape, 300 + seed)

    def shift(array, offset):
        if not batch:
            return shifted(array, offset, periodic)
        return np.stack([shifted(a, offset, periodic) for a in array])
    total = sum(c * shift(u, o) for c, o in zip(coefficients, offsets))
    want_y = v * total
    want_u = sum(c * shift(v * g_weights, tuple(-x for x in o))
                 for c, o in zip(coefficients, offsets))
    want_v = g_weights * total
    if batch:
        want_v = want_v.sum(axis=0)
    seen = None
    grids = [p for p in process_grids(shape)
             if all(n // q >= 2 for n, q in zip(shape, p))]  # patches hold the reads
    assert grids, (shape, SIZE)
    for procs in grids:
        grid = agg.Grid(shape, procs, periodic=periodic)
        g = ag.Graph()
        uu = g.placeholder("u", batch + tuple(grid.local_shape()))
        vv = g.placeholder("v", grid.local_shape())
        U, V = grid.field(uu), grid.field(vv)
        expr = coefficients[0] * U.shift(offsets[0])
        for c, o in zip(coefficients[1:], offsets[1:]):
            expr = expr + c * U.shift(o)
        y = grid.stencil(V * expr)
        loss = ag.sum(y * g.constant(my_patch(grid, g_weights)))
        feeds = {uu: my_patch(grid, u), vv: my_patch(grid, v)}
        got = ag.Session(g).run([y] + ag.gradients(loss, [uu, vv]), feeds)
        for value, want in zip(got, [want_y, want_u, want_v]):
            np.testing.assert_allclose(value, my_patch(grid, want), rtol=1e-12, atol=1e-12)
        # The same bits on every process grid: gather both into the global
        # arrays on every rank and compare them with ==.
        gathered = [grid.gather(value) for value in got]
        gathered = [WORLD.bcast(x, root=0) for x in gathered]
        if seen is None:
            seen = gathered
        else:
            for a, b in zip(seen, gathered):
                assert np.array_equal(a, b), (procs, seed)


def grid_points(shape, grid_procs):
    """Points on patch edges (every process grid's), on the last grid point,
    on grid points and between them: global index coordinates."""
    rng = np.random.default_rng(len(shape))
    points = [[n - 1.0 for n in shape], [0.0] * len(shape),
              [float(n // 2) for n in shape]]
    for procs in grid_procs:
        # The first index of the second patch on each axis, and just below.
        edge = [float(-(-n // p)) if p > 1 else 1.0 for n, p in zip(shape, procs)]
        points += [edge, [e - 0.5 for e in edge]]
    points += [list(rng.uniform(0, n - 1)) for n in [np.array(shape)] * 4]
    return points


@pytest.mark.parametrize("shape", [(11,), (7, 9), (5, 6, 4)])
def test_sample_matches_scipy_and_inject_is_its_transpose_on_every_grid(shape):
    from scipy.interpolate import RegularGridInterpolator
    grids = process_grids(shape)
    points = grid_points(shape, grids)
    u = global_field((2,) + shape, 7)
    axes = [np.arange(n, dtype=float) for n in shape]
    want = np.stack([RegularGridInterpolator(axes, u[b], method="linear")(np.array(points))
                     for b in range(2)])
    amplitudes = global_field((2, len(points)), 8)
    seen = None
    for procs in grids:
        grid = agg.Grid(shape, procs)
        g = ag.Graph()
        uu = g.placeholder("u", (2,) + tuple(grid.local_shape()))
        aa = g.placeholder("a", (2, len(points)))
        samples = grid.sample(uu, points)
        spread = grid.inject(uu * 0.0, points, aa)
        feeds = {uu: my_patch(grid, u), aa: amplitudes}
        got, injected = ag.Session(g).run([samples, spread], feeds)
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
        # On a grid point the sample is u there, bit for bit.
        for p, point in enumerate(points[:3]):
            assert np.array_equal(got[:, p], u[(slice(None),) + tuple(int(x) for x in point)])
        # ⟨inject(0, a), u⟩ = ⟨a, sample(u)⟩ summed over ranks, with the
        # sample from SciPy: inject spreads with the interpolation's weights.
        local = np.sum(injected * my_patch(grid, u))
        assert np.isclose(WORLD.allreduce(local), np.sum(amplitudes * want), rtol=1e-12)
        full = WORLD.bcast(grid.gather(injected), root=0)
        if seen is None:
            seen = (got, full)
        else:
            assert np.array_equal(seen[0], got) and np.array_equal(seen[1], full), procs
        weights = g.constant(global_field(got.shape, 9))
        loss = ag.sum(samples * weights) + ag.sum(ag.square(grid.inject(uu, points, aa)))
        result = ag.check_gradients(loss, [uu, aa], feeds)
        assert result.ok, result.message


def test_points_outside_the_grid_are_refused():
    grid = agg.Grid((6, 5))
    g = ag.Graph()
    u = g.placeholder("u", grid.local_shape())
    with pytest.raises(ag.OptionsError, match=r"point 1 lies outside the grid: coordinate 1 "
                                              r"is 4\.5.*not within \[0, 4\]"):
        grid.sample(u, [[0.0, 0.0], [1.0, 4.5]])
    with pytest.raises(ag.OptionsError, match="point 0 has 1 coordinates on a 2-D grid"):
        grid.inject(u, [[1.0]], g.constant(np.ones(1)))
