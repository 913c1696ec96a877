"""docs/SPARSE.md's example in Python: u = A^-1 b for A = tridiag(-1, 2, -1)
(6 x 6, rows split over the ranks), b = 1, L = sum of u over every rank.

    PYTHONPATH=build/python mpirun -n 3 /usr/bin/python3 examples/python/guide_sparse.py

By hand: u_i = (i+1)(6-i)/2 = 3, 5, 6, 6, 5, 3 and L = 28; dL/db = u, so
sum (dL/db)^2 = 140; dL/dA_ij = -u_i u_j, summed over the 16 entries -392
(examples/guides/sparse.cc, the same in C++, prints the same lines).
The test examples/python/guide_sparse compares the output with
tests/guides/sparse.expected.
"""

import numpy as np
from mpi4py import MPI

import adgraph as ag

rank, size = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size
n = 6
first = sum(n // size + (r < n % size) for r in range(rank))
rows = n // size + (rank < n % size)
columns, entries, offsets = [], [], [0]
for i in range(first, first + rows):
    for j in (i - 1, i, i + 1):
        if 0 <= j < n:
            columns.append(j)
            entries.append(2.0 if i == j else -1.0)
    offsets.append(len(columns))

# doc:begin solve
a = ag.sparse.SparseMatrix(first, offsets, columns)  # this rank's rows, CSR
g = ag.Graph()
values = g.placeholder("values", (a.local_entries,))
b = g.placeholder("b", (a.local_rows,))
u = ag.sparse.solve(a, values, b, ksp="cg", pc="jacobi", symmetric=True)
loss = ag.mpi_total(u)  # the sum of u over every rank
dA, db = ag.gradients(loss, [values, b])  # one transpose solve
out = ag.Session(g).run([loss, ag.mpi_total(db * db), ag.mpi_total(dA)],
                        {values: np.array(entries), b: np.ones(rows)})
# doc:end solve

# BoomerAMG without `symmetric`: the adjoint solves with an explicit A^T.
u_amg = ag.sparse.solve(a, values, b, ksp="gmres", pc="hypre")
db_amg = ag.gradient(ag.mpi_total(u_amg), b)
gap = ag.Session(g).run(ag.mpi_total((db_amg - db) * (db_amg - db)),
                        {values: np.array(entries), b: np.ones(rows)})
if rank == 0:
    print(f"L = {out[0]:.10g}")
    print(f"sum (dL/db)^2 = {out[1]:.10g}")
    print(f"sum dL/dA = {out[2]:.10g}")
    print(f"BoomerAMG's dL/db within 1e-8: {'yes' if gap < 1e-16 else 'no'}")
