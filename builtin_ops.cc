// The library's entry point for ops: OpRegistry::global() registers the
// core's own ops and then calls this, which asks every layer above the core
// to register its families. core/ never includes a layer above it.
#include "core/loops/loop.h"
#include "core/op.h"
#include "grid/halo.h"
#include "grid/points.h"
#include "grid/stencil.h"
#include "mpi_ops/collectives.h"
#include "mpi_ops/halo.h"
#include "mpi_ops/nonblocking.h"
#include "mpi_ops/point_to_point.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"
#include "solvers/heat_step.h"
#include "solvers/patch_operators.h"
#include "solvers/regularization.h"
#include "sparse/sparse_matrix.h"

namespace adgraph {

void detail::register_library_ops() {
  register_loop_ops();
  register_elementwise_ops();
  register_reduction_ops();
  register_shape_ops();
  register_linalg_ops();
  register_collective_ops();
  register_exact_total_ops();
  register_point_to_point_ops();
  register_halo_ops();
  register_nonblocking_ops();
  sparse::register_sparse_ops();
  grid::register_halo_ops();
  grid::register_point_ops();
  grid::register_stencil_ops();
  solvers::register_heat_ops();
  solvers::register_patch_operator_ops();
  solvers::register_regularization_ops();
}

}  // namespace adgraph
