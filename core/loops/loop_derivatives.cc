// The derivative rules of loop and loop_adjoint (core/loops/loop.h): the
// adjoint loop a loop's gradient builds, and the tangent loops.
#include <map>
#include <set>
#include <utility>

#include "core/ad/gradients.h"
#include "core/ad/jvp.h"
#include "core/error.h"
#include "core/loops/loop_impl.h"
#include "core/op.h"

namespace adgraph::detail {

// ---------------------------------------------------------------------------
// Building loop nodes.

std::vector<Value> add_loop_node(Graph& g,
                                 const std::string& op,
                                 const Values& inputs,
                                 std::shared_ptr<LoopSpec> spec,
                                 const std::string& name) {
  spec->finish();
  if (!spec->cache) spec->cache = std::make_shared<detail::LoopCache>();
  NodeOptions options;
  options.name = name;
  options.loop = spec;
  options.body = spec->traits();
  return g.add_node_outputs(
      op,
      inputs,
      {{"trips", spec->trips}, {"checkpoints", spec->schedule.describe()}},
      std::move(options));
}

namespace {

// The carries whose node in the reverse body `reverse` the adjoint would
// compute again only to read c_{t+1} (a linear solve reads its solution):
// made of carries only, needed, not a body input, and not point-to-point
// (every rank skips the node together, so a collective may go; half of a
// send-receive pair may not).
std::vector<int> next_carries(const LoopBody& reverse, const Values& carries) {
  const Graph& g = *reverse.graph;
  std::vector<int> roots;
  for (const Value& v : reverse.outputs) roots.push_back(v.node_id());
  const std::vector<char> needed = needed_nodes(g, roots);
  std::vector<char> is_input(g.num_nodes(), 0);
  for (const Value& v : reverse.inputs) is_input[v.node_id()] = 1;
  std::map<int, std::set<int>> carried;  // node → its outputs that are carries
  for (const Value& v : carries) carried[v.node_id()].insert(v.output());
  std::vector<int> out;
  std::set<std::pair<int, int>> taken;
  for (int k = 0; k < as_int(carries.size()); ++k) {
    const int id = carries[k].node_id();
    const Node& n = g.node(id);
    const bool whole = as_int(carried[id].size()) == n.num_outputs();
    const bool collective =
        !n.communication || (n.every_rank && !n.op->request);
    if (needed[id] && !is_input[id] && whole && collective &&
        taken.insert({id, carries[k].output()}).second)
      out.push_back(k);
  }
  return out;
}

// `reverse` with c_{t+1} of `next` (indices into `carries`, its values of
// c_{t+1}) read from new inputs after its own instead of computed.
LoopBody reading_next_carries(const LoopBody& reverse,
                              const Values& carries,
                              const std::vector<int>& next) {
  auto g = new_body_graph(*reverse.graph);
  Values inputs;
  for (const Value& in : reverse.inputs)
    inputs.push_back(g->placeholder(in.name(), in.shape()));
  Replaced replaced;
  Values next_inputs;
  for (int k : next) {
    next_inputs.push_back(g->placeholder(
        "next_carry[" + std::to_string(k) + "]", carries[k].shape()));
    replaced[{carries[k].node_id(), carries[k].output()}] = next_inputs.back();
  }
  Values outputs = clone_body(reverse, *g, inputs, reverse.outputs, replaced);
  return {g, join({inputs, next_inputs}), outputs};
}

// The indices k < count for which keep(k) holds.
template <class Keep>
std::vector<int> indices_where(int count, Keep keep) {
  std::vector<int> out;
  for (int k = 0; k < count; ++k)
    if (keep(k)) out.push_back(k);
  return out;
}

// loop_adjoint's inputs: c₀, p, c̄ₙ, zeros for the wanted p̄, the present
// ȳ, the carries the reverse body reads (next_carries), and the tape.
Values adjoint_inputs(const GradientContext& c,
                      const LoopSpec& adj,
                      const std::vector<int>& wanted,
                      const std::vector<int>& present) {
  const Node& node = c.node();
  const int nc = adj.num_carries, ni = adj.num_invariants,
            ny = adj.num_step_outputs;
  Values inputs = take(node.inputs, 0, nc + ni);
  for (int k = 0; k < nc; ++k) inputs.push_back(c.grad(k));
  for (int j : wanted)
    inputs.push_back(zeros_like(c.graph(), node.inputs[nc + j].shape()));
  for (int j : present) inputs.push_back(c.grad(nc + j));
  for (int k : adj.next_carries) inputs.push_back(c.output(k));
  inputs.push_back(c.output(nc + ny));  // the tape
  return inputs;
}

}  // namespace

// y = loop(c₀, p);
// (c̄₀, p̄) = loop_adjoint(c₀, p, c̄ₙ, 0, ȳ, cₙ of next_carries, tape)
Values loop_gradient(const GradientContext& c) {
  const Node& node = c.node();
  const LoopSpec& spec = *node.loop;
  Graph& g = c.graph();
  const int nc = spec.num_carries, ni = spec.num_invariants,
            ny = spec.num_step_outputs;
  const LoopBody& fwd = spec.forward;
  // No cotangent reached the loop (gradients() still asks, because it
  // communicates): its adjoint would step zeros back. As for tangents, the
  // messages of a loop pair up inside its own bodies, so it is skipped.
  bool any = false;
  for (int k = 0; k < nc + ny; ++k)
    any = any || c.grad(k).node().op_name() != "zeros";
  if (!any) return Values(node.inputs.size());
  // Per-step cotangents that are known zeros are not fed; invariants whose
  // cotangent nobody wants (f beside κ) are not summed.
  const std::vector<int> present = indices_where(
      ny, [&](int j) { return c.grad(nc + j).node().op_name() != "zeros"; });
  const std::vector<int> wanted =
      indices_where(ni, [&](int j) { return c.needs_gradient(nc + j); });
  auto ag = new_body_graph(*fwd.graph);
  Values ct = placeholders(*ag, "carry", take(fwd.inputs, 0, nc));
  Values p = placeholders(*ag, "invariant", take(fwd.inputs, nc, ni));
  Value step = ag->placeholder("step", {});
  Values ct_bar = placeholders(*ag, "carry_cotangent", ct);
  Values p_wanted, p_bar;
  for (int j : wanted) {
    p_wanted.push_back(p[j]);
    p_bar.push_back(ag->placeholder(
        "invariant_cotangent[" + std::to_string(j) + "]", p[j].shape()));
  }
  Values y_bar;
  for (int j : present) {
    y_bar.push_back(
        ag->placeholder("output_cotangent[" + std::to_string(j) + "]",
                        fwd.outputs[nc + j].shape()));
  }
  Values outs = clone_body(fwd, *ag, join({ct, p, {step}}), fwd.outputs);
  Values ys = take(outs, 0, nc), grad_ys = ct_bar;
  for (std::size_t i = 0; i < present.size(); ++i) {
    ys.push_back(outs[nc + present[i]]);
    grad_ys.push_back(y_bar[i]);
  }
  Values initial(nc);
  initial.insert(initial.end(), p_bar.begin(), p_bar.end());
  Values grads =
      detail::body_gradients(ys, grad_ys, join({ct, p_wanted}), initial);

  auto adj = std::make_shared<LoopSpec>();
  adj->kind = LoopSpec::Kind::kAdjoint;
  adj->trips = spec.trips;
  adj->num_carries = nc;
  adj->num_invariants = ni;
  adj->num_step_outputs = ny;
  adj->output_steps = spec.output_steps;
  adj->schedule = spec.schedule;
  adj->forward = fwd;
  adj->reverse = {ag, join({ct, p, {step}, ct_bar, p_bar, y_bar}), grads};
  adj->next_carries = next_carries(adj->reverse, take(outs, 0, nc));
  if (!adj->next_carries.empty()) {
    adj->reverse = reading_next_carries(
        adj->reverse, take(outs, 0, nc), adj->next_carries);
  }
  adj->num_reverse = nc + as_int(wanted.size());
  adj->num_step_cotangents = as_int(present.size());
  adj->taped = true;
  adj->cache = spec.cache;  // where the forward run hands its snapshots
  Values r = add_loop_node(
      g, "loop_adjoint", adjoint_inputs(c, *adj, wanted, present), adj, {});
  spec.adjoints.emplace_back(&g, r[0].node_id());
  Values result = take(r, 0, nc);
  result.resize(nc + ni);
  for (std::size_t i = 0; i < wanted.size(); ++i)
    result[nc + wanted[i]] = r[nc + i];
  return result;
}

// Tangent bodies: `body` with a tangent input beside each input listed in
// `with_tangent`; returns the tangent body's input placeholders in the
// order given by `order` (see below) and outputs (values, then tangents).
namespace {

struct TangentBody {
  std::shared_ptr<Graph> graph;
  Values inputs;        // the body's inputs, in the tangent body
  Values tangents;      // one per entry of with_tangent
  Values outputs;       // the body's outputs
  Values out_tangents;  // their tangents
};

TangentBody tangent_body(const LoopBody& body,
                         const std::vector<int>& with_tangent,
                         int num_outputs) {
  TangentBody t;
  t.graph = new_body_graph(*body.graph);
  for (std::size_t i = 0; i < body.inputs.size(); ++i) {
    t.inputs.push_back(
        t.graph->placeholder(body.inputs[i].name(), body.inputs[i].shape()));
  }
  Values xs;
  for (int i : with_tangent) {
    xs.push_back(t.inputs[i]);
    t.tangents.push_back(t.graph->placeholder(
        "tangent(" + body.inputs[i].name() + ")", body.inputs[i].shape()));
  }
  t.outputs =
      clone_body(body, *t.graph, t.inputs, take(body.outputs, 0, num_outputs));
  if (xs.empty()) {
    for (const Value& y : t.outputs)
      t.out_tangents.push_back(zeros_like(*t.graph, y.shape()));
  } else {
    t.out_tangents = detail::body_jvp(t.outputs, xs, t.tangents);
  }
  return t;
}

// A tangent forward body's inputs in the order a loop feeds them: the
// carries, their tangents, the invariants, the tangents of the np
// invariants that have one, the step.
Values carry_order_inputs(const TangentBody& t, int nc, int ni, int np) {
  return join({take(t.inputs, 0, nc),
               take(t.tangents, 0, nc),
               take(t.inputs, nc, ni),
               take(t.tangents, nc, np),
               {t.inputs[nc + ni]}});
}

Value tangent_or_zeros(const TangentContext& c, int i) {
  return c.tangent(i).valid() ? c.tangent(i)
                              : zeros_like(c.graph(), c.input(i).shape());
}

// (ċₙ, ẏ) = loop over (c, ċ) with the body's tangent graph.
}  // namespace

Values loop_tangent(const TangentContext& c) {
  const Node& node = c.node();
  const LoopSpec& spec = *node.loop;
  const int nc = spec.num_carries, ni = spec.num_invariants,
            ny = spec.num_step_outputs;
  // No tangent in, none out. Unlike a single communication node, a loop
  // pairs its messages inside its own body, so skipping it is safe as long
  // as every rank's loop has tangents on the same inputs (true whenever the
  // ranks build the same graph).
  if (!c.any_tangent()) return Values(node.num_outputs());
  std::vector<int> with;
  for (int k = 0; k < nc; ++k) with.push_back(k);
  for (int j = 0; j < ni; ++j) {
    if (c.tangent(nc + j).valid()) with.push_back(nc + j);
  }
  TangentBody t = tangent_body(spec.forward, with, nc + ny);
  const int np = as_int(with.size()) - nc;
  auto tl = std::make_shared<LoopSpec>();
  tl->trips = spec.trips;
  tl->num_carries = 2 * nc;
  tl->num_invariants = ni + np;
  tl->num_step_outputs = 2 * ny;
  tl->output_steps = spec.output_steps;
  tl->schedule = spec.schedule;
  tl->forward = {t.graph,
                 carry_order_inputs(t, nc, ni, np),
                 join({take(t.outputs, 0, nc),
                       take(t.out_tangents, 0, nc),
                       take(t.outputs, nc, ny),
                       take(t.out_tangents, nc, ny)})};
  Values inputs = take(node.inputs, 0, nc);
  for (int k = 0; k < nc; ++k) inputs.push_back(tangent_or_zeros(c, k));
  for (int j = 0; j < ni; ++j) inputs.push_back(node.inputs[nc + j]);
  for (int i = nc; i < as_int(with.size()); ++i)
    inputs.push_back(c.tangent(with[i]));
  Values out = add_loop_node(c.graph(), "loop", inputs, tl, {});
  Values result = take(out, nc, nc);
  for (int j = 0; j < ny; ++j) result.push_back(out[2 * nc + ny + j]);
  result.push_back(Value());  // the tape has no tangent
  return result;
}

// ṙ₀ = loop_adjoint over the tangent bodies of forward and reverse.
Values loop_adjoint_tangent(const TangentContext& c) {
  const Node& node = c.node();
  const LoopSpec& spec = *node.loop;
  const int nc = spec.num_carries, ni = spec.num_invariants,
            nr = spec.num_reverse, ns = spec.num_step_cotangents;
  if (!c.any_tangent()) return Values(nr);  // as in loop_tangent
  std::vector<int> p_sel, y_sel;
  for (int j = 0; j < ni; ++j) {
    if (c.tangent(nc + j).valid()) p_sel.push_back(j);
  }
  for (int j = 0; j < ns; ++j) {
    if (c.tangent(nc + ni + nr + j).valid()) y_sel.push_back(j);
  }
  const int np = as_int(p_sel.size()), nys = as_int(y_sel.size());
  // Forward body over (c, ċ; p, ṗ).
  std::vector<int> fwith;
  for (int k = 0; k < nc; ++k) fwith.push_back(k);
  for (int j : p_sel) fwith.push_back(nc + j);
  TangentBody f = tangent_body(spec.forward, fwith, nc);
  // Reverse body: inputs c, p, step, r, ȳ.
  std::vector<int> rwith;
  for (int k = 0; k < nc; ++k) rwith.push_back(k);
  for (int j : p_sel) rwith.push_back(nc + j);
  for (int k = 0; k < nr; ++k) rwith.push_back(nc + ni + 1 + k);
  for (int j : y_sel) rwith.push_back(nc + ni + 1 + nr + j);
  const int nn = as_int(spec.next_carries.size());
  for (int j = 0; j < nn; ++j) rwith.push_back(nc + ni + 1 + nr + ns + j);
  TangentBody a = tangent_body(spec.reverse, rwith, nr);

  auto ta = std::make_shared<LoopSpec>();
  ta->kind = LoopSpec::Kind::kAdjoint;
  ta->trips = spec.trips;
  ta->num_carries = 2 * nc;
  ta->num_invariants = ni + np;
  ta->num_step_outputs = spec.num_step_outputs;
  ta->output_steps = spec.output_steps;
  ta->schedule = spec.schedule;
  ta->forward = {f.graph,
                 carry_order_inputs(f, nc, ni, np),
                 join({take(f.outputs, 0, nc), f.out_tangents})};
  ta->reverse = {a.graph,
                 join({take(a.inputs, 0, nc),
                       take(a.tangents, 0, nc),
                       take(a.inputs, nc, ni),
                       take(a.tangents, nc, np),
                       {a.inputs[nc + ni]},
                       take(a.inputs, nc + ni + 1, nr),
                       take(a.tangents, nc + np, nr),
                       take(a.inputs, nc + ni + 1 + nr, ns),
                       take(a.tangents, nc + np + nr, nys),
                       take(a.inputs, nc + ni + 1 + nr + ns, nn),
                       take(a.tangents, nc + np + nr + nys, nn)}),
                 join({a.outputs, a.out_tangents})};
  ta->num_reverse = 2 * nr;
  ta->num_step_cotangents = ns + nys;
  // The next carries, then their tangents (carries nc … 2nc − 1).
  ta->next_carries = spec.next_carries;
  for (int k : spec.next_carries) ta->next_carries.push_back(nc + k);
  ta->taped = false;

  Values inputs = take(node.inputs, 0, nc);
  for (int k = 0; k < nc; ++k) inputs.push_back(tangent_or_zeros(c, k));
  for (int j = 0; j < ni; ++j) inputs.push_back(node.inputs[nc + j]);
  for (int j : p_sel) inputs.push_back(c.tangent(nc + j));
  for (int k = 0; k < nr; ++k) inputs.push_back(node.inputs[nc + ni + k]);
  for (int k = 0; k < nr; ++k)
    inputs.push_back(tangent_or_zeros(c, nc + ni + k));
  for (int j = 0; j < ns; ++j) inputs.push_back(node.inputs[nc + ni + nr + j]);
  for (int j : y_sel) inputs.push_back(c.tangent(nc + ni + nr + j));
  for (int j = 0; j < nn; ++j)
    inputs.push_back(node.inputs[nc + ni + nr + ns + j]);
  for (int j = 0; j < nn; ++j)
    inputs.push_back(tangent_or_zeros(c, nc + ni + nr + ns + j));
  Values out = add_loop_node(c.graph(), "loop_adjoint", inputs, ta, {});
  return take(out, nr, nr);
}

}  // namespace adgraph::detail
