"""Distributed sparse matrices as graph nodes, on PETSc (C++
``sparse/sparse_matrix.h``).

Each rank gives its rows of a square matrix in CSR form::

    a = adgraph.sparse.SparseMatrix(first_row, row_offsets, columns)
    x = adgraph.sparse.solve(a, values, b, ksp="cg", pc="gamg", symmetric=True)

``values`` (the matrix's entries on this rank, in CSR order) and ``b``
(this rank's rows) are values or arrays; gradients reach the values, so
whatever assembled them is differentiated too. Every node of a matrix is a
communication node and every rank builds it; the pattern is checked on
every rank when the first node is built (``adgraph.ShapeError``, the same
on every rank). A solve that does not converge, or NaN/Inf on any rank,
raises the same ``adgraph.RunError`` on every rank. Solver options are the
C++ ``SolverOptions`` fields: ``ksp`` (cg, gmres, bcgs, preonly), ``pc``
(none, jacobi, bjacobi, ilu, gamg, hypre, lu), ``rtol`` (1e-10), ``atol``,
``max_it``, ``symmetric``, ``prefix``.
"""

from __future__ import annotations

from numpy.typing import ArrayLike as _ArrayLike

from . import _adgraph

SparseMatrix = _adgraph.SparseMatrix


def matvec(a: _adgraph.SparseMatrix, values: _adgraph.Value | _ArrayLike,
           x: _adgraph.Value | _ArrayLike) -> _adgraph.Value:
    """A x."""
    return _adgraph._sparse_op(a, "matvec", values, x, {})


def matvec_transpose(a: _adgraph.SparseMatrix, values: _adgraph.Value | _ArrayLike,
                     y: _adgraph.Value | _ArrayLike) -> _adgraph.Value:
    """A^T y."""
    return _adgraph._sparse_op(a, "matvec_transpose", values, y, {})


def outer(a: _adgraph.SparseMatrix, u: _adgraph.Value | _ArrayLike,
          v: _adgraph.Value | _ArrayLike) -> _adgraph.Value:
    """u_i v_j for each entry (i, j) of the pattern (v from every rank)."""
    return _adgraph._sparse_op(a, "outer", u, v, {})


def solve(a: _adgraph.SparseMatrix, values: _adgraph.Value | _ArrayLike,
          b: _adgraph.Value | _ArrayLike, **options: str | float) -> _adgraph.Value:
    """A^-1 b from a zero guess."""
    return _adgraph._sparse_op(a, "solve", values, b, options)


def solve_transpose(a: _adgraph.SparseMatrix, values: _adgraph.Value | _ArrayLike,
                    b: _adgraph.Value | _ArrayLike, **options: str | float) -> _adgraph.Value:
    """A^-T b from a zero guess."""
    return _adgraph._sparse_op(a, "solve_transpose", values, b, options)
