#include "core/loop.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/check.h"
#include "core/error.h"
#include "core/gradients.h"
#include "core/jvp.h"
#include "core/loop_impl.h"
#include "core/op.h"

namespace adgraph {
namespace {

using detail::BodyRunner;
using detail::clone_body;
using detail::new_body_graph;

int as_int(std::size_t n) { return static_cast<int>(n); }

Values slice(const Values& v, int first, int count) {
  return Values(v.begin() + first, v.begin() + first + count);
}

Values concat(std::initializer_list<Values> parts) {
  Values out;
  for (const Values& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Values placeholders(Graph& g, const std::string& prefix, const Values& like) {
  Values out;
  for (std::size_t k = 0; k < like.size(); ++k)
    out.push_back(
        g.placeholder(prefix + "[" + std::to_string(k) + "]", like[k].shape()));
  return out;
}

Value zeros_like(Graph& g, const Shape& shape) {
  return g.add_node("zeros", {}, {{"shape", shape}});
}

// The stacked shape of a per-step output: [K] + shape.
Shape stacked(const LoopSpec& spec, const Shape& shape) {
  Shape out{spec.output_steps.empty()
                ? spec.trips
                : static_cast<int64_t>(spec.output_steps.size())};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

// Row of step t in the stacked outputs, -1 when t is not kept.
std::vector<int64_t> rows_of_steps(const LoopSpec& spec) {
  std::vector<int64_t> row(spec.trips, -1);
  if (spec.output_steps.empty()) {
    for (int64_t t = 0; t < spec.trips; ++t) row[t] = t;
  } else {
    for (std::size_t i = 0; i < spec.output_steps.size(); ++i)
      row[spec.output_steps[i]] = static_cast<int64_t>(i);
  }
  return row;
}

void copy_row(const Tensor& from, Tensor& stacked_tensor, int64_t row) {
  const int64_t n = from.size();
  std::memcpy(stacked_tensor.data() + row * n, from.data(), n * sizeof(double));
}

std::string collective_signature(const Graph& g) {
  std::string out;
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (!n.collective) continue;
    out += n.op_name() + n.attrs.dump();
    for (const Value& in : n.inputs) out += shape_string(in.shape());
    if (n.loop) out += "{" + n.loop->signature() + "}";
    out += ";";
  }
  return out;
}

// ---------------------------------------------------------------------------
// Forward loop kernel.

void copy_state(const std::vector<Tensor>& from, std::vector<Tensor>& to) {
  for (std::size_t k = 0; k < from.size(); ++k) to[k] = from[k];
}

void run_loop(KernelContext& c) {
  const LoopSpec& spec = *c.node().loop;
  detail::LoopCache& cache = *spec.cache;
  const int nc = spec.num_carries, ni = spec.num_invariants,
            ny = spec.num_step_outputs;
  std::vector<int> wanted;
  for (int k = 0; k < nc; ++k) wanted.push_back(k);
  for (int j = 0; j < ny; ++j) {
    if (c.output_used(nc + j)) wanted.push_back(nc + j);
  }
  std::unique_ptr<BodyRunner> runner = cache.take_runner(spec.forward, wanted);
  // The carries live in the output buffers the session allocated.
  std::vector<Tensor> cur(nc);
  for (int k = 0; k < nc; ++k) {
    std::swap(cur[k], c.output(k));
    cur[k] = c.input(k);
  }
  Tensor step = Tensor::scalar(0);
  std::vector<const Tensor*> inputs;
  for (int k = 0; k < nc; ++k) inputs.push_back(&cur[k]);
  for (int j = 0; j < ni; ++j) inputs.push_back(&c.input(nc + j));
  inputs.push_back(&step);

  // The tape: the states the adjoint's first sweep would store, handed
  // over under a ticket.
  const int takers = c.output_readers(nc + ny);
  const bool taping = takers > 0;
  std::vector<int64_t> positions;
  if (taping) positions = spec.tape_positions();
  std::map<int64_t, detail::LoopCache::State> snapshots;
  const std::vector<int64_t> rows = rows_of_steps(spec);
  std::size_t next = 0;
  // A kept state is moved into the snapshots, not copied: the next step
  // reads it there, and cur takes spare buffers for the step's result.
  const detail::LoopCache::State* kept = nullptr;
  for (int64_t t = 0; t < spec.trips; ++t) {
    step[0] = static_cast<double>(t);
    for (int k = 0; k < nc; ++k) inputs[k] = kept ? &(*kept)[k] : &cur[k];
    runner->run(inputs.data());
    if (rows[t] >= 0) {
      for (std::size_t w = nc; w < wanted.size(); ++w)
        copy_row(runner->output(wanted[w]), c.output(wanted[w]), rows[t]);
    }
    runner->move_outputs(0, cur);
    kept = nullptr;
    if (next < positions.size() && positions[next] == t + 1) {
      detail::LoopCache::State spare = cache.take_state(cur);
      auto& slot = snapshots[t + 1];
      slot = std::move(cur);
      cur = std::move(spare);
      kept = &slot;
      ++next;
    }
  }
  if (kept) copy_state(*kept, cur);  // the last step was kept
  cache.give_runner(std::move(runner), spec.forward, wanted);
  for (int k = 0; k < nc; ++k) std::swap(c.output(k), cur[k]);
  c.output(nc + ny)[0] =
      taping
          ? static_cast<double>(cache.hand_over(std::move(snapshots), takers))
          : 0;
  spec.stats.forward_steps = spec.trips;
  spec.stats.taped_steps = 0;
}

// ---------------------------------------------------------------------------
// Adjoint loop kernel: the reversal schedules.

class Reversal final {
 public:
  Reversal(KernelContext& c, const LoopSpec& spec)
      : c_(c),
        spec_(spec),
        nc_(spec.num_carries),
        ni_(spec.num_invariants),
        nr_(spec.num_reverse),
        ns_(spec.num_step_cotangents),
        cache_(*spec.cache),
        forward_wanted_(first(spec.num_carries)),
        reverse_wanted_(first(spec.num_reverse)),
        forward_(cache_.take_runner(spec.forward, forward_wanted_)),
        reverse_(cache_.take_runner(spec.reverse, reverse_wanted_)),
        rows_(rows_of_steps(spec)) {
    const int first_r = nc_ + ni_;
    for (int k = 0; k < nr_; ++k) r_.push_back(c.input(first_r + k));
    for (int j = 0; j < ns_; ++j) {
      const Shape& s = spec.reverse.inputs[nc_ + ni_ + 1 + nr_ + j].shape();
      ybar_.push_back(Tensor(s, 0.0));
    }
    ybar_zero_.assign(ns_, 1);
    for (int k = 0; k < nc_; ++k) cur_.push_back(c.input(k));
    cur_t_ = 0;
    if (spec.taped) {
      const double ticket = c.input(first_r + nr_ + ns_)[0];
      store_ = cache_.take_over(static_cast<int64_t>(ticket));
    }
    keep(0);
  }

  ~Reversal() {
    for (auto& [t, state] : store_) cache_.give_state(std::move(state));
    if (forward_)
      cache_.give_runner(std::move(forward_), spec_.forward, forward_wanted_);
    if (reverse_)
      cache_.give_runner(std::move(reverse_), spec_.reverse, reverse_wanted_);
  }

  void run() {
    const int64_t n = spec_.trips;
    if (spec_.schedule.kind == CheckpointSchedule::Kind::kStoreAll) {
      every(n, 1);
    } else if (spec_.schedule.kind == CheckpointSchedule::Kind::kEvery) {
      every(n, spec_.schedule.parameter);
    } else {
      binomial(0, n, spec_.schedule.parameter);
    }
    for (int k = 0; k < nr_; ++k) c_.output(k) = std::move(r_[k]);
    spec_.stats.forward_steps = advances_;
    spec_.stats.taped_steps = taped_;
    spec_.stats.max_snapshots = max_snapshots_;
    spec_.stats.snapshot_bytes = max_snapshots_ * spec_.state_elements() *
                                 static_cast<int64_t>(sizeof(double));
  }

 private:
  static std::vector<int> first(int count) {
    std::vector<int> out;
    for (int k = 0; k < count; ++k) out.push_back(k);
    return out;
  }

  void note_snapshots() {
    max_snapshots_ = std::max<int64_t>(max_snapshots_, store_.size());
  }

  // One body step from cur_.
  void advance() {
    step_[0] = static_cast<double>(cur_t_);
    std::vector<const Tensor*> in;
    for (Tensor& t : cur_) in.push_back(&t);
    for (int j = 0; j < ni_; ++j) in.push_back(&c_.input(nc_ + j));
    in.push_back(&step_);
    forward_->run(in.data());
    forward_->move_outputs(0, cur_);
    ++cur_t_;
    ++advances_;
  }

  // State t: cur_ or a snapshot, or recomputed from the snapshot at a <= t.
  const std::vector<Tensor>& state(int64_t t, int64_t a) {
    if (cur_t_ == t) return cur_;
    auto found = store_.find(t);
    if (found != store_.end()) return found->second;
    if (!(cur_t_ >= a && cur_t_ < t)) {
      auto from = store_.find(a);
      ADGRAPH_CHECK(from != store_.end()) << "no snapshot at step " << a;
      cur_ = from->second;
      cur_t_ = a;
    }
    while (cur_t_ < t) advance();
    return cur_;
  }

  void keep(int64_t t) {
    if (store_.count(t)) return;
    detail::LoopCache::State kept = cache_.take_state(cur_);
    copy_state(cur_, kept);
    store_[t] = std::move(kept);
    note_snapshots();
  }

  void release(int64_t t) {
    auto it = store_.find(t);
    if (it == store_.end()) return;
    cache_.give_state(std::move(it->second));
    store_.erase(it);
  }

  // The adjoint of step t from state c_t.
  void tape(int64_t t, const std::vector<Tensor>& ct) {
    step_[0] = static_cast<double>(t);
    const int64_t row = rows_[t];
    for (int j = 0; j < ns_; ++j) {
      if (row >= 0) {
        const Tensor& all = c_.input(nc_ + ni_ + nr_ + j);
        const int64_t m = ybar_[j].size();
        std::memcpy(ybar_[j].data(), all.data() + row * m, m * sizeof(double));
        ybar_zero_[j] = 0;
      } else if (!ybar_zero_[j]) {
        ybar_[j].array().setZero();
        ybar_zero_[j] = 1;
      }
    }
    std::vector<const Tensor*> in;
    for (const Tensor& x : ct) in.push_back(&x);
    for (int j = 0; j < ni_; ++j) in.push_back(&c_.input(nc_ + j));
    in.push_back(&step_);
    for (Tensor& x : r_) in.push_back(&x);
    for (Tensor& x : ybar_) in.push_back(&x);
    reverse_->run(in.data());
    reverse_->move_outputs(0, r_);
    ++taped_;
    // No state at or after t is needed again.
    release(t);
    if (cur_t_ >= t) cur_t_ = -1;
  }

  void every(int64_t n, int64_t k) {
    const int64_t last = ((n - 1) / k) * k;
    for (int64_t t = k; t <= last; t += k) {
      state(t, t - k);
      keep(t);
    }
    for (int64_t a = last; a >= 0; a -= k) {
      const int64_t b = std::min(n, a + k);
      for (int64_t t = a + 1; t < b; ++t) {
        state(t, a);
        keep(t);
      }
      for (int64_t t = b - 1; t >= a; --t) tape(t, state(t, a));
    }
  }

  // Reverses steps [a, b) from the snapshot at a with s snapshots.
  void binomial(int64_t a, int64_t b, int64_t s) {
    if (b - a == 1) {
      tape(a, state(a, a));
      return;
    }
    if (s <= 1) {
      for (int64_t t = b - 1; t >= a; --t) tape(t, state(t, a));
      return;
    }
    const int64_t m = a + binomial_split(b - a, s);
    state(m, a);
    keep(m);
    binomial(m, b, s - 1);
    release(m);
    binomial(a, m, s);
  }

  KernelContext& c_;
  const LoopSpec& spec_;
  const int nc_, ni_, nr_, ns_;
  detail::LoopCache& cache_;
  const std::vector<int> forward_wanted_, reverse_wanted_;
  std::unique_ptr<BodyRunner> forward_, reverse_;
  std::vector<int64_t> rows_;
  std::map<int64_t, std::vector<Tensor>> store_;
  std::vector<Tensor> cur_;
  int64_t cur_t_ = 0;
  std::vector<Tensor> r_;
  std::vector<Tensor> ybar_;
  std::vector<char> ybar_zero_;
  Tensor step_ = Tensor::scalar(0);
  int64_t advances_ = 0, taped_ = 0, max_snapshots_ = 0;
};

void run_loop_adjoint(KernelContext& c) { Reversal(c, *c.node().loop).run(); }

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
  return g.add_node_outputs(
      op,
      inputs,
      {{"trips", spec->trips}, {"checkpoints", spec->schedule.describe()}},
      std::move(options));
}

// y = loop(c₀, p); (c̄₀, p̄) = loop_adjoint(c₀, p, c̄ₙ, 0, ȳ, tape)
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
  // Per-step cotangents that are known zeros are not fed.
  std::vector<int> present;
  for (int j = 0; j < ny; ++j) {
    if (c.grad(nc + j).node().op_name() != "zeros") present.push_back(j);
  }
  // Invariants whose cotangent nobody wants (f beside κ) are not summed.
  std::vector<int> wanted;
  for (int j = 0; j < ni; ++j) {
    if (c.needs_gradient(nc + j)) wanted.push_back(j);
  }
  auto ag = new_body_graph(*fwd.graph);
  Values ct = placeholders(*ag, "carry", slice(fwd.inputs, 0, nc));
  Values p = placeholders(*ag, "invariant", slice(fwd.inputs, nc, ni));
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
  Values outs = clone_body(fwd, *ag, concat({ct, p, {step}}), fwd.outputs);
  Values ys = slice(outs, 0, nc), grad_ys = ct_bar;
  for (std::size_t i = 0; i < present.size(); ++i) {
    ys.push_back(outs[nc + present[i]]);
    grad_ys.push_back(y_bar[i]);
  }
  Values initial(nc);
  initial.insert(initial.end(), p_bar.begin(), p_bar.end());
  Values grads =
      detail::body_gradients(ys, grad_ys, concat({ct, p_wanted}), initial);

  auto adj = std::make_shared<LoopSpec>();
  adj->kind = LoopSpec::Kind::kAdjoint;
  adj->trips = spec.trips;
  adj->num_carries = nc;
  adj->num_invariants = ni;
  adj->num_step_outputs = ny;
  adj->output_steps = spec.output_steps;
  adj->schedule = spec.schedule;
  adj->forward = fwd;
  adj->reverse = {ag, concat({ct, p, {step}, ct_bar, p_bar, y_bar}), grads};
  adj->num_reverse = nc + as_int(wanted.size());
  adj->num_step_cotangents = as_int(present.size());
  adj->taped = true;
  adj->cache = spec.cache;  // where the forward run hands its snapshots
  Values inputs = slice(node.inputs, 0, nc + ni);
  for (int k = 0; k < nc; ++k) inputs.push_back(c.grad(k));
  for (int j : wanted)
    inputs.push_back(zeros_like(g, node.inputs[nc + j].shape()));
  for (int j : present) inputs.push_back(c.grad(nc + j));
  inputs.push_back(c.output(nc + ny));  // the tape
  Values r = add_loop_node(g, "loop_adjoint", inputs, adj, {});
  spec.adjoints.emplace_back(&g, r[0].node_id());
  Values result = slice(r, 0, nc);
  result.resize(nc + ni);
  for (std::size_t i = 0; i < wanted.size(); ++i)
    result[nc + wanted[i]] = r[nc + i];
  return result;
}

// Tangent bodies: `body` with a tangent input beside each input listed in
// `with_tangent`; returns the tangent body's input placeholders in the
// order given by `order` (see below) and outputs (values, then tangents).
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
        "tangent:" + body.inputs[i].name(), body.inputs[i].shape()));
  }
  t.outputs =
      clone_body(body, *t.graph, t.inputs, slice(body.outputs, 0, num_outputs));
  if (xs.empty()) {
    for (const Value& y : t.outputs)
      t.out_tangents.push_back(zeros_like(*t.graph, y.shape()));
  } else {
    t.out_tangents = detail::body_jvp(t.outputs, xs, t.tangents);
  }
  return t;
}

