#include "builtin_ops.h"

#include "core/loops/loop.h"
#include "grid/halo.h"
#include "mpi_ops/collectives.h"
#include "ops/elementwise.h"
#include "solvers/heat_step.h"
#include "sparse/sparse_matrix.h"

namespace adgraph {

void register_all_ops() {
  register_loops_layer();
  register_ops_layer();
  register_mpi_ops_layer();
  sparse::register_sparse_layer();
  grid::register_grid_layer();
  solvers::register_solvers_layer();
}

}  // namespace adgraph
