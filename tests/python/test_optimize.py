"""L-BFGS from Python (ag.minimize) and SciPy driving a distributed graph
(ag.scipy_objective), against NumPy's least squares and polynomial roots."""

import numpy as np
import pytest
import scipy.optimize
from mpi4py import MPI

import adgraph as ag

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.rank, WORLD.size


def shard(rank):
    """Rank `rank`'s rows of a least-squares problem A theta ~ b."""
    rng = np.random.default_rng(100 + rank)
    return rng.normal(size=(5, 3)), rng.normal(size=5)


def distributed_least_squares():
    # theta is replicated (broadcast from rank 0); each rank adds its rows'
    # squared residuals; mpi_sum puts the total on rank 0.
    g = ag.Graph()
    theta = g.placeholder("theta", (3,))
    a, b = shard(RANK)
    r = ag.matvec(g.constant(a), ag.mpi_bcast(theta)) - b
    loss = ag.sum(ag.mpi_sum(ag.sum(ag.square(r))))
    return theta, loss


def numpy_least_squares():
    rows = [shard(r) for r in range(SIZE)]
    a = np.vstack([s[0] for s in rows])
    b = np.concatenate([s[1] for s in rows])
    return np.linalg.lstsq(a, b, rcond=None)[0]


def test_scipy_lbfgsb_drives_a_distributed_graph_identically_on_every_rank():
    theta, loss = distributed_least_squares()
    fun = ag.scipy_objective(loss, [theta])
    assert fun.size == 3
    result = scipy.optimize.minimize(fun, np.zeros(3), jac=True, method="L-BFGS-B",
                                     options={"gtol": 1e-12, "ftol": 1e-15})
    everyone = WORLD.allgather(result.x.tobytes())
    assert all(x == everyone[0] for x in everyone)
    np.testing.assert_allclose(result.x, numpy_least_squares(), atol=1e-6)
    assert fun.unflatten(result.x)[0].shape == (3,)


def test_minimize_finds_the_least_squares_solution():
    theta, loss = distributed_least_squares()
    result = ag.minimize(loss, [theta], [np.zeros(3)], tolerance_gradient=1e-10)
    assert (result.termination in ("gradient norm", "gradient_norm")
            or result.gradient_norm <= 1e-10)
    np.testing.assert_allclose(result.x[0], numpy_least_squares(), atol=1e-8)
    assert result.f_history[0] == result.initial_f
    assert len(result.f_history) == result.iterations + 1


def test_adcme_lbfgs_fit_reaches_the_polynomial_root():
    # (sum_r theta^(r+1) - 2)^2 from theta = 0.5: its minimiser is the
    # positive root of theta + theta^2 + ... + theta^P = 2.
    g = ag.Graph()
    theta = g.placeholder("theta", (1,))
    l = ag.mpi_bcast(theta) ** (ag.mpi_rank(g) + 1.0)
    loss = ag.square(ag.sum(ag.mpi_sum(l)) - 2.0)
    result = ag.minimize(loss, [theta], [np.array([0.5])])
    roots = np.roots([1.0] * SIZE + [-2.0])
    root = [r.real for r in roots if abs(r.imag) < 1e-12 and r.real > 0][0]
    assert result.x[0][0] == pytest.approx(root, abs=1e-7)


def test_minimize_within_bounds_stops_at_the_bound():
    theta, loss = distributed_least_squares()
    free = numpy_least_squares()
    upper = free - 0.1  # every component's optimum lies above its bound
    result = ag.minimize(loss, [theta], [np.zeros(3)], bounds={"upper": [upper]})
    assert np.all(result.x[0] <= upper)
    assert result.active_bounds >= 1


def test_bad_options_name_the_field():
    theta, loss = distributed_least_squares()
    with pytest.raises(ag.OptionsError, match="histroy"):
        ag.minimize(loss, [theta], [np.zeros(3)], histroy=3)
    with pytest.raises(ag.OptionsError, match="layout"):
        ag.minimize(loss, [theta], [np.zeros(3)], layout="diagonal")
    with pytest.raises(ag.OptionsError):
        ag.minimize(loss, [theta], [np.zeros(3)], history=0)
