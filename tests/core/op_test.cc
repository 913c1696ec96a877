// The op interface (core/op.cc): the registry's checks and lookups, an op
// that only binds, and the two tangent rules the library's ops share
// (linear_tangent, bilinear_tangent) on user ops whose derivatives are
// worked out by hand.
#include "core/op.h"

#include <gtest/gtest.h>

#include <string>

#include "builtin_ops.h"
#include "core/ad/jvp.h"
#include "core/error.h"
#include "core/exec/session.h"
#include "core/graph.h"

namespace adgraph {
namespace {

Shapes same_shape(const ShapeContext& c) { return {c.input_shape(0)}; }

OpDef copy_op(std::string name) {
  OpDef def(std::move(name), "y = x", {"x"});
  def.shape = same_shape;
  def.compute = [](KernelContext& c) { c.output(0) = c.input(0); };
  return def;
}

std::string refusal(OpRegistry& registry, OpDef def) {
  try {
    registry.add(std::move(def));
  } catch (const GraphError& e) {
    return e.what();
  }
  return "accepted";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(OpDef, TheConstructorSetsNameDocAndInputs) {
  const OpDef def("scale", "y = alpha * x", {"x"});
  EXPECT_EQ(def.name, "scale");
  EXPECT_EQ(def.doc, "y = alpha * x");
  EXPECT_EQ(def.inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(def.num_outputs, 1);
  EXPECT_FALSE(def.communication);
  EXPECT_TRUE(OpDef("source", "y = 1").inputs.empty());
}

TEST(OpRegistry, RefusesAnIncompleteOrRepeatedOp) {
  OpRegistry registry;
  registry.add(copy_op("copy"));
  EXPECT_TRUE(contains(refusal(registry, copy_op("")), "an op needs a name"));
  const std::string again = refusal(registry, copy_op("copy"));
  EXPECT_TRUE(contains(again, "an op of this name is already registered"));
  EXPECT_TRUE(contains(again, "copy")) << again;

  OpDef shapeless = copy_op("shapeless");
  shapeless.shape = nullptr;
  OpDef kernelless = copy_op("kernelless");
  kernelless.compute = nullptr;
  for (OpDef* def : {&shapeless, &kernelless}) {
    const std::string name = def->name;
    const std::string message = refusal(registry, *def);
    EXPECT_TRUE(contains(message, "an op needs a shape rule and a compute"))
        << message;
    EXPECT_TRUE(contains(message, name)) << message;
  }
  OpDef negative = copy_op("negative");
  negative.num_outputs = -1;
  EXPECT_TRUE(contains(refusal(registry, negative),
                       "an op cannot have a negative number of outputs"));
  // Nothing refused was kept.
  ASSERT_EQ(registry.all().size(), 1u);
  EXPECT_EQ(registry.find("shapeless"), nullptr);
}

TEST(OpRegistry, LooksUpByNameAndSuggestsTheNearest) {
  OpRegistry registry;
  for (const char* name : {"transpose", "matmul", "matvec"})
    registry.add(copy_op(name));
  EXPECT_EQ(registry.get("matmul").name, "matmul");
  EXPECT_EQ(registry.find("matmull"), nullptr);
  // all() is sorted by name.
  std::vector<std::string> names;
  for (const OpDef* def : registry.all()) names.push_back(def->name);
  EXPECT_EQ(names, (std::vector<std::string>{"matmul", "matvec", "transpose"}));
  const auto message_of = [&](const std::string& name) -> std::string {
    try {
      registry.get(name);
    } catch (const GraphError& e) {
      return e.what();
    }
    return "found";
  };
  // One letter too many: distance 1.
  EXPECT_TRUE(contains(message_of("matmull"),
                       "unknown op \"matmull\"; did you mean \"matmul\"?"));
  // Nothing within max(2, length / 3) edits: no suggestion.
  const std::string far = message_of("softmax");
  EXPECT_TRUE(contains(far, "unknown op \"softmax\"")) << far;
  EXPECT_FALSE(contains(far, "did you mean")) << far;
  // With no near name, the message says how ops get registered.
  EXPECT_TRUE(contains(far, "no registered op has this name")) << far;
  EXPECT_TRUE(contains(far, "adgraph::register_all_ops()")) << far;
  EXPECT_FALSE(contains(message_of("matmull"), "register_all_ops")) << far;
}

// The core registers its own ops and calls nothing above it: this program
// builds no node through a layer above the core, so none of their ops is
// registered (the loops' "loop", the ops layer's "exp"), and, with no
// completion (a program that does not include adgraph.h), an unknown name
// fails with the message that says so.
TEST(OpRegistry, TheGlobalRegistryHoldsTheCoresOwnOps) {
  OpRegistry::set_completion(nullptr);  // undo adgraph.h's, for this test
  const OpRegistry& global = OpRegistry::global();
  for (const char* core : {"placeholder", "constant", "identity", "zeros"})
    EXPECT_NE(global.find(core), nullptr) << core;
  for (const char* above : {"loop", "exp", "mpi_allreduce", "heat_step"})
    EXPECT_EQ(global.find(above), nullptr) << above;
  Graph g;
  Value x = g.placeholder("x", {2});
  try {
    g.add_node("heat_step", {x});
    FAIL() << "expected a GraphError";
  } catch (const GraphError& e) {
    EXPECT_TRUE(contains(e.what(), "unknown op \"heat_step\"")) << e.what();
    EXPECT_TRUE(contains(e.what(), "register_all_ops")) << e.what();
  }
}

// With adgraph.h's completion (register_all_ops), naming an op of any
// layer finds it: the first unknown name registers every layer.
TEST(OpRegistry, TheCompletionRegistersEveryLayerOnAnUnknownName) {
  OpRegistry::set_completion(&register_all_ops);
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = g.add_node("exp", {x});
  EXPECT_EQ(g.node(y.node_id()).op->name, "exp");
  for (const char* above : {"loop", "mpi_allreduce", "heat_step", "stencil"})
    EXPECT_NE(OpRegistry::global().find(above), nullptr) << above;
  // A name no layer has still fails, after the completion, with a message.
  EXPECT_THROW(g.add_node("no_such_op", {x}), GraphError);
}

TEST(OpRegistry, AnOpThatOnlyBindsRunsThroughItsBoundKernel) {
  OpRegistry registry;
  OpDef def("scaled", "y = factor * x", {"x"});
  def.attrs = {{"factor", AttrType::kFloat, 1.0, "factor"}};
  def.shape = same_shape;
  def.bind = [](const Node& n) {
    const double factor = n.attr_float("factor");
    return ComputeFn([factor](KernelContext& c) {
      c.output(0).array() = factor * c.input(0).array();
    });
  };
  registry.add(def);
  // The registry made compute from bind, for callers that run compute.
  EXPECT_TRUE(static_cast<bool>(registry.get("scaled").compute));
}

// Two user ops: y = 3x with linear_tangent, y = a ⊙ b with bilinear_tangent.
void register_tangent_test_ops() {
  if (OpRegistry::global().find("test_triple")) return;
  OpDef triple("test_triple", "y = 3x", {"x"});
  triple.shape = same_shape;
  triple.compute = [](KernelContext& c) {
    c.output(0).array() = 3.0 * c.input(0).array();
  };
  triple.tangent = linear_tangent;
  register_op(triple);
  OpDef product("test_product", "y = a * b", {"a", "b"});
  product.shape = same_shape;
  product.compute = [](KernelContext& c) {
    c.output(0).array() = c.input(0).array() * c.input(1).array();
  };
  product.tangent = bilinear_tangent;
  register_op(product);
}

TEST(TangentRules, LinearAndBilinearByHand) {
  register_tangent_test_ops();
  Graph g;
  Value a = g.placeholder("a", {2}), b = g.placeholder("b", {2});
  Value y = g.add_node("test_product", {g.add_node("test_triple", {a}), b});
  // y = 3a ⊙ b: ẏ = 3ȧ ⊙ b + 3a ⊙ ḃ.
  const Tensor av({1.0, -2.0}), bv({4.0, 0.5}), ad({0.5, 1.0}), bd({-1.0, 2.0});
  Value da = g.placeholder("da", {2}), db = g.placeholder("db", {2});
  const std::vector<Value> both = jvp({y}, {a, b}, {da, db});
  const Value only_a = jvp(y, a, da);
  Session s(g);
  const FeedMap feeds = {{a, av}, {b, bv}, {da, ad}, {db, bd}};
  // 3·(0.5·4 + 1·(−1)) = 3, 3·(1·0.5 + (−2)·2) = −10.5.
  EXPECT_EQ(s.run(both[0], feeds).to_vector(),
            (std::vector<double>{3.0, -10.5}));
  // 3·0.5·4 = 6, 3·1·0.5 = 1.5.
  EXPECT_EQ(s.run(only_a, feeds).to_vector(), (std::vector<double>{6.0, 1.5}));
}

}  // namespace
}  // namespace adgraph
