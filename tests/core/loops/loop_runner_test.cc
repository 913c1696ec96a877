// The forward run of a loop (core/loops/loop_runner.cc): the body once per
// step on the carries, the step index fed, an in-place reader of a carry
// after its other readers.
#include <gtest/gtest.h>

#include "tests/core/loops/pendulum.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

TEST(Loop, ValuesMatchAHandWrittenRecurrence) {
  // x_{t+1} = 0.5·x_t + b, kept at steps 1 and 3 (x_2 and x_4).
  Graph g;
  Value x0 = g.placeholder("x0", {2});
  Value b = g.placeholder("b", {2});
  LoopOptions o;
  o.output_steps = {1, 3};
  LoopResult r = loop(
      5,
      {x0},
      {b},
      [](const LoopArgs& l) {
        Value next = 0.5 * l.carries[0] + l.invariants[0];
        return LoopStep{{next}, {next}};
      },
      o);
  Session s(g);
  auto out = s.run({r.carries[0], r.outputs[0]},
                   {{x0, Tensor({1.0, -2.0})}, {b, Tensor({1.0, 0.0})}});
  // By hand: x = 1, 1.5, 1.75, 1.875, 1.9375, 1.96875 and -2, -1, -0.5, …
  EXPECT_EQ(out[0].to_vector(), (std::vector<double>{1.96875, -2.0 / 32}));
  EXPECT_EQ(out[1].shape(), (Shape{2, 2}));
  EXPECT_EQ(out[1].to_vector(),
            (std::vector<double>{1.75, -0.5, 1.9375, -0.125}));
}

TEST(Loop, AnInPlaceLastReaderOfACarryRunsAfterItsOtherReaders) {
  // c_{t+1} = 3·c_t + (−c_t) = 2·c_t: the carry is read by the product
  // first and by the negation last, which may write over the carry's
  // buffer (OpDef::in_place, the body runner's last-reader rule) only
  // after the product has read it. 10 steps: c = 1024·x, exactly. And the
  // same through the adjoint (whose body reads the carried cotangent
  // twice too): dc/dx = 1024.
  Graph g;
  Value x = g.placeholder("x", {300});
  LoopResult r = loop(10, {x}, {}, [](const LoopArgs& l) {
    Value tripled = l.carries[0] * 3.0;
    Value negated = -l.carries[0];
    return LoopStep{{tripled + negated}, {}};
  });
  Value loss = sum(r.carries[0] * r.carries[0]) * 0.5;
  Value grad = gradient(loss, x);
  Tensor xv(Shape{300});
  for (int64_t i = 0; i < xv.size(); ++i) xv[i] = 0.25 * i - 7.0;
  Session s(g);
  const auto out = s.run({r.carries[0], grad}, {{x, xv}});
  for (int64_t i = 0; i < xv.size(); ++i) {
    EXPECT_EQ(out[0][i], 1024.0 * xv[i]) << i;
    EXPECT_EQ(out[1][i], 1024.0 * 1024.0 * xv[i]) << i;
  }
}

TEST(Loop, StepIndexIsFedToTheBody) {
  // c_{t+1} = c_t + t: after 5 steps c = 0 + 1 + 2 + 3 + 4 = 10.
  Graph g;
  Value c0 = g.constant(Tensor::scalar(0.0));
  LoopResult r = loop(5, {c0}, {}, [](const LoopArgs& l) {
    return LoopStep{{l.carries[0] + l.step}, {}};
  });
  Session s(g);
  EXPECT_EQ(s.run(r.carries[0]).item(), 10.0);
}

}  // namespace
}  // namespace adgraph