Value tangent_or_zeros(const TangentContext& c, int i) {
  return c.tangent(i).valid() ? c.tangent(i)
                              : zeros_like(c.graph(), c.input(i).shape());
}

// (ċₙ, ẏ) = loop over (c, ċ) with the body's tangent graph.
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
                 concat({slice(t.inputs, 0, nc),
                         slice(t.tangents, 0, nc),
                         slice(t.inputs, nc, ni),
                         slice(t.tangents, nc, np),
                         {t.inputs[nc + ni]}}),
                 concat({slice(t.outputs, 0, nc),
                         slice(t.out_tangents, 0, nc),
                         slice(t.outputs, nc, ny),
                         slice(t.out_tangents, nc, ny)})};
  Values inputs = slice(node.inputs, 0, nc);
  for (int k = 0; k < nc; ++k) inputs.push_back(tangent_or_zeros(c, k));
  for (int j = 0; j < ni; ++j) inputs.push_back(node.inputs[nc + j]);
  for (int i = nc; i < as_int(with.size()); ++i)
    inputs.push_back(c.tangent(with[i]));
  Values out = add_loop_node(c.graph(), "loop", inputs, tl, {});
  Values result = slice(out, nc, nc);
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
                 concat({slice(f.inputs, 0, nc),
                         slice(f.tangents, 0, nc),
                         slice(f.inputs, nc, ni),
                         slice(f.tangents, nc, np),
                         {f.inputs[nc + ni]}}),
                 concat({slice(f.outputs, 0, nc), f.out_tangents})};
  ta->reverse = {a.graph,
                 concat({slice(a.inputs, 0, nc),
                         slice(a.tangents, 0, nc),
                         slice(a.inputs, nc, ni),
                         slice(a.tangents, nc, np),
                         {a.inputs[nc + ni]},
                         slice(a.inputs, nc + ni + 1, nr),
                         slice(a.tangents, nc + np, nr),
                         slice(a.inputs, nc + ni + 1 + nr, ns),
                         slice(a.tangents, nc + np + nr, nys)}),
                 concat({a.outputs, a.out_tangents})};
  ta->num_reverse = 2 * nr;
  ta->num_step_cotangents = ns + nys;
  ta->taped = false;

  Values inputs = slice(node.inputs, 0, nc);
  for (int k = 0; k < nc; ++k) inputs.push_back(tangent_or_zeros(c, k));
  for (int j = 0; j < ni; ++j) inputs.push_back(node.inputs[nc + j]);
  for (int j : p_sel) inputs.push_back(c.tangent(nc + j));
  for (int k = 0; k < nr; ++k) inputs.push_back(node.inputs[nc + ni + k]);
  for (int k = 0; k < nr; ++k)
    inputs.push_back(tangent_or_zeros(c, nc + ni + k));
  for (int j = 0; j < ns; ++j) inputs.push_back(node.inputs[nc + ni + nr + j]);
  for (int j : y_sel) inputs.push_back(c.tangent(nc + ni + nr + j));
  Values out = add_loop_node(c.graph(), "loop_adjoint", inputs, ta, {});
  return slice(out, nr, nr);
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

