"""Grids, halos and fused stencil kernels: a PDE time step written as one
expression runs as one node, with its adjoint and tangent generated from the
same expression (the C++ layer grid/; docs/STENCILS.md).

A 2-D wave step on 4 ranks (``mpirun -n 4 python3 wave.py``)::

    import numpy as np
    import adgraph as ag
    from adgraph import grid as agg

    g = ag.Graph()
    grid = agg.Grid((64, 64), procs=(2, 2))        # 2 x 2 patches
    u = g.placeholder("u", grid.local_shape())      # this rank's patch
    um = g.placeholder("um", grid.local_shape())
    c2 = g.placeholder("c2", grid.local_shape())
    U = grid.field(u)
    lap = (U.shift((-1, 0)) + U.shift((1, 0)) + U.shift((0, -1))
           + U.shift((0, 1)) - 4 * U)
    u_next = grid.stencil(2 * U - grid.field(um) + grid.field(c2) * lap)

Reads past a non-periodic edge of the grid give 0; periodic axes wrap. The
loss and gradient of graphs built from stencils are bitwise the same on
every process grid.
"""

from __future__ import annotations

import math as _math
import typing as _typing
from collections.abc import Sequence as _Sequence

from . import _adgraph
from ._adgraph import StencilExpr, kernel_cache_stats
from ._errors import OptionsError

if _typing.TYPE_CHECKING:
    import mpi4py.MPI

__all__ = ["Grid", "StencilExpr", "field", "exp", "log", "sin", "cos", "tanh", "abs",
           "sqrt", "minimum", "maximum", "where", "kernel_cache_stats", "balanced_procs"]


def balanced_procs(size: int, shape: _Sequence[int]) -> tuple[int, ...]:
    """Processes per axis for ``size`` ranks over a grid of ``shape``: the
    factorisation whose patches are closest to cubes (each count at most its
    axis's extent).

    Parameters
    ----------
    size : int
        Number of ranks (>= 1).
    shape : sequence of int
        Global extents, 1 to 3 axes.

    Returns
    -------
    tuple of int
        ``procs`` with ``prod(procs) == size``.
    """
    extents = [int(n) for n in shape]
    best: tuple[int, ...] | None = None
    best_cost = _math.inf

    def place(axis: int, left: int, procs: list[int]) -> None:
        nonlocal best, best_cost
        if axis == len(extents) - 1:
            if left <= extents[axis]:
                cand = procs + [left]
                cost = max(extents[a] / cand[a] for a in range(len(extents))) / \
                    min(extents[a] / cand[a] for a in range(len(extents)))
                if cost < best_cost:
                    best, best_cost = tuple(cand), cost
            return
        for k in range(1, left + 1):
            if left % k == 0 and k <= extents[axis]:
                place(axis + 1, left // k, procs + [k])

    place(0, int(size), [])
    if best is None:
        raise ValueError(f"balanced_procs: {size} ranks do not fit a grid of shape "
                         f"{tuple(extents)}")
    return best


def _integers(values: object, what: str) -> list[int]:
    """``values`` as a list of ints; an OptionsError naming ``what`` for
    anything else (8.7, "8", True: never truncated or coerced)."""
    items = list(values) if hasattr(values, "__iter__") and not isinstance(values, (str, bytes)) \
        else None
    if items is None or not all(hasattr(v, "__index__") and not isinstance(v, bool)
                                for v in items):
        raise OptionsError(f"Grid: {what}: expected a sequence of ints (one per axis), "
                           f"got {values!r}")
    return [v.__index__() for v in items]


class Grid(_adgraph.Grid):
    """A 1-, 2- or 3-D global grid split into patches over a process grid.

    Parameters
    ----------
    shape : sequence of int
        Global extents (points) per axis, 1 to 3 axes.
    procs : sequence of int, optional
        Processes per axis; their product is the communicator's size.
        Default: ``balanced_procs(size, shape)``. Patches may be uneven: the
        first ``shape[a] % procs[a]`` processes of an axis get one point more.
    periodic : sequence of bool, optional
        Periodic axes (default: none).
    comm : adgraph.Communicator or mpi4py.MPI.Intracomm, optional
        The ranks of the grid (default: the world). Rank r has process
        coordinates ``numpy.unravel_index(r, procs)``.

    A field on the grid is an array of shape ``(*batch, *local_shape())`` on
    every rank: leading batch axes (shots, components) ride along.
    """

    def __init__(self, shape: _Sequence[int], procs: _Sequence[int] | None = None,
                 periodic: _Sequence[bool] | None = None,
                 comm: _adgraph.Communicator | mpi4py.MPI.Intracomm | None = None) -> None:
        if not isinstance(comm, _adgraph.Communicator):
            comm = _adgraph.communicator(comm)
        extents = _integers(shape, "shape")
        if procs is None:
            try:
                procs = balanced_procs(comm.size, extents)
            except ValueError as e:
                raise OptionsError(f"Grid: procs: {e} (give procs=)") from None
        if periodic is None:
            periodic = [False] * len(extents)
        flags = list(periodic) if hasattr(periodic, "__iter__") and \
            not isinstance(periodic, (str, bytes)) else None
        if flags is None or not all(isinstance(p, bool) or type(p).__name__ == "bool_"
                                    for p in flags):
            raise OptionsError(f"Grid: periodic: expected a sequence of bools (one per axis), "
                               f"got {periodic!r}")
        super().__init__(extents, _integers(procs, "procs"), [bool(p) for p in flags], comm)

    def field(self, value: _adgraph.Value) -> StencilExpr:
        """``value`` (a Value of shape ``(*batch, *local_shape())``, or a
        scalar of shape ``()``) as a stencil expression read at offset 0, a
        field of this grid: combining it with another grid's fields, or
        giving it to another grid's ``stencil``, raises an OptionsError."""
        return _adgraph.stencil_field(value, self)

    def __repr__(self) -> str:
        return (f"Grid(shape={tuple(self.shape)}, procs={tuple(self.procs)}, "
                f"periodic={tuple(self.periodic)})")


def field(value: _adgraph.Value) -> StencilExpr:
    """``value`` as a stencil expression read at offset 0 (a field or scalar)."""
    return _adgraph.stencil_field(value)


exp = _adgraph.stencil_exp
log = _adgraph.stencil_log
sin = _adgraph.stencil_sin
cos = _adgraph.stencil_cos
tanh = _adgraph.stencil_tanh
abs = _adgraph.stencil_abs  # noqa: A001  (the stencil function, not builtins.abs)
sqrt = _adgraph.stencil_sqrt
minimum = _adgraph.stencil_minimum
maximum = _adgraph.stencil_maximum
where = _adgraph.stencil_where


def _values_give_way_to_expressions() -> None:
    """``u + U`` with u a Value and U a StencilExpr: Value's operators return
    NotImplemented for an expression, so Python asks the expression's
    reflected operator, which builds the expression (as ``U + u`` does)."""
    names = ["__add__", "__sub__", "__mul__", "__truediv__", "__pow__",
             "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"]
    for name in names:
        original = getattr(_adgraph.Value, name, None)
        if original is None or getattr(original, "_gives_way", False):
            continue

        def operator(self: _adgraph.Value, other: object,
                     _original: _typing.Any = original) -> _typing.Any:
            if isinstance(other, StencilExpr):
                return NotImplemented
            return _original(self, other)

        operator._gives_way = True  # type: ignore[attr-defined]
        operator.__name__ = name
        operator.__doc__ = getattr(original, "__doc__", None)
        setattr(_adgraph.Value, name, operator)


_values_give_way_to_expressions()
