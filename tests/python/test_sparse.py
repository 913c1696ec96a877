"""adgraph.sparse and the patch grid's operators from Python, against SciPy
(the whole matrix built on every rank) and the gradient checker."""

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.linalg
from mpi4py import MPI

import adgraph as ag

pytestmark = pytest.mark.skipif(not ag.petsc_available(), reason="built without PETSc")

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()


def rows_of(r):
    return 3 + r  # uneven on purpose


def whole_matrix():
    """A non-symmetric, diagonally dominant matrix coupling rows i - 4,
    i - 1, i, i + 1 and i + 3 (reaching other ranks)."""
    n = sum(rows_of(r) for r in range(SIZE))
    rows, cols, vals = [], [], []
    for i in range(n):
        for d in (-4, -1, 0, 1, 3):
            j = i + d
            if 0 <= j < n:
                rows.append(i)
                cols.append(j)
                vals.append(10.0 + i % 3 if i == j else np.sin(0.7 * i + 1.3 * j))
    return scipy.sparse.csr_matrix((vals, (rows, cols)), shape=(n, n))


def local_part():
    """This rank's rows of whole_matrix() as a SparseMatrix and its values."""
    a = whole_matrix()
    first = sum(rows_of(r) for r in range(RANK))
    block = a[first:first + rows_of(RANK)]
    block.sort_indices()
    return (first, ag.sparse.SparseMatrix(first, block.indptr.tolist(), block.indices.tolist()),
            block.data.copy(), a)


def test_solve_and_transpose_solve_match_scipy():
    first, a, values, whole = local_part()
    n = rows_of(RANK)
    b_whole = np.sin(np.arange(whole.shape[0]) + 1.0)
    g = ag.Graph()
    v = g.placeholder("values", values.shape)
    b = g.placeholder("b", [n])
    x = ag.sparse.solve(a, v, b, ksp="gmres", pc="jacobi", rtol=1e-12)
    xt = ag.sparse.solve_transpose(a, v, b, ksp="bcgs", pc="bjacobi", rtol=1e-12)
    y = ag.sparse.matvec(a, v, b)
    s = ag.Session(g)
    got = s.run([x, xt, y], {v: values, b: b_whole[first:first + n]})
    own = slice(first, first + n)
    np.testing.assert_allclose(got[0], scipy.sparse.linalg.spsolve(whole.tocsc(), b_whole)[own],
                               rtol=1e-9)
    np.testing.assert_allclose(got[1],
                               scipy.sparse.linalg.spsolve(whole.T.tocsc(), b_whole)[own],
                               rtol=1e-9)
    np.testing.assert_allclose(got[2], (whole @ b_whole)[own], rtol=1e-14)
    assert a.stats()["setups"] == 2  # one per KSP (two option sets)


def test_gradients_through_a_solve_pass_the_checker():
    first, a, values, whole = local_part()
    n = rows_of(RANK)
    g = ag.Graph()
    v = g.placeholder("values", values.shape)
    b = g.placeholder("b", [n])
    w = np.cos(np.arange(n) + RANK)
    y = ag.sum(ag.sparse.solve(a, v, b, rtol=1e-13) * w)
    result = ag.check_gradients(y, [v, b], {v: values, b: np.ones(n)}, tolerance=1e-6)
    assert result.ok, result.message


def test_a_solve_that_does_not_converge_raises_on_every_rank():
    first, a, values, whole = local_part()
    g = ag.Graph()
    x = ag.sparse.solve(a, g.constant(values), np.ones(rows_of(RANK)), max_it=1)
    with pytest.raises(ag.RunError, match="DIVERGED_ITS after 1 iteration"):
        ag.Session(g).run(x)


def test_bad_options_are_refused():
    first, a, values, whole = local_part()
    g = ag.Graph()
    with pytest.raises(ag.OptionsError, match="ksp"):
        ag.sparse.solve(a, g.constant(values), np.ones(rows_of(RANK)), ksp="minres")
    with pytest.raises(ag.OptionsError, match="unknown option"):
        ag.sparse.solve(a, g.constant(values), np.ones(rows_of(RANK)), tolerance=1)


def test_the_conservative_poisson_problem_matches_scipy():
    nx, ny = 12, 6
    if nx % SIZE:
        pytest.skip("12 rows do not split over %d ranks" % SIZE)
    h = 1.0 / (nx + 1)
    n = nx // SIZE
    xs = (np.arange(nx) + 1) * h
    ys = (np.arange(ny) + 1) * h
    kappa_whole = 1 + xs[:, None] ** 2 + ys[None, :] ** 2
    g = ag.Graph()
    kappa = g.placeholder("kappa", [n, ny])
    a = ag.solvers.five_point_matrix(nx, ny, SIZE, 1, RANK)
    values = ag.solvers.conservative_values(kappa, nx, ny, SIZE, 1, RANK)
    u = ag.sparse.solve(a, values, np.ones((n, ny)), ksp="cg", pc="gamg", symmetric=True,
                        rtol=1e-12)
    got = ag.Session(g).run(u, {kappa: kappa_whole[RANK * n:(RANK + 1) * n]})
    # The same operator with SciPy: c = (k_P + k_Q)/2 inside, k_P across.
    k = kappa_whole
    rows, cols, vals = [], [], []
    for i in range(nx):
        for j in range(ny):
            diag = 0.0
            for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                qi, qj = i + di, j + dj
                if 0 <= qi < nx and 0 <= qj < ny:
                    c = 0.5 * (k[i, j] + k[qi, qj])
                    rows.append(i * ny + j)
                    cols.append(qi * ny + qj)
                    vals.append(-c / h**2)
                else:
                    c = k[i, j]
                diag += c / h**2
            rows.append(i * ny + j)
            cols.append(i * ny + j)
            vals.append(diag)
    whole = scipy.sparse.csc_matrix((vals, (rows, cols)), shape=(nx * ny, nx * ny))
    want = scipy.sparse.linalg.spsolve(whole, np.ones(nx * ny)).reshape(nx, ny)
    np.testing.assert_allclose(got, want[RANK * n:(RANK + 1) * n], rtol=1e-9)
