#include "grid/stencil.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/op.h"
#include "grid/grid_ops_impl.h"
#include "grid/stencil_impl.h"
#include "mpi_ops/communicator.h"
#include "ops/reductions.h"

namespace adgraph::grid {

// ---- Expressions over values -------------------------------------------

StencilExpr::StencilExpr(double value) : tree_(constant(value)) {}

StencilExpr StencilExpr::shift(const Offset& offset) const {
  std::vector<bool> scalar;
  for (const Value& v : inputs_) scalar.push_back(v.shape().empty());
  return StencilExpr(
      shifted(tree_, offset, static_cast<int>(offset.size()), &scalar),
      inputs_);
}

StencilExpr field(Value v) {
  if (!v.valid()) throw OptionsError("grid::field: an invalid Value");
  return StencilExpr(read(0), {v});
}

StencilExpr stencil_apply(const std::string& op,
                          const std::vector<StencilExpr>& args) {
  std::vector<Value> inputs;
  std::vector<ExprPtr> trees;
  for (const StencilExpr& a : args) {
    std::vector<int> to;
    for (const Value& v : a.inputs()) {
      auto it = std::find(inputs.begin(), inputs.end(), v);
      if (it == inputs.end() && !inputs.empty() &&
          &v.graph() != &inputs[0].graph())
        throw OptionsError("stencil expression: " + op +
                           ": inputs of two graphs");
      to.push_back(static_cast<int>(it - inputs.begin()));
      if (it == inputs.end()) inputs.push_back(v);
    }
    trees.push_back(renumbered(a.tree(), to));
  }
  return StencilExpr(apply(op, std::move(trees)), std::move(inputs));
}

#define ADGRAPH_STENCIL_BINARY(fn, op)                         \
  StencilExpr fn(const StencilExpr& a, const StencilExpr& b) { \
    return stencil_apply(op, {a, b});                          \
  }
#define ADGRAPH_STENCIL_UNARY(fn, op) \
  StencilExpr fn(const StencilExpr& a) { return stencil_apply(op, {a}); }
ADGRAPH_STENCIL_BINARY(operator+, "add")
ADGRAPH_STENCIL_BINARY(operator-, "sub")
ADGRAPH_STENCIL_BINARY(operator*, "mul")
ADGRAPH_STENCIL_BINARY(operator/, "div")
ADGRAPH_STENCIL_BINARY(pow, "pow")
ADGRAPH_STENCIL_BINARY(min, "min")
ADGRAPH_STENCIL_BINARY(max, "max")
ADGRAPH_STENCIL_BINARY(operator<, "lt")
ADGRAPH_STENCIL_BINARY(operator<=, "le")
ADGRAPH_STENCIL_BINARY(operator>, "gt")
ADGRAPH_STENCIL_BINARY(operator>=, "ge")
ADGRAPH_STENCIL_UNARY(operator-, "neg")
ADGRAPH_STENCIL_UNARY(exp, "exp")
ADGRAPH_STENCIL_UNARY(log, "log")
ADGRAPH_STENCIL_UNARY(sin, "sin")
ADGRAPH_STENCIL_UNARY(cos, "cos")
ADGRAPH_STENCIL_UNARY(tanh, "tanh")
ADGRAPH_STENCIL_UNARY(abs, "abs")
ADGRAPH_STENCIL_UNARY(sqrt, "sqrt")
#undef ADGRAPH_STENCIL_BINARY
#undef ADGRAPH_STENCIL_UNARY

StencilExpr where(const StencilExpr& c,
                  const StencilExpr& a,
                  const StencilExpr& b) {
  return stencil_apply("where", {c, a, b});
}

// ---- Nodes ---------------------------------------------------------------

namespace {

// Adds a stencil node of `tree` over `inputs`, keeping only the inputs the
// tree reads (renumbered in order), on the communicator `comm`.
Value stencil_node(const GridLayout& layout,
                   std::shared_ptr<CommContext> comm,
                   const ExprPtr& tree,
                   const std::vector<Value>& inputs,
                   bool sum_batch,
                   const std::string& name = {}) {
  std::vector<bool> used(inputs.size(), false);
  for (const ReadKey& r : reads_of(tree, layout.ndim())) used[r.input] = true;
  std::vector<int> to(inputs.size(), -1);
  std::vector<Value> kept;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (!used[k]) continue;
    to[k] = static_cast<int>(kept.size());
    kept.push_back(inputs[k]);
  }
  if (kept.empty())
    throw OptionsError("stencil: the expression reads no input");
  nlohmann::json attrs = layout.attrs();
  attrs["expr"] = print(renumbered(tree, to));
  attrs["sum_batch"] = sum_batch;
  NodeOptions o;
  o.name = name;
  o.comm = std::move(comm);
  return kept[0].graph().add_node("stencil", kept, attrs, std::move(o));
}

}  // namespace

