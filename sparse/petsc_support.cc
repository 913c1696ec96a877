// PETSc's start and end, error checks, gathers and prolongations for the
// engine (sparse/petsc_impl.h).
#include <petscksp.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "mpi_ops/mpi_environment.h"
#include "sparse/petsc_impl.h"

namespace adgraph::sparse::petsc {
namespace {

bool petsc_ended = false;

void end_petsc() {
  if (petsc_ended) return;
  petsc_ended = true;
  PetscFinalize();
}

}  // namespace

void check(PetscErrorCode code, const char* call) {
  if (code == 0) return;
  const char* text = nullptr;
  PetscErrorMessage(code, &text, nullptr);
  throw RunError(std::string("PETSc's ") + call +
                 " failed: " + (text ? text : "error " + std::to_string(code)));
}

void start_petsc() {
  PetscBool started = PETSC_FALSE;
  PetscInitialized(&started);
  if (started) return;
  PETSC_COMM_WORLD = MPI_COMM_SELF;
  static char arg0[] = "adgraph", arg1[] = "-no_signal_handler";
  static char* args[] = {arg0, arg1, nullptr};
  static int argc = 2;
  static char** argv = args;
  check(PetscInitialize(&argc, &argv, nullptr, nullptr), "PetscInitialize");
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  at_mpi_finalize(end_petsc);
}

bool petsc_alive() { return !petsc_ended; }

void make_gather(Vec like,
                 const std::vector<PetscInt>& columns,
                 Vec* out,
                 VecScatter* scatter) {
  const auto n = static_cast<PetscInt>(columns.size());
  IS is = nullptr;
  check(ISCreateGeneral(
            PETSC_COMM_SELF, n, columns.data(), PETSC_COPY_VALUES, &is),
        "ISCreateGeneral");
  check(VecCreateSeq(PETSC_COMM_SELF, n, out), "VecCreateSeq");
  const PetscErrorCode made =
      VecScatterCreate(like, is, *out, nullptr, scatter);
  ISDestroy(&is);
  check(made, "VecScatterCreate");
}

Mat prolongation_matrix(MPI_Comm comm, const Prolongation& p) {
  std::vector<PetscInt> offsets(p.pattern.row_offsets.begin(),
                                p.pattern.row_offsets.end());
  std::vector<PetscInt> columns(p.pattern.columns.begin(),
                                p.pattern.columns.end());
  Mat m = nullptr;
  check(MatCreate(comm, &m), "MatCreate");
  check(MatSetSizes(m,
                    static_cast<PetscInt>(p.pattern.local_rows()),
                    static_cast<PetscInt>(p.coarse_rows),
                    PETSC_DETERMINE,
                    PETSC_DETERMINE),
        "MatSetSizes");
  check(MatSetType(m, MATAIJ), "MatSetType");
  check(MatSeqAIJSetPreallocationCSR(
            m, offsets.data(), columns.data(), p.values.data()),
        "MatSeqAIJSetPreallocationCSR");
  check(MatMPIAIJSetPreallocationCSR(
            m, offsets.data(), columns.data(), p.values.data()),
        "MatMPIAIJSetPreallocationCSR");
  return m;
}

}  // namespace adgraph::sparse::petsc
