#include "core/graph.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/op.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"

namespace adgraph {
namespace {

// Returns the message of the Error `f` throws, or "" if none.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Graph, ShapesAreInferredWhenNodesAreBuilt) {
  Graph g;
  Value a = g.placeholder("a", {2, 3});
  Value y = sum(a * 2.0 + a, {1});
  EXPECT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(sum(a).shape(), Shape{});
  EXPECT_EQ(g.node(y.node_id()).op_name(), "sum");
}

TEST(Graph, ShapeMismatchNamesNodeOpAndBothShapes) {
  Graph g;
  Value a = g.placeholder("a", {2});
  Value b = g.placeholder("b", {3});
  std::string msg = error_of([&] {
    g.add_node("pow", {a, b}, nlohmann::json::object(), {.name = "l"});
  });
  EXPECT_EQ(
      msg,
      "node \"l\" (pow): input \"b\": shape [3] does not broadcast with [2]");
  EXPECT_THROW(a + b, ShapeError);
}

TEST(Graph, UnknownOpSuggestsNearestName) {
  register_ops_layer();  // the ops named below
  Graph g;
  std::string msg = error_of([&] { g.add_node("sqaure", {}); });
  EXPECT_NE(msg.find("unknown op \"sqaure\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean \"square\""), std::string::npos) << msg;
}

TEST(Graph, AttributeErrorsNameTheField) {
  register_ops_layer();  // the ops named below
  Graph g;
  Value a = g.placeholder("a", {2, 2});
  EXPECT_EQ(
      error_of([&] {
        g.add_node("slice", {a}, {{"axis", 0}, {"begin", 0}}, {.name = "s"});
      }),
      "node \"s\" (slice): attribute \"end\": required attribute is missing");
  EXPECT_EQ(error_of([&] {
              g.add_node("slice",
                         {a},
                         {{"axis", 0}, {"begin", 0}, {"end", 1}, {"stride", 2}},
                         {.name = "t"});
            }),
            "node \"t\" (slice): attribute \"stride\": unknown attribute "
            "(known: axis, begin, end)");
  EXPECT_EQ(error_of([&] {
              g.add_node("slice",
                         {a},
                         {{"axis", 0}, {"begin", -1}, {"end", 1}},
                         {.name = "u"});
            }),
            "node \"u\" (slice): attribute \"begin\": value -1.0 is outside "
            "[0.0, inf]");
  EXPECT_EQ(error_of([&] {
              g.add_node("slice",
                         {a},
                         {{"axis", "x"}, {"begin", 0}, {"end", 1}},
                         {.name = "v"});
            }),
            "node \"v\" (slice): attribute \"axis\": expected an integer, "
            "found \"x\"");
  EXPECT_EQ(error_of([&] {
              g.add_node("slice",
                         {a},
                         {{"axis", 0}, {"begin", 0}, {"end", 3}},
                         {.name = "w"});
            }),
            "node \"w\" (slice): attribute \"end\": range [0, 3) does not fit "
            "extent 2 of [2, 2]");
}

TEST(Graph, InputErrorsNameTheField) {
  register_ops_layer();  // the ops named below
  Graph g;
  Graph other;
  Value a = g.placeholder("a", {2});
  Value b = other.placeholder("b", {2});
  EXPECT_EQ(error_of([&] { g.add_node("add", {a}, {}, {.name = "x"}); }),
            "node \"x\" (add): inputs: expected 2 inputs, got 1");
  EXPECT_EQ(error_of([&] {
              g.add_node("add", {a, b}, {}, {.name = "y"});
            }),
            "node \"y\" (add): input 1 (\"b\"): not a value of this graph");
  EXPECT_EQ(error_of([&] { g.add_node("neg", {a}, {}, {.name = "a"}); }),
            "node \"a\" (neg): name: duplicate node name");
}

TEST(Graph, NodeNamesMayNotHoldAColon) {
  Graph g;
  Value pe = g.placeholder("pe", {2});
  const std::string refused =
      "name: a node name may not hold ':', which names a node's outputs "
      "(\"name:k\"); choose a name without ':'";
  EXPECT_EQ(error_of([&] { g.add_node("neg", {pe}, {}, {.name = "pe:1"}); }),
            "node \"pe:1\" (neg): " + refused);
  EXPECT_EQ(error_of([&] { g.placeholder("q:0", {}); }),
            "node \"q:0\" (placeholder): " + refused);
  EXPECT_EQ(error_of([&] { g.constant(Tensor::scalar(1.0), "c:"); }),
            "node \"c:\" (constant): " + refused);
  // Nothing was added: "pe" is still the only node, and get() finds it.
  EXPECT_EQ(g.num_nodes(), 1);
  EXPECT_EQ(g.get("pe"), pe);
  EXPECT_EQ(g.find("pe:1"), nullptr);
}

TEST(Graph, ControlInputsMustBeOlder) {
  Graph g;
  Value a = g.placeholder("a", {});
  Value b = neg(a);
  EXPECT_THROW(g.add_control_input(a, b), GraphError);
  g.add_control_input(b, a);
  EXPECT_EQ(g.node(b.node_id()).control_inputs, std::vector<int>{a.node_id()});
}

TEST(Graph, FindByName) {
  Graph g;
  Value a = g.placeholder("a", {});
  EXPECT_EQ(g.get("a"), a);
  EXPECT_EQ(g.find("missing"), nullptr);
  EXPECT_THROW(g.get("missing"), GraphError);
}

TEST(OpRegistry, RejectsDuplicateAndIncompleteOps) {
  OpRegistry r;
  OpDef def;
  def.name = "x";
  EXPECT_THROW(r.add(def), GraphError);
  def.shape = [](const ShapeContext&) { return Shapes{Shape{}}; };
  def.compute = [](KernelContext&) {};
  r.add(def);
  EXPECT_THROW(r.add(def), GraphError);
  EXPECT_NE(r.find("x"), nullptr);
}

}  // namespace
}  // namespace adgraph
