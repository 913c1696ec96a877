#include "core/exec/session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "core/ad/gradients.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/loops/loop.h"
#include "core/op.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"

namespace adgraph {
namespace {

TEST(Session, ConcurrentAndSequentialExecutionAgree) {
  Graph g;
  Value x = g.placeholder("x", {64});
  std::vector<Value> branches;
  for (int i = 0; i < 16; ++i) {
    Value b = x;
    for (int k = 0; k < 10; ++k) b = tanh(b * (1.0 + 0.1 * i)) + sin(b);
    branches.push_back(sum(b));
  }
  Value total = branches[0];
  for (std::size_t i = 1; i < branches.size(); ++i) total = total + branches[i];
  Value grad = gradient(total, x);
  Tensor xv(Shape{64});
  for (int i = 0; i < 64; ++i) xv[i] = 0.01 * i - 0.3;
  Session seq(g);
  Session par(g, {.concurrent = true, .num_threads = 4});
  auto a = seq.run({total, grad}, {{x, xv}});
  auto b = par.run({total, grad}, {{x, xv}});
  EXPECT_EQ(a[0].item(), b[0].item());
  EXPECT_TRUE((a[1].array() == b[1].array()).all());
}

std::atomic<int> g_binds{0};

// y = factor · x, through OpDef::bind (counting the binds) only.
void register_bound_op() {
  if (OpRegistry::global().find("test_bound")) return;
  OpDef def;
  def.name = "test_bound";
  def.inputs = {"x"};
  def.attrs = {{"factor", AttrType::kFloat, nlohmann::json(), "scale"}};
  def.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
  def.bind = [](const Node& n) {
    ++g_binds;
    const double factor = n.attr_float("factor");
    return ComputeFn([factor](KernelContext& c) {
      c.output(0).array() = factor * c.input(0).array();
    });
  };
  register_op(def);
}

TEST(Session, BoundKernelsAreMadeOncePerPlanNotPerRun) {
  register_bound_op();
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = g.add_node("test_bound", {x}, {{"factor", 2.5}});
  Value z = g.add_node("test_bound", {y}, {{"factor", -4.0}});
  Session s(g);
  g_binds = 0;
  for (int run = 0; run < 3; ++run) {
    auto out = s.run({y, z}, {{x, Tensor({1.0, -2.0})}});
    // By hand: 2.5·(1, −2) = (2.5, −5); −4·(2.5, −5) = (−10, 20).
    EXPECT_EQ(out[0].to_vector(), (std::vector<double>{2.5, -5.0}));
    EXPECT_EQ(out[1].to_vector(), (std::vector<double>{-10.0, 20.0}));
  }
  EXPECT_EQ(g_binds, 2);  // one per node, at the first run's plan
  s.run(y, {{x, Tensor({1.0, 1.0})}});
  EXPECT_EQ(g_binds, 3);  // a new plan binds its node again
  // The registry made the op's compute from bind, for executors that call
  // compute directly.
  EXPECT_TRUE(
      static_cast<bool>(OpRegistry::global().get("test_bound").compute));
}

TEST(Session, BoundKernelsInALoopBodyAreMadeOncePerBodyNotPerStep) {
  register_bound_op();
  Graph g;
  Value x0 = g.placeholder("x0", {1});
  LoopResult r = loop(6, {x0}, {}, [](const LoopArgs& l) {
    Value next = l.carries[0].graph().add_node(
        "test_bound", {l.carries[0]}, {{"factor", 0.5}});
    return LoopStep{{next}, {}};
  });
  Session s(g);
  g_binds = 0;
  // 64 · 0.5⁶ = 1.
  EXPECT_EQ(s.run(r.carries[0], {{x0, Tensor({64.0})}})[0], 1.0);
  EXPECT_EQ(s.run(r.carries[0], {{x0, Tensor({-128.0})}})[0], -2.0);
  EXPECT_EQ(g_binds, 1);
}

// y = x + 1, counting its runs; at run number `g_interrupt_at` it calls
// request_interrupt(), as a SIGINT handler would.
std::atomic<int> g_counted{0};
int g_interrupt_at = 0;
void register_counting_op() {
  if (OpRegistry::global().find("test_counting")) return;
  OpDef def;
  def.name = "test_counting";
  def.inputs = {"x"};
  def.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
  def.compute = [](KernelContext& c) {
    c.output(0).array() = c.input(0).array() + 1.0;
    if (++g_counted == g_interrupt_at) request_interrupt();
  };
  register_op(def);
}

TEST(SessionInterrupt, ARequestStopsTheRunBeforeItsNextNode) {
  register_counting_op();
  for (const bool concurrent : {false, true}) {
    Graph g;
    Value x = g.placeholder("x", {});
    Value y = x;
    for (int k = 0; k < 10; ++k) y = g.add_node("test_counting", {y});
    Session s(g, {.concurrent = concurrent});
    g_counted = 0;
    g_interrupt_at = 3;
    EXPECT_THROW(s.run(y, {{x, Tensor::scalar(0.0)}}), Interrupted);
    EXPECT_EQ(g_counted, 3) << "concurrent " << concurrent;
    // The request was taken: the session runs again, to the end.
    EXPECT_EQ(s.run(y, {{x, Tensor::scalar(0.5)}})[0], 10.5);
    EXPECT_EQ(g_counted, 13);
    EXPECT_FALSE(take_interrupt_request());
  }
}

TEST(SessionInterrupt, ARequestStopsALoopBeforeItsNextStep) {
  register_counting_op();
  Graph g;
  Value x0 = g.placeholder("x0", {});
  LoopResult r = loop(1000, {x0}, {}, [](const LoopArgs& l) {
    return LoopStep{
        {l.carries[0].graph().add_node("test_counting", {l.carries[0]})}, {}};
  });
  Session s(g);
  g_counted = 0;
  g_interrupt_at = 5;
  EXPECT_THROW(s.run(r.carries[0], {{x0, Tensor::scalar(0.0)}}), Interrupted);
  EXPECT_EQ(g_counted, 5);  // step 5 requested, step 6 did not start
  g_interrupt_at = 0;
  EXPECT_EQ(s.run(r.carries[0], {{x0, Tensor::scalar(2.0)}})[0], 1002.0);
}

TEST(Session, AnOpWithNeitherComputeNorBindIsRefused) {
  OpDef def;
  def.name = "test_kernelless";
  def.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
  try {
    OpRegistry registry;
    registry.add(def);
    ADD_FAILURE();
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "an op needs a shape rule and a compute kernel"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("test_kernelless"), std::string::npos);
  }
}

TEST(Session, FeedErrorsAreClear) {
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = neg(x);
  Session s(g);
  try {
    s.run(y);
    ADD_FAILURE();
  } catch (const RunError& e) {
    EXPECT_STREQ(e.what(),
                 "node \"x\" (placeholder): feed: placeholder is not fed");
  }
  try {
    s.run(y, {{x, Tensor({1.0, 2.0, 3.0})}});
    ADD_FAILURE();
  } catch (const RunError& e) {
    EXPECT_STREQ(e.what(),
                 "node \"x\" (placeholder): feed: expected shape [2], got [3]");
  }
  EXPECT_THROW(s.run(y, {{y, Tensor({1.0, 2.0})}}), RunError);
  EXPECT_THROW(Session(g, {.num_threads = -1}), OptionsError);
}

TEST(Session, FetchingAnInputReturnsItsValue) {
  Graph g;
  Value x = g.placeholder("x", {2});
  Session s(g);
  auto out = s.run({x, x}, {{x, Tensor({1.0, 2.0})}});
  EXPECT_EQ(out[1][1], 2.0);
}

TEST(Session, RunIntoWritesIntoTheCallersBuffers) {
  constexpr int64_t kSize = 1000;
  Graph g;
  Value x = g.placeholder("x", {kSize});
  Value y = sin(x) * 2.0;  // the multiply would run in place without run_into
  Value z = sum(y);
  Tensor xv(Shape{kSize});
  for (int64_t i = 0; i < kSize; ++i) xv[i] = 0.003 * i - 1.0;
  Session s(g);
  Tensor ya(Shape{kSize}), za(Shape{}), xa(Shape{kSize}), yb(Shape{kSize});
  const double* y_buffer = ya.data();
  const double* z_buffer = za.data();
  for (int run = 0; run < 3; ++run) {
    s.run_into({y, z, x, y}, {{x, xv}}, {&ya, &za, &xa, &yb});
    // The kernels wrote into the caller's buffers; after the first run
    // nothing is allocated (the intermediate sin(x) comes from the pool).
    EXPECT_EQ(ya.data(), y_buffer);
    EXPECT_EQ(za.data(), z_buffer);
    if (run > 0) {
      EXPECT_EQ(s.stats().buffers_allocated, 0) << run;
    }
    double total = 0;
    for (int64_t i = 0; i < kSize; ++i) {
      const double expected = std::sin(xv[i]) * 2.0;
      EXPECT_EQ(ya[i], expected) << i;
      EXPECT_EQ(yb[i], expected) << i;
      EXPECT_EQ(xa[i], xv[i]) << i;
      total += expected;
    }
    EXPECT_NEAR(za.item(), total, 1e-11);
  }
  // The same values as run(), bit for bit.
  auto out = s.run({y, z}, {{x, xv}});
  EXPECT_TRUE((out[0].array() == ya.array()).all());
  EXPECT_EQ(out[1].item(), za.item());
}

TEST(Session, BorrowedFeedsAreReadInPlaceAndBorrowedOutputsWrittenInPlace) {
  constexpr int64_t kSize = 1000;
  Graph g;
  Value x = g.placeholder("x", {kSize});
  Value y = sin(x) * 2.0;
  Value z = sum(x);
  // The feed lives at an address 8 bytes past a 64-byte boundary, as a
  // NumPy array's often does; owned tensors are 64-byte aligned.
  std::vector<double> feed(kSize + 8), ys(kSize), zs(1);
  double* const x_memory = feed.data() + 1;
  Tensor owned(Shape{kSize});
  for (int64_t i = 0; i < kSize; ++i)
    x_memory[i] = owned[i] = std::ldexp(0.003 * i - 1.0, i % 40 - 20);
  const std::vector<double> fed(x_memory, x_memory + kSize);
  Session s(g);
  const FeedMap borrowed = {{x, Tensor::borrow({kSize}, x_memory)}};
  Tensor yv = Tensor::borrow({kSize}, ys.data());
  Tensor zv = Tensor::borrow({}, zs.data());
  for (int run = 0; run < 2; ++run) {
    s.run_into({y, z}, borrowed, {&yv, &zv});
    EXPECT_TRUE(yv.borrowed());
    EXPECT_EQ(yv.data(), ys.data());
    EXPECT_EQ(zv.data(), zs.data());
    for (int64_t i = 0; i < kSize; ++i)
      EXPECT_EQ(ys[i], std::sin(fed[i]) * 2.0) << i;
    // The sum does not depend on where the feed lies: the same as of an
    // owned, aligned copy, bit for bit.
    EXPECT_EQ(zs[0], s.run(z, {{x, owned}}).item());
  }
  // The feed was only read.
  EXPECT_TRUE(std::equal(fed.begin(), fed.end(), x_memory));
}

TEST(Session, ALoopWritesItsCarryIntoABorrowedOutput) {
  // c_{t+1} = 0.5·c_t + 1 from c_0 = x, 10 steps: c_n = 2 + (x − 2)/2^10.
  Graph g;
  Value x = g.placeholder("x", {600});
  LoopResult r = loop(10, {x}, {}, [](const LoopArgs& a) {
    return LoopStep{{a.carries[0] * 0.5 + 1.0}, {}};
  });
  Tensor xv(Shape{600});
  for (int64_t i = 0; i < 600; ++i) xv[i] = static_cast<double>(i);
  std::vector<double> memory(600, -1.0);
  Session s(g);
  for (int run = 0; run < 3; ++run) {
    Tensor view = Tensor::borrow({600}, memory.data());
    s.run_into({r.carries[0]}, {{x, xv}}, {&view});
    EXPECT_TRUE(view.borrowed());
    EXPECT_EQ(view.data(), memory.data());
    for (int64_t i = 0; i < 600; ++i)
      EXPECT_EQ(memory[i], 2.0 + (i - 2.0) / 1024.0) << i;
    // The loop kept no view of the caller's memory: another run writes
    // only into the memory given to it.
    std::fill(memory.begin(), memory.end(), -1.0);
    Tensor other = s.run(r.carries[0], {{x, xv}});
    EXPECT_EQ(memory[0], -1.0);
    EXPECT_EQ(other[3], 2.0 + 1.0 / 1024.0);
  }
}

TEST(Session, RecycledStorageIsReusedForLaterOutputs) {
  Graph g;
  Value x = g.placeholder("x", {4096});
  Value y = x * 3.0;
  Tensor xv(Shape{4096}, 1.0);
  Session s(g);
  Tensor first = s.run(y, {{x, xv}});
  const double* storage = first.data();
  s.recycle(std::move(first));
  Tensor second = s.run(y, {{x, xv}});
  EXPECT_EQ(second.data(), storage);
  EXPECT_EQ(s.stats().buffers_allocated, 0);
  EXPECT_EQ(second[4095], 3.0);
  // A borrowed tensor is never taken.
  std::vector<double> memory(4096);
  s.recycle(Tensor::borrow({4096}, memory.data()));
  Tensor third = s.run(y, {{x, xv}});
  EXPECT_NE(third.data(), memory.data());
  EXPECT_EQ(s.stats().buffers_allocated, 1);
  EXPECT_EQ(third[4095], 3.0);
}

TEST(Session, RunIntoNamesTheFetchOfABadOutput) {
  register_ops_layer();  // the ops named below
  Graph g;
  Value x = g.placeholder("x", {2});
  NodeOptions named;
  named.name = "negated";
  Value y = g.add_node("neg", {x}, {}, named);
  Session s(g);
  const FeedMap feeds{{x, Tensor({1.0, 2.0})}};
  Tensor good(Shape{2}), wrong(Shape{3});
  auto message = [&](const std::vector<Value>& fetches,
                     const std::vector<Tensor*>& outputs) -> std::string {
    try {
      s.run_into(fetches, feeds, outputs);
    } catch (const RunError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(message({x, y}, {&good, &wrong}),
            "node \"negated\" (neg): outputs: output tensor 1 (for fetch 1, "
            "\"negated\" output 0) has shape [3], the fetch has shape [2] "
            "(adgraph tensors hold doubles; make it with "
            "Tensor(fetch.shape()))");
  EXPECT_EQ(message({y}, {&good, &good}),
            "outputs: run_into got 2 output tensor(s) for 1 fetch(es)");
  EXPECT_EQ(message({y}, {nullptr}),
            "node \"negated\" (neg): outputs: output tensor 0 (for fetch 0, "
            "\"negated\" output 0) is null");
  Tensor other(Shape{2});
  EXPECT_EQ(message({y, y}, {&good, &good}),
            "node \"negated\" (neg): outputs: output tensor 1 (for fetch 1, "
            "\"negated\" output 0) is also output tensor 0; give each fetch "
            "its own tensor");
  Tensor& fed = const_cast<Tensor&>(feeds.begin()->second);
  EXPECT_EQ(message({y}, {&fed}),
            "node \"negated\" (neg): outputs: output tensor 0 (for fetch 0, "
            "\"negated\" output 0) is the feed of \"x\"; a fetch cannot be "
            "written into a feed");
  // Nothing was changed by the refused runs.
  EXPECT_EQ(fed[1], 2.0);
  s.run_into({y, y}, feeds, {&good, &other});
  EXPECT_EQ(good[1], -2.0);
  EXPECT_EQ(other[0], -1.0);
}

// The one-fetch form: the same checks and the same buffer reuse.
TEST(Session, RunIntoOneFetchWritesIntoTheCallersBuffer) {
  register_ops_layer();  // the ops named below
  constexpr int64_t kSize = 1000;
  Graph g;
  Value x = g.placeholder("x", {kSize});
  NodeOptions named;
  named.name = "scaled";
  Value y = g.add_node("mul", {x, g.constant(Tensor::scalar(3.0))}, {}, named);
  Tensor xv(Shape{kSize});
  for (int64_t i = 0; i < kSize; ++i) xv[i] = 0.5 * i - 7.0;
  const FeedMap feeds{{x, xv}};
  Session s(g);
  Tensor out(Shape{kSize});
  const double* buffer = out.data();
  for (int run = 0; run < 2; ++run) {
    s.run_into(y, feeds, out);
    EXPECT_EQ(out.data(), buffer);
    for (int64_t i = 0; i < kSize; ++i) ASSERT_EQ(out[i], 3.0 * xv[i]) << i;
  }
  EXPECT_EQ(s.stats().buffers_allocated, 0);
  Tensor wrong(Shape{kSize, 1});
  try {
    s.run_into(y, feeds, wrong);
    ADD_FAILURE() << "a [1000, 1] output was accepted for a [1000] fetch";
  } catch (const RunError& e) {
    EXPECT_STREQ(e.what(),
                 "node \"scaled\" (mul): outputs: output tensor 0 (for fetch "
                 "0, \"scaled\" output 0) has shape [1000, 1], the fetch has "
                 "shape [1000] (adgraph tensors hold doubles; make it with "
                 "Tensor(fetch.shape()))");
  }
}

}  // namespace
}  // namespace adgraph
