// The derivative rules of loop and loop_adjoint
// (core/loops/loop_derivatives.cc): the adjoint loop against finite
// differences and the unrolled graph, the tangent loops in a Hessian-vector
// product, and second-order reverse mode refused.
#include <gtest/gtest.h>

#include "tests/core/loops/pendulum.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

TEST(Loop, GradientCheckerPassesForEverySchedule) {
  for (auto schedule : {CheckpointSchedule::store_all(),
                        CheckpointSchedule::every(3),
                        CheckpointSchedule::binomial(2)}) {
    Problem p;
    build(p, 9, schedule, {0, 4, 8});
    expect_gradients_ok(p.loss, {p.x0, p.v0, p.a}, feeds_of(p));
  }
}

TEST(Loop, StoreAllAgreesWithTheUnrolledGraph) {
  const std::vector<int64_t> steps = {2, 5, 6};
  Problem loop_p, unrolled;
  build(loop_p, 11, CheckpointSchedule::store_all(), steps);
  build_unrolled(unrolled, 11, steps);
  const auto a = loss_and_gradient(loop_p), b = loss_and_gradient(unrolled);
  for (std::size_t k = 0; k < a.size(); ++k) {
    for (int64_t i = 0; i < a[k].size(); ++i) {
      EXPECT_NEAR(a[k][i],
                  b[k][i],
                  kUnrolledTolerance * std::max(1.0, std::fabs(b[k][i])))
          << "output " << k << " entry " << i;
    }
  }
}

TEST(Loop, HessianVectorProductMatchesTheUnrolledGraph) {
  // jvp(gradient) through the loop: a loop_adjoint's tangent, which
  // recomputes from c_0 without a tape (t(n, s) forward steps).
  for (auto schedule :
       {CheckpointSchedule::store_all(), CheckpointSchedule::binomial(3)}) {
    Problem lp, up;
    build(lp, 10, schedule);
    build_unrolled(up, 10);
    std::vector<Tensor> hv[2];
    Problem* ps[2] = {&lp, &up};
    for (int i = 0; i < 2; ++i) {
      Problem& p = *ps[i];
      Value g = gradient(p.loss, p.a);
      Value dir = p.g.constant(Tensor({0.3, -1.0, 0.5}));
      Value h = jvp(g, p.a, dir);
      Session s(p.g);
      hv[i] = s.run({g, h}, feeds_of(p));
    }
    for (int k = 0; k < 2; ++k) {
      for (int64_t j = 0; j < 3; ++j) {
        EXPECT_NEAR(hv[0][k][j],
                    hv[1][k][j],
                    1e-13 * std::max(1.0, std::fabs(hv[1][k][j])))
            << schedule.describe();
      }
    }
    if (schedule.kind == CheckpointSchedule::Kind::kBinomial) {
      // The tangent adjoint loop is the newest loop_adjoint of lp's graph.
      int newest = -1;
      for (int id = 0; id < lp.g.num_nodes(); ++id) {
        if (lp.g.node(id).op_name() == "loop_adjoint") newest = id;
      }
      EXPECT_EQ(loop_stats(Value(&lp.g, newest)).forward_steps,
                revolve_steps(10, 3));
    }
  }
}

TEST(Loop, SecondOrderReverseModeIsRefusedAtTheAdjointLoop) {
  Problem p;
  build(p, 4, CheckpointSchedule::store_all());
  Value g = gradient(p.loss, p.a);
  try {
    gradient(sum(g), p.a);
    ADD_FAILURE() << "no error";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("(loop_adjoint): gradient: op has "
                                         "no gradient"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace adgraph