Value stencil(const Grid& grid,
              const StencilExpr& expr,
              const std::string& name) {
  return stencil_node(
      grid.layout(), grid.comm(), expr.tree(), expr.inputs(), false, name);
}

Value stencil(const Grid& grid,
              const std::string& text,
              const std::vector<Value>& inputs,
              const std::string& name) {
  if (inputs.empty()) throw OptionsError("stencil: no inputs");
  nlohmann::json attrs = grid.layout().attrs();
  attrs["expr"] = text;
  attrs["sum_batch"] = false;
  NodeOptions o;
  o.name = name;
  o.comm = grid.comm();
  return inputs[0].graph().add_node("stencil", inputs, attrs, std::move(o));
}

// ---- Derivatives ---------------------------------------------------------

namespace {

struct NodeView {
  GridLayout layout;
  ExprPtr expr;
  int ndim;
  std::vector<bool> scalar, batched;
  bool any_batched = false;
};

NodeView view_of(const Node& n) {
  NodeView v;
  v.layout = detail::layout_of(n);
  v.ndim = v.layout.ndim();
  v.expr = parse(n.attr_string("expr"));
  for (const Value& in : n.inputs) {
    v.scalar.push_back(in.shape().empty());
    v.batched.push_back(static_cast<int>(in.shape().size()) > v.ndim);
    v.any_batched = v.any_batched || v.batched.back();
  }
  return v;
}

bool crosses_edge(const GridLayout& g, const Offset& s) {
  for (int a = 0; a < g.ndim(); ++a)
    if (s[a] != 0 && !g.periodic[a]) return true;
  return false;
}

Offset negated(Offset s) {
  for (int64_t& o : s) o = -o;
  return s;
}

// Σ_k inside(−s_k)·(ȳ·∂f/∂r_k)(· − s_k) over the reads r_k of input i, in
// the order of their offsets; ȳ is input `ybar`.
ExprPtr gather_adjoint(const NodeView& v, int i, int ybar) {
  std::vector<bool> fixed = v.scalar;  // scalars are not moved; ȳ is a field
  fixed.resize(ybar + 1, false);
  ExprPtr sum;
  for (const ReadKey& r : reads_of(v.expr, v.ndim)) {
    if (r.input != i) continue;
    ExprPtr partial = derivative(
        v.expr,
        [&](const ReadKey& k) {
          return k.input == r.input && k.offset == r.offset ? constant(1)
                                                            : nullptr;
        },
        v.ndim);
    if (!partial) continue;
    ExprPtr term = shifted(
        apply("mul", {read(ybar), partial}), negated(r.offset), v.ndim, &fixed);
    if (crosses_edge(v.layout, r.offset))
      term = apply("where", {inside(negated(r.offset)), term, constant(0)});
    sum = sum ? apply("add", {sum, term}) : term;
  }
  return sum;
}

// Σ_k ȳ·∂f/∂r_k at each point, for a scalar input i.
ExprPtr scalar_terms(const NodeView& v, int i, int ybar) {
  ExprPtr partial = derivative(
      v.expr,
      [&](const ReadKey& k) { return k.input == i ? constant(1) : nullptr; },
      v.ndim);
  return partial ? apply("mul", {read(ybar), partial}) : nullptr;
}

Values stencil_gradient(const GradientContext& c) {
  const Node& n = c.node();
  const NodeView v = view_of(n);
  std::vector<Value> inputs(n.inputs.begin(), n.inputs.end());
  const int ybar = static_cast<int>(inputs.size());
  inputs.push_back(c.grad(0));
  Values out(n.inputs.size());
  for (int i = 0; i < static_cast<int>(n.inputs.size()); ++i) {
    if (!c.needs_gradient(i)) continue;
    if (v.scalar[i]) {
      ExprPtr t = scalar_terms(v, i, ybar);
      if (!t) continue;
      // This rank's points, summed exactly: the same bits for the same
      // terms however they are split.
      out[i] = sum(stencil_node(v.layout, n.comm, t, inputs, v.any_batched));
      continue;
    }
    ExprPtr g = gather_adjoint(v, i, ybar);
    if (!g) continue;
    out[i] = stencil_node(
        v.layout, n.comm, g, inputs, !v.batched[i] && v.any_batched);
  }
  return out;
}

Values stencil_tangent(const TangentContext& c) {
  const Node& n = c.node();
  const NodeView v = view_of(n);
  std::vector<Value> inputs(n.inputs.begin(), n.inputs.end());
  std::vector<int> tangent_of(inputs.size(), -1);
  for (int i = 0; i < c.num_inputs(); ++i) {
    if (!c.tangent(i).valid()) continue;
    tangent_of[i] = static_cast<int>(inputs.size());
    inputs.push_back(c.tangent(i));
  }
  ExprPtr t = derivative(
      v.expr,
      [&](const ReadKey& k) -> ExprPtr {
        return tangent_of[k.input] < 0 ? nullptr
                                       : read(tangent_of[k.input], k.offset);
      },
      v.ndim);
  if (!t) return Values{Value()};
  return Values{
      stencil_node(v.layout, n.comm, t, inputs, n.attr_bool("sum_batch"))};
}

std::vector<AttrSpec> stencil_attrs() {
  std::vector<AttrSpec> a = detail::grid_attr_specs();
  a.push_back({"expr",
               AttrType::kString,
               nlohmann::json(),
               "the expression's text form (grid/stencil_expr.h)"});
  a.push_back({"sum_batch",
               AttrType::kBool,
               false,
               "sum the result over the batch axes (in batch order)"});
  return a;
}

}  // namespace

