// Each layer registers its own ops (builtin_ops.h, register_*_layer()): a
// node builder registers its layer and the layers below it, and no layer
// above; register_all_ops() registers every layer, once, from any number of
// threads. The steps run in order in one test, as the registry is one per
// process.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "builtin_ops.h"
#include "core/graph.h"
#include "core/op.h"
#include "ops/elementwise.h"

namespace adgraph {
namespace {

bool registered(const char* name) {
  return OpRegistry::global().find(name) != nullptr;
}

TEST(Registration, EachLayerRegistersItselfAndRegisterAllOpsRegistersAll) {
  // Only the core's ops before any layer's builder runs.
  EXPECT_TRUE(registered("identity"));
  for (const char* op : {"loop",
                         "exp",
                         "sum",
                         "mpi_allreduce",
                         "grid_halo",
                         "sparse_solve",
                         "heat_step"})
    EXPECT_FALSE(registered(op)) << op;

  // An ops-layer builder registers the ops layer (all four families) and the
  // loops below it, nothing above.
  Graph g;
  Value y = exp(g.placeholder("x", {2}));
  EXPECT_EQ(y.node().op_name(), "exp");
  for (const char* op : {"exp", "sum", "reshape", "matmul", "loop"})
    EXPECT_TRUE(registered(op)) << op;
  for (const char* op :
       {"mpi_allreduce", "grid_halo", "sparse_solve", "heat_step"})
    EXPECT_FALSE(registered(op)) << op;
  const std::size_t ops_layer = OpRegistry::global().all().size();

  // Every layer, from four threads at once, and again: each op once.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(register_all_ops);
  for (std::thread& t : threads) t.join();
  for (const char* op : {"mpi_allreduce",
                         "mpi_isend",
                         "mpi_total",
                         "data_exchange",
                         "grid_halo",
                         "grid_corners",
                         "stencil",
                         "sparse_solve",
                         "heat_step",
                         "five_point_values",
                         "smoothness_terms"})
    EXPECT_TRUE(registered(op)) << op;
  const std::size_t all = OpRegistry::global().all().size();
  EXPECT_GT(all, ops_layer);
  register_all_ops();
  EXPECT_EQ(OpRegistry::global().all().size(), all);
}

}  // namespace
}  // namespace adgraph
