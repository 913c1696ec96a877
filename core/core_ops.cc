#include "core/core_ops.h"

#include <utility>

#include "core/check.h"
#include "core/op.h"

namespace adgraph {
namespace {

OpDef filled(std::string name, std::string doc, double value) {
  OpDef def(std::move(name), std::move(doc));
  def.attrs = {{"shape", AttrType::kInts, nlohmann::json(), "shape", 0}};
  def.shape = [](const ShapeContext& c) {
    return Shapes{c.attr_ints("shape")};
  };
  def.compute = [value](KernelContext& c) {
    c.output(0).array().setConstant(value);
  };
  return def;
}

Shapes same_shape(const ShapeContext& c) { return {c.input_shape(0)}; }

void register_sources() {
  // Fed at run time by Session::run; the executor copies the feed.
  OpDef placeholder("placeholder", "y = the tensor fed for this node");
  placeholder.attrs = {
      {"shape", AttrType::kInts, nlohmann::json(), "shape", 0}};
  placeholder.shape = [](const ShapeContext& c) {
    return Shapes{c.attr_ints("shape")};
  };
  placeholder.compute = [](KernelContext& c) {
    ADGRAPH_CHECK(false) << "placeholder " << c.node().name
                         << " is fed by the executor";
  };
  register_op(std::move(placeholder));

  OpDef constant("constant", "y = value (a number or nested list)");
  constant.attrs = {
      {"value", AttrType::kTensor, nlohmann::json(), "the value"}};
  constant.shape = [](const ShapeContext& c) {
    return Shapes{c.node().tensor("value").shape()};
  };
  constant.compute = [](KernelContext& c) {
    c.output(0).array() = c.node().tensor("value").array();
  };
  register_op(std::move(constant));

  OpDef fill_def = filled("fill", "y = value everywhere", 0.0);
  fill_def.attrs.push_back(
      {"value", AttrType::kFloat, nlohmann::json(), "value"});
  fill_def.compute = [](KernelContext& c) {
    c.output(0).array().setConstant(c.attr_float("value"));
  };
  register_op(std::move(fill_def));
  register_op(filled("zeros", "y = 0", 0.0));
  register_op(filled("ones", "y = 1", 1.0));

  // y = 0 of shape(x);  x̄ += 0
  OpDef like("zeros_like", "y = 0 with the shape of x", {"x"});
  like.shape = same_shape;
  like.compute = [](KernelContext& c) { c.output(0).array().setZero(); };
  like.gradient = [](const GradientContext&) { return Values{Value()}; };
  like.tangent = [](const TangentContext&) { return Values{Value()}; };
  register_op(std::move(like));
}

}  // namespace

Value fill(Graph& graph, Shape shape, double value) {
  return graph.add_node("fill", {}, {{"shape", shape}, {"value", value}});
}
Value zeros(Graph& graph, Shape shape) {
  return graph.add_node("zeros", {}, {{"shape", shape}});
}
Value ones(Graph& graph, Shape shape) {
  return graph.add_node("ones", {}, {{"shape", shape}});
}
Value zeros_like(Value x) { return x.graph().add_node("zeros_like", {x}); }
Value identity(Value x) { return x.graph().add_node("identity", {x}); }
Value stop_gradient(Value x) {
  return x.graph().add_node("stop_gradient", {x});
}
Value accumulate(Value a, Value b) {
  return a.graph().add_node("accumulate", {a, b});
}

Shape equal_input_shapes(const ShapeContext& c, const std::string& second) {
  if (c.input_shape(1) != c.input_shape(0)) {
    c.fail(second,
           "shape " + shape_string(c.input_shape(1)) + " differs from " +
               shape_string(c.input_shape(0)));
  }
  return c.input_shape(0);
}

void register_core_ops() {
  register_sources();

  // y = x;  x̄ += ȳ
  OpDef identity_def("identity", "y = x", {"x"});
  identity_def.shape = same_shape;
  identity_def.compute = [](KernelContext& c) {
    c.output(0).array() = c.input(0).array();
  };
  identity_def.gradient = [](const GradientContext& c) {
    return Values{c.grad()};
  };
  identity_def.tangent = linear_tangent;
  register_op(std::move(identity_def));

  // y = x;  x̄ += 0, ẏ = 0
  OpDef stop("stop_gradient",
             "y = x, with no derivative: no cotangent reaches x, the tangent "
             "is 0",
             {"x"});
  stop.shape = same_shape;
  stop.compute = [](KernelContext& c) {
    if (c.output(0).data() != c.input(0).data())
      c.output(0).array() = c.input(0).array();
  };
  stop.in_place = {{0, 0}};
  stop.gradient = [](const GradientContext&) { return Values{Value()}; };
  stop.tangent = [](const TangentContext&) { return Values{Value()}; };
  register_op(std::move(stop));

  // y = a + b (one shape);  ā += ȳ,  b̄ += ȳ
  OpDef sum_def("accumulate",
                "y = a + b for a and b of one shape (derivative sums)",
                {"a", "b"});
  sum_def.shape = [](const ShapeContext& c) {
    return Shapes{equal_input_shapes(c, "input \"b\"")};
  };
  sum_def.compute = [](KernelContext& c) {
    c.output(0).array() = c.input(0).array() + c.input(1).array();
  };
  sum_def.in_place = {{0, 0}, {0, 1}};
  sum_def.gradient = [](const GradientContext& c) {
    return Values{c.grad(), c.grad()};
  };
  sum_def.tangent = [](const TangentContext& c) {
    if (!c.tangent(0).valid()) return Values{c.tangent(1)};
    if (!c.tangent(1).valid()) return Values{c.tangent(0)};
    return Values{accumulate(c.tangent(0), c.tangent(1))};
  };
  register_op(std::move(sum_def));
}

}  // namespace adgraph
