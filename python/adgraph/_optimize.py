"""L-BFGS / L-BFGS-B on a graph, and a bridge to ``scipy.optimize``."""

import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _adgraph
from ._adgraph import Value
from ._errors import OptionsError

# Feeds: {placeholder or its name: array}.
_Feeds = Mapping[Value, ArrayLike] | Mapping[str, ArrayLike] | None
# Bounds: {"lower": ..., "upper": ...} or one (lower, upper) pair a variable.
_Bounds = Mapping[str, ArrayLike | None] | Sequence[tuple[ArrayLike, ArrayLike]] | None


def minimize(loss: Value, variables: Value | Sequence[Value],
             initial_values: Sequence[ArrayLike], bounds: _Bounds = None,
             layout: Literal["replicated", "sharded"] = "replicated", feeds: _Feeds = None,
             **options: object) -> types.SimpleNamespace:
    """Minimises the one-element Value ``loss`` over the placeholders
    ``variables`` with L-BFGS, or L-BFGS-B when ``bounds`` is given.

    Parameters
    ----------
    loss : Value
        One element. With communication nodes, every rank calls this in
        lockstep.
    variables : list of Value
        Placeholders.
    initial_values : list of array_like
        One start value per variable, of its shape.
    bounds : dict or list, optional
        ``{"lower": [...], "upper": [...]}`` (either side may be left out)
        or a list of ``(lower, upper)`` pairs, one per variable; each bound a
        number or an array of the variable's shape (``±inf`` leaves it open).
    layout : {"replicated", "sharded"}
        Replicated: every rank holds the whole x and rank 0's loss and
        gradient are used (build the loss with ``mpi_sum`` onto rank 0 and
        enter x through ``mpi_bcast``). Sharded: each rank holds its slice;
        f is summed over ranks.
    feeds : dict, optional
        Values of the other placeholders the loss needs.
    **options
        ``LbfgsOptions`` fields by their C++ names: ``history`` (m, default
        10), ``tolerance_gradient`` (1e-8), ``tolerance_function`` (0),
        ``max_iterations`` (1000), ``max_evaluations`` (100000), ``trace``
        (False), ``checkpoint_every``, ``checkpoint_path``, ``resume``,
        ``checkpoint_problem``; ``line_search``, a dict of
        ``LineSearchOptions`` fields (``c1`` 1e-4, ``c2`` 0.9, ``max_step``
        1e20, ``max_evaluations`` 20, ``approximate_wolfe_epsilon`` 1e-12),
        L-BFGS's search; ``line_search_bounded``, a dict of
        ``MoreThuenteOptions`` fields (``ftol`` 1e-3, ``gtol`` 0.9, ``xtol``
        0.1, ``max_evaluations`` 20), L-BFGS-B's. Each is read through its
        struct's field table: an unknown name or a value out of range raises
        ``OptionsError`` naming it (``line_search.c1: must be in (0, 1),
        got 2``).

    Returns
    -------
    types.SimpleNamespace
        The C++ summary's fields (``termination``, ``message``,
        ``iterations``, ``evaluations``, ``initial_f``, ``final_f``,
        ``gradient_norm``, ``active_bounds``, ``seconds``, ``f_history``,
        ``gradient_norm_history``, ``resumed_at``) and ``x``, the minimiser
        (one array per variable).
    """
    variables = _checked_variables("minimize", variables)
    lower = upper = None
    bounded = bounds is not None
    if bounds is not None:
        lower, upper = _bound_sides(bounds, variables)
    summary = _adgraph._minimize(loss, variables, list(initial_values), lower, upper,
                                 bounded, layout, feeds, options)
    return types.SimpleNamespace(**summary)


def _checked_variables(function: str, variables: Value | Sequence[Value]) -> list[Value]:
    """``variables`` as a list of Values, at least one."""
    if isinstance(variables, _adgraph.Value):
        variables = [variables]
    variables = list(variables)
    if not variables:
        raise OptionsError(f"variables: {function}: no variables to optimise; give "
                           "the placeholders the loss is minimised over")
    for k, v in enumerate(variables):
        if not isinstance(v, _adgraph.Value):
            raise OptionsError(f"variables: {function}: variable {k} is "
                               f"{type(v).__name__} {v!r}; expected a placeholder Value")
    return variables