void register_stencil_ops() {
  // y[i] = f(x_k[i + s]…) over the patch, halos exchanged as needed;
  // x̄_k[j] = Σ_s inside(j − s)·(ȳ·∂f/∂r_s)(j − s), a stencil again
  OpDef def = every_rank_op(
      "stencil", "y = a fused stencil expression over grid fields and scalars");
  def.inputs = {"x"};
  def.variadic = true;
  def.attrs = stencil_attrs();
  def.shapes_differ_by_rank = true;
  def.shape = [](const ShapeContext& c) {
    const GridLayout g = detail::checked_layout(c);
    std::vector<Shape> shapes;
    for (int i = 0; i < c.num_inputs(); ++i) shapes.push_back(c.input_shape(i));
    const int rank = c.comm() != nullptr ? c.comm()->rank() : 0;
    const detail::StencilPlan p = detail::plan_stencil(
        c.node().attrs,
        shapes,
        g.num_ranks(),
        rank,
        [&](const std::string& field, const std::string& detail) {
          c.fail(field, detail);
        });
    Shape out = p.sum_batch ? Shape{} : p.batch;
    const Shape patch = g.local_shape(rank);
    out.insert(out.end(), patch.begin(), patch.end());
    return Shapes{out};
  };
  def.bind = [](const Node& n) {
    std::vector<Shape> shapes;
    for (const Value& in : n.inputs) shapes.push_back(in.shape());
    const int rank = n.comm != nullptr ? n.comm->rank() : 0;
    detail::StencilPlan p = detail::plan_stencil(
        n.attrs,
        shapes,
        n.comm != nullptr ? n.comm->size() : 1,
        rank,
        [&](const std::string& field, const std::string& detail) {
          throw GraphError(detail, n.name, "stencil", field);
        });
    return detail::stencil_kernel(std::move(p));
  };
  def.gradient = stencil_gradient;
  def.tangent = stencil_tangent;
  register_op(std::move(def));
}

}  // namespace adgraph::grid
