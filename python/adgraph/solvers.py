"""Solvers built on adgraph: the heat inverse problem (C++
``solvers::HeatInverse``), its graph and its distributed L-BFGS(-B) fit,
reached from Python without reimplementing anything."""

from __future__ import annotations

import types as _types
from typing import Any as _Any, cast as _cast

import numpy as _np
from numpy.typing import ArrayLike as _ArrayLike, NDArray as _NDArray

from . import _adgraph


class HeatInverse:
    """Recover the diffusivity kappa of a 2-D heat equation on ``px x py``
    ranks (one patch each) from observations of the temperature.

    Keyword arguments are the C++ ``HeatInverseOptions`` fields, with
    ``HeatConfig``'s at the top level: ``nx``, ``ny`` (interior grid points),
    ``px``, ``py`` (patch grid, ``px * py`` = ranks), ``nt`` (time steps),
    ``dt`` (0: the explicit stability rule), ``scheme`` (``"explicit"``,
    ``"backward_euler"`` or ``"crank_nicolson"``: a sparse solve per step),
    ``overlap``, ``checkpoints`` (``"all"``, ``"auto"``: about sqrt(2 nt)
    snapshots, or a number of snapshots; by default the graph's default,
    which stores every step unless changed), ``replicated``,
    ``sensors`` (global (row, column) pairs), ``sensors_every``,
    ``observe_steps``, ``noise``, ``seed``, ``reg_tikhonov``,
    ``reg_smooth``, ``kappa_min``, ``kappa_max`` (L-BFGS-B when either is
    finite). Collective: every rank constructs it with the same options;
    invalid options raise ``adgraph.OptionsError`` on every rank."""

    def __init__(self, **options: object) -> None:
        self._problem = _adgraph._HeatInverse(options)

    def kappa_start(self) -> _NDArray[_np.float64]:
        """The start value (kappa = 1) in the variable's shape: this rank's
        patch (sharded) or the whole grid (replicated)."""
        return self._problem.kappa_start()

    def kappa_true(self) -> _NDArray[_np.float64]:
        """The true kappa, in the variable's shape."""
        return self._problem.kappa_true()

    @property
    def layout(self) -> str:
        """``"sharded"`` (each rank's patch) or ``"replicated"``."""
        return self._problem.layout()

    @property
    def patch(self) -> dict[str, int]:
        """This rank's patch: ``{"row0", "col0", "n", "m"}``."""
        return self._problem.patch()

    @property
    def sensors(self) -> list[tuple[int, int]]:
        """The global sensor points (row, column), sorted."""
        return self._problem.sensors()

    @property
    def dt(self) -> float:
        """The time step."""
        return self._problem.dt()

    def loss_and_gradient(self, kappa: _ArrayLike) -> tuple[float, _NDArray[_np.float64]]:
        """The global loss and this rank's gradient at kappa. Collective."""
        return _cast("tuple[float, _NDArray[_np.float64]]",
                     self._problem.loss_and_gradient(kappa))

    def loss(self, kappa: _ArrayLike) -> float:
        """The global loss at kappa (a forward run). Collective."""
        return self._problem.loss(kappa)

    def terms(self, kappa: _ArrayLike) -> dict[str, float]:
        """The loss's parts at kappa: ``{"misfit", "tikhonov",
        "smoothness"}``. Collective."""
        return self._problem.terms(kappa)

    def relative_kappa_error(self, kappa: _ArrayLike) -> float:
        """|kappa - kappa_true| / |kappa_true| (L2, whole grid). Collective."""
        return self._problem.relative_kappa_error(kappa)

    def loop_stats(self) -> tuple[dict[str, _Any], dict[str, _Any]]:
        """What the time loop's last forward run and its adjoint's last run
        did: ``(forward, adjoint)``, dicts of the C++ ``LoopStats``."""
        return self._problem.loop_forward_stats(), self._problem.loop_adjoint_stats()

    def problem_description(self) -> str:
        """What the objective depends on, as JSON text (recorded in
        checkpoints)."""
        return self._problem.problem_description()

    def fit(self, kappa: _ArrayLike, **options: object) -> _types.SimpleNamespace:
        """Minimises the loss from ``kappa`` with L-BFGS (L-BFGS-B when
        kappa is bounded); ``options`` are ``LbfgsOptions`` fields by their
        C++ names. Returns the summary's fields and ``x`` (the minimiser, one
        array in kappa's shape) as a ``types.SimpleNamespace``. Collective;
        the interpreter is released while it runs."""
        summary = self._problem.fit(kappa, options)
        (summary["x"],) = summary["x"]  # the one variable, kappa
        return _types.SimpleNamespace(**summary)


def five_point_matrix(nx: int, ny: int, px: int, py: int,
                      rank: int) -> _adgraph.SparseMatrix:
    """The 5-point pattern of this rank's patch on the heat problem's grid
    (``nx x ny`` points, ``px x py`` patches, rows numbered patch by patch)
    as an ``adgraph.sparse.SparseMatrix``."""
    return _adgraph._five_point_matrix(nx, ny, px, py, rank)


def conservative_values(kappa: _adgraph.Value, nx: int, ny: int, px: int, py: int,
                        rank: int) -> _adgraph.Value:
    """The conservative operator's entries, (A u)_P = sum_Q c_PQ (u_P -
    u_Q) / h^2 with c_PQ = (kappa_P + kappa_Q) / 2 (kappa_P across the
    boundary), as a function of this rank's ``kappa`` patch (one
    data_exchange; every rank calls it)."""
    return _adgraph._conservative_values(kappa, nx, ny, px, py, rank)


def heat_matrix_values(kappa: _adgraph.Value, s: float, nx: int, ny: int, px: int, py: int,
                       rank: int) -> _adgraph.Value:
    """The entries of I + s diag(kappa) Laplacian_h (s = -dt: backward
    Euler's matrix)."""
    return _adgraph._heat_matrix_values(kappa, s, nx, ny, px, py, rank)
