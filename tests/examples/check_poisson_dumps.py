"""Checks poisson_inversion's --dump-solution and --dump-gradient files
against SciPy: the conservative operator built anew on the whole grid,
u = A(kappa_true)^-1 f equal to u_exact, and dL/dkappa at kappa = 1 by
central finite differences of L = sum((u - u_exact)^2).

usage: check_poisson_dumps.py SOLUTION GRADIENT NX NY"""

import sys

import numpy as np
import scipy.sparse
import scipy.sparse.linalg


def operator(kappa, nx, ny, h):
    """(A u)_P = sum_Q c_PQ (u_P - u_Q) / h^2, c_PQ = (k_P + k_Q)/2 inside,
    k_P across the boundary (u = 0 there)."""
    k = kappa.reshape(nx, ny)
    rows, cols, vals = [], [], []
    for i in range(nx):
        for j in range(ny):
            p = i * ny + j
            diag = 0.0
            for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                qi, qj = i + di, j + dj
                if 0 <= qi < nx and 0 <= qj < ny:
                    c = 0.5 * (k[i, j] + k[qi, qj])
                    rows.append(p)
                    cols.append(qi * ny + qj)
                    vals.append(-c / h**2)
                else:
                    c = k[i, j]
                diag += c / h**2
            rows.append(p)
            cols.append(p)
            vals.append(diag)
    return scipy.sparse.csc_matrix((vals, (rows, cols)), shape=(nx * ny, nx * ny))


def main():
    solution_file, gradient_file = sys.argv[1], sys.argv[2]
    nx, ny = int(sys.argv[3]), int(sys.argv[4])
    h = 1.0 / (nx + 1)
    x = (np.arange(nx) + 1) * h
    y = (np.arange(ny) + 1) * h
    xx, yy = np.meshgrid(x, y, indexing="ij")
    u_exact = (xx * (1 - xx) * yy * (1 - yy)).ravel()
    kappa_true = (1 + xx**2 + yy**2).ravel()
    f = operator(kappa_true, nx, ny, h) @ u_exact

    u = np.fromfile(solution_file, dtype=np.float64)
    assert u.size == nx * ny, u.size
    err = np.abs(u - u_exact).max() / np.abs(u_exact).max()
    print("solution: max relative difference from u_exact %.3e" % err)
    assert err < 1e-8

    def loss(kappa):
        v = scipy.sparse.linalg.spsolve(operator(kappa, nx, ny, h), f)
        return np.sum((v - u_exact) ** 2)

    g = np.fromfile(gradient_file, dtype=np.float64)
    assert g.size == nx * ny, g.size
    eps = 1e-6
    fd = np.empty(nx * ny)
    for p in range(nx * ny):
        e = np.zeros(nx * ny)
        e[p] = eps
        fd[p] = (loss(1 + e) - loss(1 - e)) / (2 * eps)
    err = np.abs(g - fd).max() / np.abs(fd).max()
    print("gradient: max relative difference from finite differences %.3e" % err)
    assert err < 1e-5


if __name__ == "__main__":
    main()