bool LoopSpec::has_collective() const {
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

void LoopSpec::finish() {
  signature_ = collective_signature(*forward.graph);
  if (reverse.graph) signature_ += "|" + collective_signature(*reverse.graph);
  if (signature_ == "|") signature_.clear();
}

// ---------------------------------------------------------------------------
// The public API.

LoopResult loop(int64_t trips,
                const std::vector<Value>& init,
                const std::vector<Value>& invariants,
                const LoopBodyFn& body,
                LoopOptions options) {
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
  for (const Value& v : concat({init, invariants})) {
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
  for (std::size_t i = 0; i < options.output_steps.size(); ++i) {
    const int64_t t = options.output_steps[i];
    if (t < 0 || t >= trips || (i > 0 && t <= options.output_steps[i - 1])) {
      throw GraphError("output steps must increase strictly within [0, " +
                           std::to_string(trips) + "); entry " +
                           std::to_string(i) + " is " + std::to_string(t),
                       label,
                       "loop",
                       "output_steps");
    }
  }
  CheckpointSchedule schedule = options.checkpoints;
  if (schedule.kind == CheckpointSchedule::Kind::kDefault)
    schedule = g.default_checkpoints();
  std::string error;
  if (!schedule.is_valid(&error))
    throw OptionsError(error, label, "loop", "checkpoints");

  auto bg = new_body_graph(g);
  LoopArgs args;
  args.graph = bg.get();
  args.carries = placeholders(*bg, "carry", init);
  args.invariants = placeholders(*bg, "invariant", invariants);
  args.step = bg->placeholder("step", {});
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
    if (!out.valid() || &out.graph() != bg.get())
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
    if (!out.valid() || &out.graph() != bg.get())
      throw GraphError("the body returned a value of another graph",
                       label,
                       "loop",
                       "output " + std::to_string(j));
  }
  const int num_inputs = as_int(init.size() + invariants.size()) + 1;
  for (int id = 0; id < bg->num_nodes(); ++id) {
    if (bg->node(id).op_name() == "placeholder" && id >= num_inputs) {
      throw GraphError("a loop body cannot create placeholders",
                       bg->node(id).name,
                       "placeholder");
    }
  }
  auto spec = std::make_shared<LoopSpec>();
  spec->trips = trips;
  spec->num_carries = as_int(init.size());
  spec->num_invariants = as_int(invariants.size());
  spec->num_step_outputs = as_int(result.outputs.size());
  spec->output_steps = options.output_steps;
  spec->forward = {bg,
                   concat({args.carries, args.invariants, {args.step}}),
                   concat({result.carries, result.outputs})};
  if (schedule.kind == CheckpointSchedule::Kind::kMemoryBudget) {
    const int64_t bytes = std::max<int64_t>(1, spec->state_elements() * 8);
    schedule = CheckpointSchedule::binomial(
        std::clamp<int64_t>(schedule.parameter / bytes, 1, trips));
  } else if (schedule.kind == CheckpointSchedule::Kind::kBinomial) {
    schedule.parameter = std::min(schedule.parameter, trips);
  }
  spec->schedule = schedule;
  std::vector<Value> out =
      add_loop_node(g, "loop", concat({init, invariants}), spec, options.name);
  LoopResult r;
  r.carries = slice(out, 0, spec->num_carries);
  r.outputs = slice(out, spec->num_carries, spec->num_step_outputs);
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

void register_loop_ops(OpRegistry& registry) {
  const std::vector<AttrSpec> attrs = {
      {"trips", AttrType::kInt, nlohmann::json(), "number of steps n", 1},
      {"checkpoints", AttrType::kString, "", "the adjoint's schedule"}};

  OpDef loop;
  loop.name = "loop";
  loop.doc =
      "c_{t+1}, y_t = body(c_t, invariants, t) for t < trips; outputs c_n, "
      "the stacked y and the tape";
  loop.inputs = {"inputs"};
  loop.variadic = true;
  loop.attrs = attrs;
  loop.num_outputs = 0;
  loop.shape = [](const ShapeContext& c) {
    const LoopSpec* spec = c.node().loop.get();
    check_spec_inputs(c, spec ? spec->num_carries + spec->num_invariants : 0);
    Shapes out;
    for (int k = 0; k < spec->num_carries; ++k) out.push_back(c.input_shape(k));
    for (int j = 0; j < spec->num_step_outputs; ++j) {
      out.push_back(
          stacked(*spec, spec->forward.outputs[spec->num_carries + j].shape()));
    }
    out.push_back(Shape{1});  // the tape's ticket (0: nothing taped)
    return out;
  };
  loop.compute = run_loop;
  loop.gradient = loop_gradient;
  loop.tangent = loop_tangent;
  registry.add(std::move(loop));

  OpDef adjoint;
  adjoint.name = "loop_adjoint";
  adjoint.doc =
      "the cotangents of a loop's initial carries and invariants, stepping "
      "its body's adjoint back under a checkpoint schedule";
  adjoint.inputs = {"inputs"};
  adjoint.variadic = true;
  adjoint.attrs = attrs;
  adjoint.num_outputs = 0;
  adjoint.shape = [](const ShapeContext& c) {
    const LoopSpec* spec = c.node().loop.get();
    check_spec_inputs(c,
                      spec ? spec->num_carries + spec->num_invariants +
                                 spec->num_reverse + spec->num_step_cotangents +
                                 spec->taped
                           : 0);
    Shapes out;
    const int first = spec->num_carries + spec->num_invariants;
    for (int k = 0; k < spec->num_reverse; ++k)
      out.push_back(c.input_shape(first + k));
    return out;
  };
  adjoint.compute = run_loop_adjoint;
  adjoint.tangent = loop_adjoint_tangent;
  registry.add(std::move(adjoint));
}

}  // namespace adgraph
