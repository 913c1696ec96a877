// PETSc's start and end, error checks and the helper objects the engine
// builds (internal to sparse/; petsc_support.cc). Only sparse/ includes it.
#pragma once

#include <petscksp.h>

#include <vector>

#include "sparse/sparse_matrix.h"

namespace adgraph::sparse::petsc {

// Throws RunError naming `call` with PETSc's message unless `code` is 0.
void check(PetscErrorCode code, const char* call);
// Starts PETSc on this process alone (PETSC_COMM_WORLD = MPI_COMM_SELF),
// once; it ends at the start of MPI_Finalize.
void start_petsc();
// False once PETSc has ended (objects are then left undestroyed).
bool petsc_alive();
// A sequential vector `*out` and the scatter that fills it with the entries
// `columns` (global indices) of vectors laid out like `like` (collective).
void make_gather(Vec like,
                 const std::vector<PetscInt>& columns,
                 Vec* out,
                 VecScatter* scatter);
// An assembled AIJ matrix of this rank's rows of a prolongation.
Mat prolongation_matrix(MPI_Comm comm, const Prolongation& p);

}  // namespace adgraph::sparse::petsc
