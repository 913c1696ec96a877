// The stencil kernel inside time loops: a 2-D wave step and a 3-D 7-point
// diffusion step give bitwise the same loss and gradient on every process
// grid, under every checkpoint schedule, whatever order the graph's nodes
// and the expression's parts were created in; and the gradient agrees with
// finite differences.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grid/stencil.h"
#include "tests/grid/grid_test_util.h"

namespace adgraph::grid {
namespace {

using namespace adgraph::testing;

struct Result {
  double loss = 0.0;
  Tensor gradient;  // gathered on rank 0
};

std::vector<CheckpointSchedule> schedules() {
  return {CheckpointSchedule::store_all(),
          CheckpointSchedule::every(3),
          CheckpointSchedule::binomial(2)};
}

// The Laplacian (neighbours summed axis by axis, low side first, then
// −2·ndim·u), its shifted reads created in the order `order` (a
// permutation of the 2·ndim neighbours): the same formula whatever order
// its parts were made in.
StencilExpr laplacian(const StencilExpr& u,
                      int ndim,
                      const std::vector<int>& order) {
  std::vector<StencilExpr> terms(2 * ndim, StencilExpr(0.0));
  for (int k : order) {
    Offset o(ndim, 0);
    o[k / 2] = k % 2 == 0 ? -1 : 1;
    terms[k] = u.shift(o);
  }
  StencilExpr sum = terms[0];
  for (int k = 1; k < 2 * ndim; ++k) sum = sum + terms[k];
  return sum - 2.0 * ndim * u;
}

// ½Σ(u_T − d)² summed over the grid's ranks exactly, and its gradient
// with respect to the placeholder x fed `value` (gathered on rank 0).
Result misfit_and_gradient(
    const Grid& grid, Value u_final, Value d, Value x, const Tensor& value) {
  Graph& g = x.graph();
  Value misfit = u_final - d, loss;
  {
    CommScope scope(g, grid.comm());
    loss = 0.5 * mpi_total(misfit * misfit);
  }
  Value grad = gradient(loss, x);
  Session s(g);
  auto out = s.run({loss, grad}, {{x, value}});
  return {out[0][0], grid.gather(out[1], 0)};
}

// Leapfrog: u⁺ = 2u − u⁻ + c²·lap(u) + a source at one point of a batch of
// two shots; loss ½Σ(u_T − d)² over both shots; gradient wrt c².
Result wave_loop(const Grid& grid,
                 int steps,
                 const CheckpointSchedule& schedule,
                 const std::vector<int>& order) {
  const Shape shape = grid.shape();
  const auto& procs = grid.layout().procs;
  const int rank = grid.rank();
  Shape batched = grid.local_shape(), global_batched = shape;
  batched.insert(batched.begin(), 2);
  global_batched.insert(global_batched.begin(), 2);
  Graph g;
  // The graph's nodes made in another order when the terms are shuffled.
  Value c2, u0, d, zero;
  const auto make_data = [&] {
    u0 = g.constant(
        patch_of(global_field(global_batched, 21), shape, procs, rank));
    d = g.constant(
        patch_of(global_field(global_batched, 22), shape, procs, rank));
  };
  if (order[0] == 0) {
    c2 = g.placeholder("c2", grid.local_shape());
    make_data();
    zero = g.constant(Tensor::zeros(batched));
  } else {
    zero = g.constant(Tensor::zeros(batched));
    make_data();
    c2 = g.placeholder("c2", grid.local_shape());
  }
  LoopOptions options;
  options.checkpoints = schedule;
  LoopResult r = loop(
      steps,
      {u0, zero},
      {c2},
      [&](const LoopArgs& a) {
        StencilExpr U = field(a.carries[0]), Um = field(a.carries[1]),
                    C = field(a.invariants[0]);
        Value next = stencil(grid, 2.0 * U - Um + C * laplacian(U, 2, order));
        return LoopStep{{next, a.carries[0]}, {}};
      },
      options);
  return misfit_and_gradient(
      grid,
      r.carries[0],
      d,
      c2,
      patch_of(global_field(shape, 23, 0.05, 0.2), shape, procs, rank));
}

// u⁺ = u + dt·κ·lap(u) in 3-D, periodic on axis 2; gradient wrt κ.
Result diffusion_loop(const Grid& grid,
                      int steps,
                      const CheckpointSchedule& schedule,
                      const std::vector<int>& order) {
  const Shape shape = grid.shape();
  const auto& procs = grid.layout().procs;
  const int rank = grid.rank();
  Graph g;
  Value kappa = g.placeholder("kappa", grid.local_shape());
  Value u0 = g.constant(patch_of(global_field(shape, 24), shape, procs, rank));
  Value d = g.constant(patch_of(global_field(shape, 25), shape, procs, rank));
  Value dt = g.scalar(0.05);
  LoopOptions options;
  options.checkpoints = schedule;
  LoopResult r = loop(
      steps,
      {u0},
      {kappa, dt},
      [&](const LoopArgs& a) {
        StencilExpr U = field(a.carries[0]);
        Value next =
            stencil(grid,
                    U + field(a.invariants[1]) * field(a.invariants[0]) *
                            laplacian(U, 3, order));
        return LoopStep{{next}, {}};
      },
      options);
  return misfit_and_gradient(
      grid,
      r.carries[0],
      d,
      kappa,
      patch_of(global_field(shape, 26, 0.5, 1.0), shape, procs, rank));
}

template <class Run>
void expect_bitwise_everywhere(const Shape& shape,
                               const std::vector<bool>& periodic,
                               int neighbours,
                               Run run) {
  auto world = Communicator::world();
  std::vector<int> natural(neighbours), shuffled(neighbours);
  for (int k = 0; k < neighbours; ++k) {
    natural[k] = k;
    shuffled[k] = neighbours - 1 - k;
  }
  const Grid alone(
      shape, std::vector<int>(shape.size(), 1), periodic, Communicator::self());
  const Result one = run(alone, CheckpointSchedule::store_all(), natural);
  for (const std::vector<int>& procs : process_grids(world->size(), shape)) {
    const Grid grid(shape, procs, periodic, world);
    for (const CheckpointSchedule& schedule : schedules()) {
      for (const auto& order : {natural, shuffled}) {
        const Result many = run(grid, schedule, order);
        if (world->rank() != 0) continue;
        SCOPED_TRACE("procs " + std::to_string(procs[0]) + "x" +
                     std::to_string(procs[1]) + ", schedule " +
                     schedule.describe() +
                     (order == natural ? "" : ", made in another order"));
        EXPECT_EQ(many.loss, one.loss);
        EXPECT_EQ(many.gradient.to_vector(), one.gradient.to_vector());
      }
    }
  }
}

TEST(StencilKernel, WaveLoopIsBitwiseOnEveryGridScheduleAndTermOrder) {
  expect_bitwise_everywhere(
      {11, 9},
      {false, false},
      4,
      [](const Grid& g,
         const CheckpointSchedule& s,
         const std::vector<int>& o) { return wave_loop(g, 7, s, o); });
}

TEST(StencilKernel, DiffusionLoop3dIsBitwiseOnEveryGridScheduleAndTermOrder) {
  expect_bitwise_everywhere(
      {5, 6, 4},
      {false, false, true},
      6,
      [](const Grid& g,
         const CheckpointSchedule& s,
         const std::vector<int>& o) { return diffusion_loop(g, 4, s, o); });
}

TEST(StencilKernel, WaveLoopGradientPassesTheGradientChecker) {
  auto world = Communicator::world();
  const Shape shape = {8, 7};
  const std::vector<int> procs = process_grids(world->size(), shape).back();
  Grid grid(shape, procs, {}, world);
  Graph g;
  Value c2 = g.placeholder("c2", grid.local_shape());
  Value u0 =
      g.constant(patch_of(global_field(shape, 27), shape, procs, grid.rank()));
  LoopOptions options;
  options.checkpoints = CheckpointSchedule::binomial(2);
  LoopResult r = loop(
      6,
      {u0, g.constant(Tensor::zeros(grid.local_shape()))},
      {c2},
      [&](const LoopArgs& a) {
        StencilExpr U = field(a.carries[0]);
        Value next =
            stencil(grid,
                    2.0 * U - field(a.carries[1]) +
                        field(a.invariants[0]) * laplacian(U, 2, {0, 1, 2, 3}));
        return LoopStep{{next, a.carries[0]}, {}};
      },
      options);
  Value loss =
      sum(r.carries[0] * g.constant(random_tensor(grid.local_shape(), 28)));
  expect_gradients_ok(
      loss,
      {c2},
      {{c2,
        patch_of(
            global_field(shape, 29, 0.05, 0.2), shape, procs, grid.rank())}});
}

// The gradient's stencil node prefetches the rows of a loop carry (a
// placeholder named carry[k], as in a loop's adjoint body: a state fed
// from the tape) and of nothing else; a bad "prefetch" attribute is
// refused naming it.
TEST(StencilKernel, AdjointPrefetchesTheLoopCarryOnly) {
  auto world = Communicator::world();
  const Shape shape = {8, 7};
  const std::vector<int> procs = process_grids(world->size(), shape).back();
  Grid grid(shape, procs, {}, world);
  Graph g;
  Value u = g.placeholder("carry[0]", grid.local_shape());
  Value kappa = g.placeholder("kappa", grid.local_shape());
  const StencilExpr U = field(u);
  Value y = stencil(grid, U + field(kappa) * laplacian(U, 2, {0, 1, 2, 3}));
  Value loss = sum(y * y);
  const std::vector<Value> grads = gradients(loss, {u, kappa});
  int stencils = 0, prefetching = 0;
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (n.op_name() != "stencil") continue;
    ++stencils;
    const std::vector<int64_t> which =
        n.attrs.value("prefetch", std::vector<int64_t>{});
    if (which.empty()) continue;
    ++prefetching;
    ASSERT_EQ(which.size(), 1u);
    EXPECT_EQ(n.inputs[which[0]].node().name, "carry[0]");
  }
  EXPECT_EQ(stencils, 2);  // the step and its adjoint
  EXPECT_EQ(prefetching, 1);

  nlohmann::json attrs = y.node().attrs;
  NodeOptions options;
  options.comm = grid.comm();
  for (const std::vector<int64_t>& bad :
       {std::vector<int64_t>{2}, std::vector<int64_t>{-1}}) {
    attrs["prefetch"] = bad;
    try {
      g.add_node("stencil", {u, kappa}, attrs, options);
      ADD_FAILURE() << "prefetch " << bad[0] << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("attribute \"prefetch\""),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace adgraph::grid
