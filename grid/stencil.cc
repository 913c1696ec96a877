#include "grid/stencil.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/op.h"
#include "grid/grid_ops_impl.h"
#include "grid/halo.h"
#include "grid/stencil_impl.h"
#include "grid/stencil_shared.h"
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
      inputs_,
      grid_);
}

StencilExpr field(Value v) {
  if (!v.valid()) throw OptionsError("grid::field: an invalid Value");
  return StencilExpr(read(0), {v});
}

StencilExpr field(const Grid& grid, Value v) {
  StencilExpr e = field(std::move(v));
  return StencilExpr(e.tree(), e.inputs(), std::make_shared<Grid>(grid));
}

namespace {

// The same grid: the same decomposition on the same communicator.
bool same_grid(const Grid& a, const Grid& b) {
  return a.comm() == b.comm() && a.layout().shape == b.layout().shape &&
         a.layout().procs == b.layout().procs &&
         a.layout().periodic == b.layout().periodic;
}

std::string grid_text(const Grid& g) {
  std::string procs;
  for (int p : g.layout().procs)
    procs += (procs.empty() ? "" : "x") + std::to_string(p);
  return "shape " + shape_string(g.layout().shape) + " over " + procs +
         " processes";
}

}  // namespace

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
        throw OptionsError(
            "stencil expression: " + op + ": \"" + inputs[0].node().name +
            "\" and \"" + v.node().name +
            "\" belong to two graphs (inside a loop body, a Value from "
            "outside is read through the loop's invariants: "
            "args.invariants[k])");
      to.push_back(static_cast<int>(it - inputs.begin()));
      if (it == inputs.end()) inputs.push_back(v);
    }
    trees.push_back(renumbered(a.tree(), to));
  }
  std::shared_ptr<const Grid> grid;
  for (const StencilExpr& a : args) {
    if (!a.grid()) continue;
    if (grid && !same_grid(*grid, *a.grid()))
      throw OptionsError("stencil expression: " + op +
                         ": fields of two grids (" + grid_text(*grid) +
                         ", and " + grid_text(*a.grid()) +
                         "): a stencil runs on one grid");
    if (!grid) grid = a.grid();
  }
  return StencilExpr(
      apply(op, std::move(trees)), std::move(inputs), std::move(grid));
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

// One output of a stencil node being built: its expression over the
// builder's inputs, whether it sums over the batch, the input it starts
// from (-1: none).
struct OutputSpec {
  ExprPtr expr;
  bool summed = false;
  int init = -1;
};

// Adds a stencil node with `outputs` over `inputs`, keeping only the inputs
// they read (renumbered in order), on the communicator `comm`.
std::vector<Value> stencil_node(const GridLayout& layout,
                                std::shared_ptr<CommContext> comm,
                                const std::vector<OutputSpec>& outputs,
                                const std::vector<Value>& inputs,
                                const std::string& name = {},
                                const std::vector<bool>& prefetch = {}) {
  register_grid_layer();
  std::vector<bool> used(inputs.size(), false);
  for (const OutputSpec& o : outputs) {
    for (const ReadKey& r : reads_of(o.expr, layout.ndim()))
      used[r.input] = true;
    if (o.init >= 0) used[o.init] = true;
  }
  std::vector<int> to(inputs.size(), -1);
  std::vector<Value> kept;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (!used[k]) continue;
    to[k] = static_cast<int>(kept.size());
    kept.push_back(inputs[k]);
  }
  if (kept.empty())
    throw OptionsError(
        "stencil: the expression reads no input (after simplification: "
        "U − U or U·0 is the number 0, which has no patch shape; add a "
        "field, or use a constant array)");
  std::string text;
  std::vector<int64_t> summed, init;
  for (const OutputSpec& o : outputs) {
    if (!text.empty()) text += ';';
    text += print(renumbered(o.expr, to));
    summed.push_back(o.summed ? 1 : 0);
    init.push_back(o.init >= 0 ? to[o.init] : -1);
  }
  nlohmann::json attrs = layout.attrs();
  attrs["expr"] = text;
  attrs["sum_batch"] = summed;
  attrs["init"] = init;
  std::vector<int64_t> streamed;
  for (std::size_t k = 0; k < prefetch.size() && k < inputs.size(); ++k)
    if (prefetch[k] && to[k] >= 0) streamed.push_back(to[k]);
  if (!streamed.empty()) attrs["prefetch"] = streamed;
  NodeOptions options;
  options.name = name;
  options.comm = std::move(comm);
  return kept[0].graph().add_node_outputs(
      "stencil", kept, attrs, std::move(options));
}

}  // namespace

