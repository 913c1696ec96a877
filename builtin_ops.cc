// The library's entry point for ops: every layer registers its families
// here, so core/ never includes a layer above it.
#include "core/loop.h"
#include "core/op.h"
#include "mpi_ops/collectives.h"
#include "mpi_ops/halo.h"
#include "mpi_ops/point_to_point.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"
#include "ops/sources.h"
#include "solvers/heat_step.h"

namespace adgraph {
namespace {

void register_builtin_ops(OpRegistry& registry) {
  register_source_ops(registry);
  register_loop_ops(registry);
  register_elementwise_ops(registry);
  register_reduction_ops(registry);
  register_shape_ops(registry);
  register_linalg_ops(registry);
  register_collective_ops(registry);
  register_point_to_point_ops(registry);
  register_halo_ops(registry);
  solvers::register_heat_ops(registry);
}

}  // namespace

OpRegistry& OpRegistry::global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry;
    register_builtin_ops(*r);
    return r;
  }();
  return *registry;
}

}  // namespace adgraph
