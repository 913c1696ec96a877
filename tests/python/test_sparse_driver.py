"""The driver's sparse nodes (examples/graphs/poisson_small.json, a "stencil"
on five_point_values and sparse_solve) against SciPy: the document is
rewritten for this run's ranks (P x 1 patches of a 12 x 8 grid) and its
solution and kappa-gradient compared with a sparse LU solve of the same
matrix and a hand-written adjoint."""

import json
import pathlib

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.linalg
from mpi4py import MPI

import adgraph as ag

GRAPHS = pathlib.Path(__file__).resolve().parents[2] / "examples" / "graphs"
NX, NY = 12, 8


def document(px):
    doc = json.loads((GRAPHS / "poisson_small.json").read_text())
    h = 1.0 / (NX + 1)
    n = NX // px
    for node in doc["nodes"]:
        if "stencil" in node:
            node["stencil"] = {"nx": NX, "ny": NY, "px": px, "py": 1}
        if node.get("shape") == [4, 4]:
            node["shape"] = [n, NY]
        if node["name"] == "f":
            node["attrs"]["shape"] = [n, NY]
        if node["name"] == "four_over_h2":
            node["attrs"]["value"] = 4 / h**2
        if node["name"] == "minus_one_over_h2":
            node["attrs"]["value"] = -1 / h**2
    doc["feeds"]["kappa"]["shape"] = [n, NY]
    return json.dumps(doc)


def laplacian():
    h = 1.0 / (NX + 1)

    def second_difference(k):
        return scipy.sparse.diags([1, -2, 1], [-1, 0, 1], shape=(k, k))

    return (scipy.sparse.kron(second_difference(NX), scipy.sparse.eye(NY)) +
            scipy.sparse.kron(scipy.sparse.eye(NX), second_difference(NY))) / h**2


@pytest.mark.skipif(not ag.petsc_available(), reason="built without PETSc")
def test_the_poisson_document_solves_and_differentiates_like_scipy():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if NX % size:
        pytest.skip("12 rows do not split over %d ranks" % size)
    d = ag.load_json(document(size), "poisson_small.json")
    session = ag.Session(d.graph)
    total, u, grad = session.run(d.fetch_values, d.feeds)

    kappa = np.full(NX * NY, 2.0)
    a = (scipy.sparse.diags(kappa) @ -laplacian()).tocsc()
    u_whole = scipy.sparse.linalg.spsolve(a, np.ones(NX * NY))
    # J = sum over ranks of sum(u): lambda = A^-T 1, dJ/dkappa_P =
    # -lambda_P ((-Laplacian) u)_P.
    lam = scipy.sparse.linalg.spsolve(a.T.tocsc(), np.ones(NX * NY))
    grad_whole = -lam * (-laplacian() @ u_whole)

    n = NX // size
    rows = slice(rank * n * NY, (rank + 1) * n * NY)
    np.testing.assert_allclose(u.ravel(), u_whole[rows], rtol=1e-9)
    np.testing.assert_allclose(grad.ravel(), grad_whole[rows], rtol=1e-8)
    assert comm.allreduce(float(total)) == pytest.approx(u_whole.sum(), rel=1e-10)
