// The engine of a build without PETSc: sparse nodes are refused when they
// are built (SparseOperator::check_node), so it is never made.
#include "core/error.h"
#include "sparse/operator_impl.h"

namespace adgraph::sparse {

std::unique_ptr<SparseEngine> make_engine(const CsrPattern&,
                                          int64_t,
                                          const std::vector<Prolongation>&,
                                          CommContext&,
                                          SparseStats&) {
  throw RunError("adgraph was built without PETSc");
}

bool petsc_available() { return false; }

}  // namespace adgraph::sparse
