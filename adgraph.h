// Umbrella header: everything a user of adgraph needs.
#pragma once

#include "builtin_ops.h"
#include "core/ad/gradients.h"
#include "core/ad/jvp.h"
#include "core/checker/gradient_checker.h"
#include "core/core_ops.h"
#include "core/error.h"
#include "core/exec/session.h"
#include "core/graph.h"
#include "core/loops/loop.h"
#include "core/op.h"
#include "core/tensor.h"
#include "core/tensor_json.h"
#include "grid/grid.h"
#include "grid/halo.h"
#include "grid/points.h"
#include "grid/stencil.h"
#include "grid/stencil_codegen.h"
#include "mpi_ops/allreduce_programs.h"
#include "mpi_ops/collectives.h"
#include "mpi_ops/communicator.h"
#include "mpi_ops/halo.h"
#include "mpi_ops/nonblocking.h"
#include "mpi_ops/point_to_point.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"
#include "optim/lbfgs.h"
#include "optim/lbfgsb.h"
#include "optim/line_search.h"
#include "optim/minimize.h"
#include "optim/more_thuente.h"
#include "solvers/heat_inverse.h"
#include "solvers/heat_solver.h"
#include "solvers/heat_step.h"
#include "sparse/sparse_matrix.h"

namespace adgraph::detail {
// A program that includes this header may name any op of the library
// (Graph::add_node("neg", …)) before building through its layer: the
// registry completes itself on the first name it does not know.
inline const bool every_op_by_name =
    (OpRegistry::set_completion(&register_all_ops), true);
}  // namespace adgraph::detail