def _bound_sides(bounds: Mapping[str, ArrayLike | None] | Sequence[tuple[ArrayLike, ArrayLike]],
                 variables: list[Value]
                 ) -> tuple[list[NDArray[np.float64]], list[NDArray[np.float64]]]:
    def side(values: Any, name: str) -> list[NDArray[np.float64]]:
        if values is None:
            return []
        if len(values) != len(variables):
            raise OptionsError(f"bounds: minimize: {len(values)} {name} bounds for "
                               f"{len(variables)} variables; give one per variable "
                               "(a number, or an array of the variable's shape)")
        out = []
        for k, (b, v) in enumerate(zip(values, variables)):
            if b is None:
                b = -np.inf if name == "lower" else np.inf
            try:
                a = np.asarray(b, dtype=np.float64)
            except (TypeError, ValueError):
                raise OptionsError(f"bounds: minimize: the {name} bound of variable {k} "
                                   f"({v.name}) is {b!r}; expected a number or an "
                                   "array of numbers") from None
            if a.shape not in ((), tuple(v.shape)):
                raise OptionsError(f"bounds: minimize: the {name} bound of variable {k} "
                                   f"({v.name}) has shape {a.shape}; expected () or "
                                   f"the variable's shape {tuple(v.shape)}")
            out.append(np.broadcast_to(a, v.shape).copy())
        return out

    if isinstance(bounds, dict):
        unknown = set(bounds) - {"lower", "upper"}
        if unknown:
            raise OptionsError(f"bounds: unknown key {sorted(unknown)[0]!r} "
                               "(expected 'lower' and 'upper')")
        lo, up = bounds.get("lower"), bounds.get("upper")
        if lo is not None and not isinstance(lo, (list, tuple)):
            lo = [lo] * len(variables)
        if up is not None and not isinstance(up, (list, tuple)):
            up = [up] * len(variables)
        return side(lo, "lower"), side(up, "upper")
    pairs = list(bounds)
    if len(pairs) != len(variables):
        raise OptionsError(f"bounds: minimize: {len(pairs)} (lower, upper) pairs for "
                           f"{len(variables)} variables; give one pair per variable")
    for k, p in enumerate(pairs):
        if not isinstance(p, (list, tuple)) or len(p) != 2:
            raise OptionsError(f"bounds: minimize: bound {k} is {p!r}; expected a "
                               "(lower, upper) pair")
    return side([p[0] for p in pairs], "lower"), side([p[1] for p in pairs], "upper")


def scipy_objective(loss: Value, variables: Value | Sequence[Value], feeds: _Feeds = None
                    ) -> Callable[[ArrayLike], tuple[float, NDArray[np.float64]]]:
    """``fun(x) -> (f, g)`` for ``scipy.optimize.minimize(fun, x0, jac=True)``
    on a distributed graph.

    ``x`` is the variables' values flattened and concatenated in order. Every
    rank runs SciPy in lockstep; each evaluation runs the graph on every rank
    and returns rank 0's f and gradient on all of them (replicated variables,
    as ``minimize(layout="replicated")``), so SciPy's iterates are identical
    on every rank. ``fun.size`` is the length of x; ``fun.unflatten(x)``
    splits x into one array per variable.
    """
    variables = _checked_variables("scipy_objective", variables)
    evaluator = _adgraph._Evaluator(loss, variables, feeds)

    def fun(x: ArrayLike) -> tuple[float, NDArray[np.float64]]:
        f, g = evaluator(np.ascontiguousarray(x, dtype=np.float64))
        return f, g

    def unflatten(x: NDArray[np.float64]) -> list[NDArray[np.float64]]:
        out: list[NDArray[np.float64]] = []
        at = 0
        for v in variables:
            n = int(np.prod(v.shape, dtype=np.int64))
            out.append(np.asarray(x[at:at + n], dtype=np.float64).reshape(v.shape))
            at += n
        return out

    fun.size = evaluator.size  # type: ignore[attr-defined]
    fun.unflatten = unflatten  # type: ignore[attr-defined]
    return fun
