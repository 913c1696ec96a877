#include "ops/sources.h"

#include <utility>

#include "core/check.h"
#include "core/op.h"

namespace adgraph {
namespace {

OpDef filled(std::string name, std::string doc, double value) {
  OpDef def;
  def.name = std::move(name);
  def.doc = std::move(doc);
  def.attrs = {{"shape", AttrType::kInts, nlohmann::json(), "shape", 0}};
  def.shape = [](const ShapeContext& c) {
    return Shapes{c.attr_ints("shape")};
  };
  def.compute = [value](KernelContext& c) {
    c.output(0).array().setConstant(value);
  };
  return def;
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

void register_source_ops(OpRegistry& r) {
  // Fed at run time by Session::run; the executor copies the feed.
  OpDef placeholder;
  placeholder.name = "placeholder";
  placeholder.doc = "y = the tensor fed for this node";
  placeholder.attrs = {
      {"shape", AttrType::kInts, nlohmann::json(), "shape", 0}};
  placeholder.shape = [](const ShapeContext& c) {
    return Shapes{c.attr_ints("shape")};
  };
  placeholder.compute = [](KernelContext& c) {
    ADGRAPH_CHECK(false) << "placeholder " << c.node().name
                         << " is fed by the executor";
  };
  r.add(std::move(placeholder));

  OpDef constant;
  constant.name = "constant";
  constant.doc = "y = value (a number or nested list)";
  constant.attrs = {
      {"value", AttrType::kTensor, nlohmann::json(), "the value"}};
  constant.shape = [](const ShapeContext& c) {
    return Shapes{c.node().tensor("value").shape()};
  };
  constant.compute = [](KernelContext& c) {
    c.output(0).array() = c.node().tensor("value").array();
  };
  r.add(std::move(constant));

  OpDef fill_def = filled("fill", "y = value everywhere", 0.0);
  fill_def.attrs.push_back(
      {"value", AttrType::kFloat, nlohmann::json(), "value"});
  fill_def.compute = [](KernelContext& c) {
    c.output(0).array().setConstant(c.attr_float("value"));
  };
  r.add(std::move(fill_def));
  r.add(filled("zeros", "y = 0", 0.0));
  r.add(filled("ones", "y = 1", 1.0));

  // y = 0 of shape(x);  x̄ += 0
  OpDef like;
  like.name = "zeros_like";
  like.doc = "y = 0 with the shape of x";
  like.inputs = {"x"};
  like.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
  like.compute = [](KernelContext& c) { c.output(0).array().setZero(); };
  like.gradient = [](const GradientContext&) { return Values{Value()}; };
  like.tangent = [](const TangentContext&) { return Values{Value()}; };
  r.add(std::move(like));
}

}  // namespace adgraph
