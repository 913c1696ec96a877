#include "core/loops/loop.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <utility>

#include "core/ad/gradients.h"
#include "core/ad/jvp.h"
#include "core/check.h"
#include "core/core_ops.h"
#include "core/error.h"
#include "core/loops/loop_impl.h"
#include "core/op.h"

namespace adgraph {
namespace {

using namespace detail;

std::string every_rank_signature(const Graph& g) {
  std::string out;
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (!n.every_rank) continue;
    out += n.op_name() + n.attrs.dump();
    if (shapes_differ_by_rank(n)) {
      out += kRankShapes;
    } else {
      for (const Value& in : n.inputs) out += shape_string(in.shape());
    }
    if (n.loop) out += "{" + n.loop->signature() + "}";
    out += ";";
  }
  return out;
}

void check_spec_inputs(const ShapeContext& c, int expected) {
  if (!c.node().loop) {
    c.fail("op",
           "a " + c.node().op_name() +
               " node is built by loop() (or a JSON repeat block), not by "
               "name");
  }
  if (c.num_inputs() != expected) {
    c.fail("inputs",
           "expected " + std::to_string(expected) + " inputs, got " +
               std::to_string(c.num_inputs()));
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// LoopSpec.

bool LoopSpec::communicates() const {
  return forward.graph->num_communication_nodes() > 0 ||
         (reverse.graph && reverse.graph->num_communication_nodes() > 0);
}

bool LoopSpec::has_every_rank_node() const {
  return signature_.find(';') != std::string::npos;
}

std::shared_ptr<CommContext> LoopSpec::shared_comm() const {
  if (forward.graph->shared_comm()) return forward.graph->shared_comm();
  return reverse.graph ? reverse.graph->shared_comm() : nullptr;
}

std::vector<int64_t> LoopSpec::tape_positions() const {
  return detail::tape_positions(schedule, trips);
}

int64_t LoopSpec::state_elements() const {
  int64_t n = 0;
  for (int k = 0; k < num_carries; ++k)
    n += num_elements(forward.inputs[k].shape());
  return n;
}

int64_t LoopSpec::snapshots_bound() const {
  const int64_t n = trips, p = schedule.parameter;
  int64_t held = n;
  if (schedule.kind == CheckpointSchedule::Kind::kEvery)
    held = (n + p - 1) / p + p;
  else if (schedule.kind == CheckpointSchedule::Kind::kBinomial)
    held = std::min(p, n) + 1;
  return std::max(held, static_cast<int64_t>(tape_positions().size()));
}

namespace {

// Body runs of the loop nodes of `g` (one run of each).
double nested_body_steps(const Graph* g) {
  double steps = 0;
  if (g == nullptr) return steps;
  for (int id = 0; id < g->num_nodes(); ++id)
    if (const LoopSpec* inner = g->node(id).loop.get())
      steps += inner->body_steps();
  return steps;
}

}  // namespace

double LoopSpec::recomputed_steps() const {
  if (kind != Kind::kAdjoint) return 0;
  const double n = static_cast<double>(trips);
  const double p = static_cast<double>(schedule.parameter);
  switch (schedule.kind) {
    case CheckpointSchedule::Kind::kEvery:
      return n - 1 + (std::ceil(n / p) - 1) * (p - 1);
    case CheckpointSchedule::Kind::kBinomial:
      return static_cast<double>(binomial_forward_steps(
          trips, std::max<int64_t>(1, schedule.parameter)));
    default:
      return n - 1;
  }
}

double LoopSpec::body_steps() const {
  const double n = static_cast<double>(trips);
  const double forward_run = 1 + nested_body_steps(forward.graph.get());
  if (kind == Kind::kForward) return n * forward_run;
  return (recomputed_steps() + n) * forward_run +
         n * (1 + nested_body_steps(reverse.graph.get()));
}

void LoopSpec::finish() {
  signature_ = every_rank_signature(*forward.graph);
  // Appended in two steps: GCC 12 takes `"|" + std::string&&` for an
  // overflowing memcpy here (-Wstringop-overflow, a false positive).
  if (reverse.graph)
    signature_.append("|").append(every_rank_signature(*reverse.graph));
  if (signature_ == "|") signature_.clear();
}

namespace {

// A body step runs the nodes its carries and outputs need: a nonblocking
// request started there must be completed there, exactly once, by one of
// them (as Session::check_requests asks of a run), or the step would leave
// it pending or skip it without a word.
void check_body_requests(const Graph& body,
                         const std::vector<Value>& results,
                         const std::string& label) {
  std::vector<int> roots;
  for (const Value& v : results) roots.push_back(v.node_id());
  const std::vector<char> needed = detail::needed_nodes(body, roots);
  std::vector<int> completions(body.num_nodes(), 0);
  for (int id = 0; id < body.num_nodes(); ++id) {
    if (!needed[id]) continue;
    for (const Value& in : body.node(id).inputs) ++completions[in.node_id()];
  }
  for (int id = 0; id < body.num_nodes(); ++id) {
    const Node& n = body.node(id);
    if (!n.op->request || completions[id] == 1) continue;
    throw GraphError(
        completions[id] == 0
            ? "its request is never completed in a step of loop \"" + label +
                  "\": a request started in a loop body must be waited for "
                  "(mpi_wait, mpi_waitall) by a node the body's carries or "
                  "outputs need"
            : "its request is completed " + std::to_string(completions[id]) +
                  " times in a step of loop \"" + label +
                  "\"; wait for a request exactly once",
        n.name,
        n.op_name(),
        "request");
  }
}

// Throws unless the body returned one carry per initial carry, each of its
// shape, and outputs of its own graph.
void check_body_result(const LoopStep& result,
                       const std::vector<Value>& init,
                       const Graph& body,
                       const std::string& label) {
  const Graph* bg = &body;
  if (result.carries.size() != init.size()) {
    throw GraphError("the body returned " +
                         std::to_string(result.carries.size()) +
                         " carries for " + std::to_string(init.size()),
                     label,
                     "loop",
                     "body");
  }
  for (std::size_t k = 0; k < init.size(); ++k) {
    const Value& out = result.carries[k];
    const std::string field =
        "carry " + std::to_string(k) + " (\"" + init[k].name() + "\")";
    if (!out.valid() || &out.graph() != bg)
      throw GraphError(
          "the body returned a value of another graph", label, "loop", field);
    if (out.shape() != init[k].shape()) {
      throw ShapeError("the body maps shape " + shape_string(init[k].shape()) +
                           " to " + shape_string(out.shape()),
                       label,
                       "loop",
                       field);
    }
  }
  for (std::size_t j = 0; j < result.outputs.size(); ++j) {
    const Value& out = result.outputs[j];
    if (!out.valid() || &out.graph() != bg)
      throw GraphError("the body returned a value of another graph",
                       label,
                       "loop",
                       "output " + std::to_string(j));
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// The public API.

const FieldTable<LoopOptions>& LoopOptions::fields() {
  using O = LoopOptions;
  static const FieldTable<O> table = {
      field("name", &O::name, {}, "the loop node's name (empty: loop_<id>)"),
      field("checkpoints",
            &O::checkpoints,
            {},
            "the adjoint's schedule (default: the graph's)"),
      field("output_steps",
            &O::output_steps,
            Range::at_least(0),
            "steps whose outputs are kept, increasing (empty: every step)"),
  };
  return table;
}

bool LoopOptions::is_valid(int64_t trips,
                           std::string* error,
                           std::string* field) const {
  auto bad = [&](const std::string& option, std::string why) {
    return invalid_option(error, field, option.c_str(), std::move(why));
  };
  // Each field's range, from the table ("output_steps: every entry must be
  // >= 0, got -1").
  std::string why, name;
  if (!check_fields(fields(), *this, &why, &name)) return bad(name, why);
  // What the table cannot say: the order of the steps and their bound,
  // which is the loop's trip count.
  for (std::size_t i = 0; i < output_steps.size(); ++i) {
    const int64_t t = output_steps[i];
    if (t >= trips || (i > 0 && t <= output_steps[i - 1])) {
      return bad("output_steps",
                 "output steps must increase strictly within [0, " +
                     std::to_string(trips) + "); entry " + std::to_string(i) +
                     " is " + std::to_string(t));
    }
  }
  // The schedule's own checks (its grammar's ranges), unless it is the
  // graph's default.
  if (checkpoints.kind != CheckpointSchedule::Kind::kDefault &&
      !checkpoints.is_valid(&why))
    return bad("checkpoints", why);
  return true;
}

namespace {

// The body graph of a loop: the step body builds on placeholders for the
// carries, the invariants and the step, checked (its result, no new
// placeholders, its requests completed). `args` keeps the placeholders.
LoopStep build_body(Graph& bg,
                    const LoopBodyFn& body,
                    const std::vector<Value>& init,
                    const std::vector<Value>& invariants,
                    const std::string& label,
                    LoopArgs& args) {
  args.graph = &bg;
  args.carries = placeholders(bg, "carry", init);
  args.invariants = placeholders(bg, "invariant", invariants);
  args.step = bg.placeholder("step", {});
  LoopStep result;
  try {
    result = body(args);
  } catch (const GraphError& e) {
    if (e.detail() != "not a value of this graph") throw;
    throw GraphError("not a value of the body of loop \"" + label +
                         "\" (pass values of the outer graph as invariants)",
                     e.node(),
                     e.op(),
                     e.field());
  }
  check_body_result(result, init, bg, label);
  const int num_inputs = as_int(init.size() + invariants.size()) + 1;
  for (int id = 0; id < bg.num_nodes(); ++id) {
    const Node& n = bg.node(id);
    if (n.op_name() == "placeholder" && id >= num_inputs) {
      throw GraphError(
          "a loop body cannot create placeholders", n.name, "placeholder");
    }
  }
  check_body_requests(bg, join({result.carries, result.outputs}), label);
  return result;
}

}  // namespace

LoopResult loop(int64_t trips,
                const std::vector<Value>& init,
                const std::vector<Value>& invariants,
                const LoopBodyFn& body,
                LoopOptions options) {
  register_loops_layer();
  if (init.empty() && invariants.empty())
    throw GraphError(
        "a loop needs at least one carry or invariant", options.name, "loop");
  const Value& any = init.empty() ? invariants[0] : init[0];
  if (!any.valid())
    throw GraphError("invalid loop input", options.name, "loop");
  Graph& g = any.graph();
  const std::string label = options.name.empty()
                                ? "loop_" + std::to_string(g.num_nodes())
                                : options.name;
  for (const Value& v : join({init, invariants})) {
    if (!v.valid() || &v.graph() != &g)
      throw GraphError(
          "loop inputs must be values of one graph", label, "loop", "inputs");
  }
  if (trips < 1) {
    throw GraphError(
        "the trip count must be >= 1, got " + std::to_string(trips),
        label,
        "loop",
        "trips");
  }
  std::string error, field;
  if (!options.is_valid(trips, &error, &field)) {
    if (field == "checkpoints") throw OptionsError(error, label, "loop", field);
    throw GraphError(error, label, "loop", field);
  }
  CheckpointSchedule schedule = options.checkpoints;
  if (schedule.kind == CheckpointSchedule::Kind::kDefault)
    schedule = g.default_checkpoints();
  schedule = schedule.resolved(trips);  // auto: about sqrt(2·trips) snapshots
  if (!schedule.is_valid(&error))
    throw OptionsError(error, label, "loop", "checkpoints");

  auto bg = new_body_graph(g);
  LoopArgs args;
  const LoopStep result = build_body(*bg, body, init, invariants, label, args);
  auto spec = std::make_shared<LoopSpec>();
  spec->trips = trips;
  spec->num_carries = as_int(init.size());
  spec->num_invariants = as_int(invariants.size());
  spec->num_step_outputs = as_int(result.outputs.size());
  spec->output_steps = options.output_steps;
  spec->forward = {bg,
                   join({args.carries, args.invariants, {args.step}}),
                   join({result.carries, result.outputs})};
  if (schedule.kind == CheckpointSchedule::Kind::kMemoryBudget) {
    const int64_t bytes = std::max<int64_t>(1, spec->state_elements() * 8);
    // c_0 is always kept: a budget below one state cannot be honoured.
    if (schedule.parameter < bytes) {
      throw OptionsError("a budget of " + std::to_string(schedule.parameter) +
                             " B holds no snapshot of the loop's state (" +
                             std::to_string(bytes) +
                             " B: every carry once); give at least " +
                             std::to_string(bytes) + " B",
                         label,
                         "loop",
                         "checkpoints");
    }
    schedule = CheckpointSchedule::binomial(
        std::clamp<int64_t>(schedule.parameter / bytes, 1, trips));
  } else if (schedule.kind == CheckpointSchedule::Kind::kBinomial) {
    schedule.parameter = std::min(schedule.parameter, trips);
  }
  spec->schedule = schedule;
  std::vector<Value> out =
      add_loop_node(g, "loop", join({init, invariants}), spec, options.name);
  LoopResult r;
  r.carries = take(out, 0, spec->num_carries);
  r.outputs = take(out, spec->num_carries, spec->num_step_outputs);
  r.node = out[0];
  return r;
}

LoopStats loop_stats(const Value& node) {
  if (!node.valid() || !node.node().loop)
    throw GraphError("not a loop node", node.valid() ? node.name() : "");
  const LoopSpec& spec = *node.node().loop;
  LoopStats s;
  s.forward_steps = spec.stats.forward_steps;
  s.taped_steps = spec.stats.taped_steps;
  s.max_snapshots = spec.stats.max_snapshots;
  s.snapshot_bytes = spec.stats.snapshot_bytes;
  s.schedule = spec.schedule.describe();
  return s;
}

std::vector<Value> loop_adjoints(const Value& loop_node) {
  if (!loop_node.valid() || !loop_node.node().loop)
    throw GraphError("not a loop node",
                     loop_node.valid() ? loop_node.name() : "");
  std::vector<Value> out;
  for (const auto& [g, id] : loop_node.node().loop->adjoints) {
    if (g == &loop_node.graph()) out.emplace_back(g, id, 0);
  }
  return out;
}

LoopResult loop(int64_t trips,
                const std::vector<Value>& init,
                const std::vector<Value>& invariants,
                const std::vector<Value>& xs,
                const LoopBodyFn& body,
                LoopOptions options) {
  for (std::size_t k = 0; k < xs.size(); ++k) {
    if (!xs[k].valid() || xs[k].shape().empty() || xs[k].shape()[0] != trips) {
      throw GraphError("xs[" + std::to_string(k) +
                           "] must have a first axis of " +
                           std::to_string(trips) + " rows (one a step), got " +
                           (xs[k].valid() ? shape_string(xs[k].shape())
                                          : "an invalid value"),
                       options.name,
                       "loop",
                       "xs");
    }
  }
  const std::size_t ni = invariants.size();
  return loop(
      trips,
      init,
      join({invariants, xs}),
      [&](const LoopArgs& a) {
        LoopArgs b = a;
        b.invariants.resize(ni);
        for (std::size_t k = 0; k < xs.size(); ++k)
          b.xs.push_back(step_row(a.invariants[ni + k], a.step));
        return body(b);
      },
      std::move(options));
}

Value step_row(Value x, Value t) {
  return x.graph().add_node("step_row", {x, t});
}
Value row_add(Value a, Value r, Value t) {
  return a.graph().add_node("row_add", {a, r, t});
}

namespace {

// Row t of a [rows, …] tensor: its offset and length; ADGRAPH_CHECK on an
// index the shape rule could not see (t is a value).
int64_t row_of(const Tensor& x, const Tensor& t) {
  const int64_t row = static_cast<int64_t>(t[0]);
  if (!(t[0] >= 0 && row < x.shape()[0] && static_cast<double>(row) == t[0]))
    throw RunError("step index " + std::to_string(t[0]) +
                   " is not a row of a tensor of " +
                   std::to_string(x.shape()[0]) + " rows");
  return row;
}

void register_step_row_op() {
  // y = x[t];  x̄ = row_add(x̄ so far, ȳ, t)
  OpDef def("step_row", "y = row t of x (a loop's per-step input)", {"x", "t"});
  def.shape = [](const ShapeContext& c) {
    const Shape& x = c.input_shape(0);
    if (x.empty()) c.fail("input \"x\"", "a scalar has no rows");
    if (!c.input_shape(1).empty()) c.fail("input \"t\"", "must be a scalar");
    return Shapes{Shape(x.begin() + 1, x.end())};
  };
  def.compute = [](KernelContext& c) {
    const Tensor& x = c.input(0);
    const int64_t n = c.output(0).size();
    std::copy_n(x.data() + row_of(x, c.input(1)) * n, n, c.output(0).data());
  };
  def.gradient = [](const GradientContext& c) {
    Value base = c.accumulated(0);
    if (base.valid()) {
      c.absorb(0);
    } else {
      base = zeros(c.graph(), c.input(0).shape());
    }
    return Values{row_add(base, c.grad(0), c.input(1)), Value()};
  };
  def.tangent = [](const TangentContext& c) {
    if (!c.tangent(0).valid()) return Values{Value()};
    return Values{step_row(c.tangent(0), c.input(1))};
  };
  register_op(std::move(def));
}

void register_row_add_op() {
  // y = a, y[t] += r;  ā = ȳ, r̄ = ȳ[t]
  OpDef def("row_add", "y = a with r added to row t", {"a", "r", "t"});
  def.shape = [](const ShapeContext& c) {
    const Shape& a = c.input_shape(0);
    if (a.empty() || Shape(a.begin() + 1, a.end()) != c.input_shape(1))
      c.fail("input \"r\"",
             "shape " + shape_string(c.input_shape(1)) + " is not a row of " +
                 shape_string(a));
    if (!c.input_shape(2).empty()) c.fail("input \"t\"", "must be a scalar");
    return Shapes{a};
  };
  def.in_place = {{0, 0}};
  def.compute = [](KernelContext& c) {
    const Tensor& a = c.input(0);
    Tensor& y = c.output(0);
    if (y.data() != a.data()) y.array() = a.array();
    const Tensor& r = c.input(1);
    double* row = y.data() + row_of(a, c.input(2)) * r.size();
    for (int64_t i = 0; i < r.size(); ++i) row[i] += r[i];
  };
  def.gradient = [](const GradientContext& c) {
    return Values{c.grad(0), step_row(c.grad(0), c.input(2)), Value()};
  };
  def.tangent = [](const TangentContext& c) {
    if (!c.tangent(0).valid() && !c.tangent(1).valid()) return Values{Value()};
    return Values{
        row_add(c.tangent_or_zeros(0), c.tangent_or_zeros(1), c.input(2))};
  };
  register_op(std::move(def));
}

// What loop and loop_adjoint share: inputs given by the node's LoopSpec
// (variadic), outputs by its shape rule, and the trips and schedule.
OpDef loop_def(const char* name, const char* doc) {
  OpDef def(name, doc, {"inputs"});
  def.variadic = true;
  def.attrs = {
      {"trips", AttrType::kInt, nlohmann::json(), "number of steps n", 1},
      {"checkpoints", AttrType::kString, "", "the adjoint's schedule"}};
  def.num_outputs = 0;
  return def;
}

// loop: c_n, the stacked step outputs, and the tape's ticket (0: nothing
// taped).
Shapes loop_shapes(const ShapeContext& c) {
  const LoopSpec* spec = c.node().loop.get();
  check_spec_inputs(c, spec ? spec->num_carries + spec->num_invariants : 0);
  Shapes out;
  for (int k = 0; k < spec->num_carries; ++k) out.push_back(c.input_shape(k));
  for (int j = 0; j < spec->num_step_outputs; ++j) {
    out.push_back(
        stacked(*spec, spec->forward.outputs[spec->num_carries + j].shape()));
  }
  out.push_back(Shape{1});
  return out;
}

// loop_adjoint: the cotangents of the reverse inputs.
Shapes loop_adjoint_shapes(const ShapeContext& c) {
  const LoopSpec* spec = c.node().loop.get();
  check_spec_inputs(c,
                    spec ? spec->num_carries + spec->num_invariants +
                               spec->num_reverse + spec->num_step_cotangents +
                               as_int(spec->next_carries.size()) + spec->taped
                         : 0);
  Shapes out;
  const int first = spec->num_carries + spec->num_invariants;
  for (int k = 0; k < spec->num_reverse; ++k)
    out.push_back(c.input_shape(first + k));
  return out;
}

}  // namespace

void register_loops_layer() {
  static std::once_flag once;
  std::call_once(once, register_loop_ops);
}

void register_loop_ops() {
  OpDef loop =
      loop_def("loop",
               "c_{t+1}, y_t = body(c_t, invariants, t) for t < trips; "
               "outputs c_n, the stacked y and the tape");
  loop.shape = loop_shapes;
  loop.compute = run_loop;
  loop.gradient = loop_gradient;
  loop.tangent = loop_tangent;
  register_op(std::move(loop));

  OpDef adjoint = loop_def(
      "loop_adjoint",
      "the cotangents of a loop's initial carries and invariants, stepping "
      "its body's adjoint back under a checkpoint schedule");
  adjoint.shape = loop_adjoint_shapes;
  adjoint.compute = run_loop_adjoint;
  adjoint.tangent = loop_adjoint_tangent;
  register_op(std::move(adjoint));
  register_step_row_op();
  register_row_add_op();
}

}  // namespace adgraph