Value stencil(const Grid& grid,
              const StencilExpr& expr,
              const std::string& name) {
  if (expr.grid() && !same_grid(*expr.grid(), grid))
    throw OptionsError(
        "stencil: the expression's fields belong to another "
        "grid (" +
        grid_text(*expr.grid()) + ") than this node's (" + grid_text(grid) +
        ")");
  return stencil_node(
      grid.layout(), grid.comm(), {{expr.tree()}}, expr.inputs(), name)[0];
}

Value stencil(const Grid& grid,
              const std::string& text,
              const std::vector<Value>& inputs,
              const std::string& name) {
  register_grid_layer();
  if (inputs.empty()) throw OptionsError("stencil: no inputs");
  nlohmann::json attrs = grid.layout().attrs();
  attrs["expr"] = text;
  NodeOptions o;
  o.name = name;
  o.comm = grid.comm();
  return inputs[0].graph().add_node("stencil", inputs, attrs, std::move(o));
}

// ---- Derivatives ---------------------------------------------------------

namespace {

// The names of the nodes that made n's inputs, for its messages.
std::vector<std::string> input_names(const Node& n) {
  std::vector<std::string> names;
  for (const Value& in : n.inputs) names.push_back(in.name());
  return names;
}

struct NodeView {
  GridLayout layout;
  detail::StencilPlan plan;
  int ndim;
  std::vector<bool> scalar, batched;
  bool any_batched = false;
};

NodeView view_of(const Node& n) {
  NodeView v;
  v.layout = detail::layout_of(n);
  v.ndim = v.layout.ndim();
  std::vector<Shape> shapes;
  for (const Value& in : n.inputs) {
    shapes.push_back(in.shape());
    v.scalar.push_back(in.shape().empty());
    v.batched.push_back(static_cast<int>(in.shape().size()) > v.ndim);
    v.any_batched = v.any_batched || v.batched.back();
  }
  const int rank = n.comm != nullptr ? n.comm->rank() : 0;
  v.plan =
      detail::plan_stencil(n.attrs,
                           shapes,
                           input_names(n),
                           1,
                           rank,
                           [&](const std::string& f, const std::string& d) {
                             throw GraphError(d, n.name, "stencil", f);
                           });
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

// Σ_k inside(−s_k)·(ȳ·∂f/∂r_k)(· − s_k) over the reads r_k of input i in
// `f`, in the order of their offsets; ȳ is input `ybar`. Added to `sum`.
ExprPtr gather_adjoint(
    const NodeView& v, const ExprPtr& f, int i, int ybar, ExprPtr sum) {
  std::vector<bool> fixed = v.scalar;  // scalars are not moved; ȳ is a field
  fixed.resize(ybar + 1, false);
  for (const ReadKey& r : reads_of(f, v.ndim)) {
    if (r.input != i) continue;
    ExprPtr partial = derivative(
        f,
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

// Whether `e` is the number 0: a derivative that simplified away (the
// gather terms of U − U are ȳ·(1 − 1) = 0), whose gradient is zeros, not
// a node that reads no input.
bool is_zero(const ExprPtr& e) { return e->op == "const" && e->value == 0.0; }

// Σ_m ȳ_m·∂f_m/∂s at each point, for a scalar input i.
ExprPtr scalar_terms(const NodeView& v, int i, const std::vector<int>& ybar) {
  ExprPtr sum;
  for (std::size_t m = 0; m < ybar.size(); ++m) {
    if (ybar[m] < 0) continue;
    ExprPtr partial = derivative(
        v.plan.outputs[m],
        [&](const ReadKey& k) { return k.input == i ? constant(1) : nullptr; },
        v.ndim);
    if (!partial) continue;
    ExprPtr term = apply("mul", {read(ybar[m]), partial});
    sum = sum ? apply("add", {sum, term}) : term;
  }
  return sum;
}

// Whether `v` is a loop body's carry (core/loops: the placeholders named
// "carry[k]"): in an adjoint body, a state fed from the loop's tape or
// recomputed, likely read back from memory, so its kernel prefetches it.
bool is_loop_carry(const Value& v) {
  const Node& n = v.node();
  return n.op_name() == "placeholder" && n.name.rfind("carry[", 0) == 0;
}

// The adjoint's stencil node: a refusal (a halo too wide for the patches)
// names the node the user made, whose gradient it is.
std::vector<Value> adjoint_node(const NodeView& v,
                                const Node& n,
                                const std::vector<OutputSpec>& specs,
                                const std::vector<Value>& inputs,
                                const std::vector<bool>& prefetch = {}) {
  try {
    return stencil_node(v.layout, n.comm, specs, inputs, {}, prefetch);
  } catch (const ShapeError& e) {
    throw ShapeError(
        "its gradient's node refuses " + e.field() + ": " + e.detail() +
            " (the gradient reads a field the expression is not linear in "
            "at up to twice the expression's offsets: docs/STENCILS.md, "
            "\"Limits\")",
        n.name,
        "stencil");
  }
}

// x̄_i for every field input i in one node (one pass): the gather terms of
// every output m with a cotangent, then ȳ_m itself where output m starts
// from input i. A cotangent summed so far for x_i (by later users) starts
// the output, which saves a pass adding it.
Values stencil_gradient(const GradientContext& c) {
  const Node& n = c.node();
  const NodeView v = view_of(n);
  const int ni = static_cast<int>(n.inputs.size());
  std::vector<Value> inputs(n.inputs.begin(), n.inputs.end());
  std::vector<int> ybar(v.plan.outputs.size(), -1);
  for (std::size_t m = 0; m < ybar.size(); ++m) {
    if (c.grad(static_cast<int>(m)).node().op_name() == "zeros") continue;
    ybar[m] = static_cast<int>(inputs.size());
    inputs.push_back(c.grad(static_cast<int>(m)));
  }
  Values out(ni);
  std::vector<OutputSpec> specs;
  std::vector<int> owner;  // input of each output
  for (int i = 0; i < ni; ++i) {
    if (!c.needs_gradient(i)) continue;
    if (v.scalar[i]) {
      ExprPtr t = scalar_terms(v, i, ybar);
      if (t && !is_zero(t))
        out[i] = sum(adjoint_node(v, n, {{t, v.any_batched}}, inputs)[0]);
      continue;
    }
    ExprPtr g;
    for (std::size_t m = 0; m < ybar.size(); ++m) {
      if (ybar[m] < 0) continue;
      g = gather_adjoint(v, v.plan.outputs[m], i, ybar[m], g);
      if (v.plan.init[m] == i)
        g = g ? apply("add", {g, read(ybar[m])}) : read(ybar[m]);
    }
    if (!g || is_zero(g)) continue;  // U − U: no gradient, zeros
    OutputSpec spec{g, !v.batched[i] && v.any_batched, -1};
    if (c.accumulated(i).valid() &&
        c.accumulated(i).shape() == n.inputs[i].shape()) {
      spec.init = static_cast<int>(inputs.size());
      inputs.push_back(c.accumulated(i));
      c.absorb(i);
    }
    specs.push_back(spec);
    owner.push_back(i);
  }
  if (specs.empty()) return out;
  std::vector<bool> prefetch(inputs.size(), false);
  for (int i = 0; i < ni; ++i)
    prefetch[i] = !v.scalar[i] && is_loop_carry(n.inputs[i]);
  const std::vector<Value> r = adjoint_node(v, n, specs, inputs, prefetch);
  for (std::size_t k = 0; k < owner.size(); ++k) out[owner[k]] = r[k];
  return out;
}

// (output, input) pairs that may share a buffer: an output that starts
// from a field input (y = init + value: a cotangent summed so far) which
// no expression reads and no other output starts from. The kernel reads
// init[i] before it writes y[i], point by point (grid/stencil_codegen.h).
std::vector<std::pair<int, int>> stencil_in_place(const Node& n) {
  const NodeView v = view_of(n);
  std::vector<int> starts(n.inputs.size(), 0);
  for (int j : v.plan.init)
    if (j >= 0) ++starts[j];
  std::vector<std::pair<int, int>> pairs;
  for (std::size_t m = 0; m < v.plan.init.size(); ++m) {
    const int j = v.plan.init[m];
    if (j < 0 || v.scalar[j] || starts[j] != 1) continue;
    bool read = false;
    for (const ExprPtr& e : v.plan.outputs)
      for (const ReadKey& r : reads_of(e, v.ndim)) read = read || r.input == j;
    if (!read) pairs.emplace_back(static_cast<int>(m), j);
  }
  // An output neither summed nor started from an input may be written over
  // a field input of its shape that every output reads at the point only,
  // once terms read at several points are shared (grid/stencil_shared.h):
  // the kernel reads each point before it writes it.
  if (v.ndim < 2) return pairs;
  StencilSource src;
  src.outputs = v.plan.outputs;
  src.init = v.plan.init;
  src.ndim = v.ndim;
  src.num_inputs = static_cast<int>(n.inputs.size());
  src.scalar = v.scalar;
  src.shared = detail::shares_terms(v.ndim);
  // Overlapped, a later call's rows of terms would read points an earlier
  // call wrote: inputs a term reads are left out.
  const std::vector<bool> only =
      detail::read_at_point_only(src, v.plan.overlapped());
  for (std::size_t m = 0; m < v.plan.outputs.size(); ++m) {
    if (v.plan.summed[m] || v.plan.init[m] >= 0) continue;
    for (std::size_t j = 0; j < n.inputs.size(); ++j)
      if (only[j] && n.inputs[j].shape() == n.output_shapes[m])
        pairs.emplace_back(static_cast<int>(m), static_cast<int>(j));
  }
  return pairs;
}

// ẏ_m = Σ_k ∂f_m/∂r_k·ṙ_k (+ the initial input's tangent), every output in
// one node.
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
  std::vector<OutputSpec> specs;
  bool any = false;
  for (std::size_t m = 0; m < v.plan.outputs.size(); ++m) {
    ExprPtr t = derivative(
        v.plan.outputs[m],
        [&](const ReadKey& k) -> ExprPtr {
          return tangent_of[k.input] < 0 ? nullptr
                                         : read(tangent_of[k.input], k.offset);
        },
        v.ndim);
    const int init = v.plan.init[m] >= 0 ? tangent_of[v.plan.init[m]] : -1;
    any = any || t || init >= 0;
    specs.push_back({t ? t : constant(0), v.plan.summed[m], init});
  }
  if (!any) return Values(v.plan.outputs.size());
  const std::vector<Value> r = stencil_node(v.layout, n.comm, specs, inputs);
  return Values(r.begin(), r.end());
}

std::vector<AttrSpec> stencil_attrs() {
  std::vector<AttrSpec> a = detail::grid_attr_specs();
  a.push_back(
      {"expr",
       AttrType::kString,
       nlohmann::json(),
       "one expression per output, separated by ';' (grid/stencil_expr.h)"});
  a.push_back({"sum_batch",
               AttrType::kInts,
               nlohmann::json::array(),
               "per output, 1 to sum it over the batch axes (in batch order); "
               "empty: none"});
  a.push_back(
      {"init",
       AttrType::kInts,
       nlohmann::json::array(),
       "per output, the input it starts from (y = init + value), -1 for none"});
  a.push_back({"prefetch",
               AttrType::kInts,
               nlohmann::json::array(),
               "field inputs whose rows the kernel prefetches ahead of use "
               "(for a state read back from memory, as an adjoint reads its "
               "loop's taped states); no value changes; empty: none"});
  return a;
}

}  // namespace

void register_stencil_ops() {
  // y[i] = f(x_k[i + s]…) over the patch, halos exchanged as needed;
  // x̄_k[j] = Σ_m Σ_s inside(j − s)·(ȳ_m·∂f_m/∂r_s)(j − s): one stencil node
  // with an output per field input (grid/stencil.h)
  OpDef def = every_rank_op(
      "stencil", "y = a fused stencil expression over grid fields and scalars");
  def.inputs = {"x"};
  def.variadic = true;
  def.attrs = stencil_attrs();
  def.input_docs = {
      "the fields ([batch..., patch...], this rank's patch; one without the "
      "batch axes is broadcast over them) and scalars ([]) the expression "
      "reads, in the order of its input numbers"};
  def.output_docs = {
      "one Value per expression of expr, in order: [batch..., patch...] (the "
      "batch summed away where sum_batch says 1)"};
  def.ranks_doc =
      "Every rank of the grid's communicator runs it. A read at an offset "
      "that falls in a neighbour's patch comes from that neighbour (the "
      "node exchanges halos as wide as the largest offset, with corners "
      "when a read moves on two axes); a read past a non-periodic edge of "
      "the grid gives 0, and a periodic axis wraps. Adjoint: one stencil "
      "node in gather form, bitwise the same on every decomposition.";
  def.num_outputs = 0;  // one per expression
  def.shapes_differ_by_rank = true;
  def.shape = [](const ShapeContext& c) {
    const GridLayout g = detail::checked_layout(c);
    std::vector<Shape> shapes;
    for (int i = 0; i < c.num_inputs(); ++i) shapes.push_back(c.input_shape(i));
    const int rank = c.comm() != nullptr ? c.comm()->rank() : 0;
    const detail::StencilPlan p = detail::plan_stencil(
        c.node().attrs,
        shapes,
        input_names(c.node()),
        g.num_ranks(),
        rank,
        [&](const std::string& field, const std::string& detail) {
          c.fail(field, detail);
        });
    Shapes out;
    for (std::size_t m = 0; m < p.outputs.size(); ++m)
      out.push_back(p.output_shape(static_cast<int>(m), g.local_shape(rank)));
    return out;
  };
  def.bind = [](const Node& n) {
    std::vector<Shape> shapes;
    for (const Value& in : n.inputs) shapes.push_back(in.shape());
    const int rank = n.comm != nullptr ? n.comm->rank() : 0;
    detail::StencilPlan p = detail::plan_stencil(
        n.attrs,
        shapes,
        input_names(n),
        n.comm != nullptr ? n.comm->size() : 1,
        rank,
        [&](const std::string& field, const std::string& detail) {
          throw GraphError(detail, n.name, "stencil", field);
        });
    return detail::stencil_kernel(std::move(p));
  };
  def.in_place_of = stencil_in_place;
  def.gradient = stencil_gradient;
  def.tangent = stencil_tangent;
  register_op(std::move(def));
}

}  // namespace adgraph::grid
