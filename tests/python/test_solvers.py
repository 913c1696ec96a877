"""adgraph.load_json (the driver's documents) and adgraph.solvers.HeatInverse
from Python, at 1 and 2 ranks. Expected values by hand (the documents'
formulas) or by central finite differences."""

import pathlib

import numpy as np
import pytest
from mpi4py import MPI

import adgraph as ag

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.rank, WORLD.size
GRAPHS = pathlib.Path(__file__).resolve().parents[2] / "examples" / "graphs"


def test_load_json_runs_a_document_as_the_driver_does():
    # forward_mode.json: t = P sum(x^3), dt = P sum(3 x^2 v), g = 3 x^2,
    # hv = 6 x v at x = [1, -2, 0.5], v = [0.5, 1, -3].
    doc = ag.load_json(GRAPHS / "forward_mode.json")
    assert doc.fetch == ["t", "dt", "g", "hv"]
    t, dt, g, hv = ag.Session(doc.graph).run(doc.fetch_values, doc.feeds)
    x, v = np.array([1.0, -2.0, 0.5]), np.array([0.5, 1.0, -3.0])
    assert t == SIZE * np.sum(x ** 3)
    assert dt == SIZE * np.sum(3 * x ** 2 * v)
    np.testing.assert_array_equal(g, 3 * x ** 2)
    np.testing.assert_array_equal(hv, 6 * x * v)
    np.testing.assert_array_equal(doc.values["g"].shape, (3,))


def test_load_json_reports_file_node_and_field():
    with pytest.raises(ag.JsonError, match=r'inline\.json: fetch\[0\]: unknown node "nothing"'):
        ag.load_json('{"adgraph": 1, "nodes": [], "fetch": ["nothing"]}', file="inline.json")


def test_load_json_optimize_section_feeds_minimize():
    # lbfgsb_box.json without its bounds: min |a - c|^2 + |b - d|^2 is at
    # a = c = [3, -1, 0.5], b = d = [0.25, 4].
    doc = ag.load_json(GRAPHS / "lbfgsb_box.json")
    o = doc.optimize
    assert o.names == ["a", "b"] and o.method == "lbfgsb" and o.layout == "replicated"
    result = ag.minimize(o.objective, o.variables, o.start, tolerance_gradient=1e-12)
    np.testing.assert_allclose(result.x[0], [3.0, -1.0, 0.5], atol=1e-10)
    np.testing.assert_allclose(result.x[1], [0.25, 4.0], atol=1e-10)


def heat(**extra):
    return ag.solvers.HeatInverse(nx=8, ny=8, nt=10, px=SIZE, py=1, **extra)


def test_heat_gradient_matches_finite_differences():
    problem = heat(checkpoints=2, reg_smooth=1e-3)
    assert problem.layout == "sharded"
    rng = np.random.default_rng(11 + RANK)
    kappa = problem.kappa_start() + 0.1 * rng.random(problem.kappa_start().shape)
    direction = rng.normal(size=kappa.shape)
    _, gradient = problem.loss_and_gradient(kappa)
    slope = WORLD.allreduce(float(np.sum(gradient * direction)))
    eps = 1e-5
    fd = (problem.loss(kappa + eps * direction)
          - problem.loss(kappa - eps * direction)) / (2 * eps)
    assert abs(fd - slope) <= 1e-6 * abs(slope)


def test_heat_fit_reduces_the_loss_and_reports_like_cpp():
    problem = heat(checkpoints="all")
    result = problem.fit(problem.kappa_start(), max_iterations=4)
    assert result.iterations == 4 and result.termination == "max_iterations"
    assert result.f_history[-1] < result.f_history[0]
    assert isinstance(result.x, np.ndarray) and result.x.shape == (8 // SIZE, 8)
    forward, adjoint = problem.loop_stats()
    assert forward["forward_steps"] == 10 and adjoint["taped_steps"] == 10
    error = problem.relative_kappa_error(result.x)
    assert 0 < error < problem.relative_kappa_error(problem.kappa_start())


def test_heat_options_are_checked():
    with pytest.raises(ag.OptionsError, match="selects no sensor"):
        heat(sensors_every=16)
    with pytest.raises(ag.OptionsError, match="unknown option"):
        heat(sensor_every=2)
