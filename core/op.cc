#include "core/op.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>

#include "core/core_ops.h"
#include "core/error.h"

namespace adgraph {
namespace {

// Edit distance, used to suggest the nearest op name for a typo.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1,
                         row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

CommContext* ShapeContext::comm() const {
  return node_.comm ? node_.comm.get() : graph_.comm();
}

int ShapeContext::num_inputs() const {
  return static_cast<int>(node_.inputs.size());
}

const Shape& ShapeContext::input_shape(int i) const {
  return node_.inputs[i].shape();
}

int64_t ShapeContext::attr_int(const std::string& name) const {
  return node_.attr_int(name);
}

double ShapeContext::attr_float(const std::string& name) const {
  return node_.attr_float(name);
}

Shape ShapeContext::attr_ints(const std::string& name) const {
  return node_.attr_ints(name);
}

void ShapeContext::fail(const std::string& field,
                        const std::string& detail) const {
  throw ShapeError(detail, node_.name, node_.op_name(), field);
}

int KernelContext::num_inputs() const {
  return static_cast<int>(node_.inputs.size());
}

int64_t KernelContext::attr_int(const std::string& name) const {
  return node_.attr_int(name);
}

double KernelContext::attr_float(const std::string& name) const {
  return node_.attr_float(name);
}

GradientContext::GradientContext(const Node& node,
                                 Values outputs,
                                 Values output_grads,
                                 std::vector<bool> needed)
    : node_(node),
      outputs_(std::move(outputs)),
      output_grads_(std::move(output_grads)),
      needed_(std::move(needed)) {}

Graph& GradientContext::graph() const { return outputs_[0].graph(); }

int GradientContext::num_inputs() const {
  return static_cast<int>(node_.inputs.size());
}

const Value& GradientContext::input(int i) const { return node_.inputs[i]; }

const Value& GradientContext::accumulated(int i) const {
  static const Value none;
  return i < static_cast<int>(accumulated_.size()) ? accumulated_[i] : none;
}

void GradientContext::absorb(int i) const {
  if (!accumulated(i).valid()) {
    throw GraphError("absorb() of input " + std::to_string(i) +
                         ", which has no accumulated cotangent",
                     node_.name,
                     node_.op_name(),
                     "gradient");
  }
  absorbed_.resize(node_.inputs.size(), false);
  absorbed_[i] = true;
}

TangentContext::TangentContext(const Node& node,
                               Values outputs,
                               Values input_tangents)
    : node_(node),
      outputs_(std::move(outputs)),
      input_tangents_(std::move(input_tangents)) {}

Graph& TangentContext::graph() const { return outputs_[0].graph(); }

int TangentContext::num_inputs() const {
  return static_cast<int>(node_.inputs.size());
}

const Value& TangentContext::input(int i) const { return node_.inputs[i]; }

Value TangentContext::tangent_or_zeros(int i) const {
  if (input_tangents_[i].valid()) return input_tangents_[i];
  return zeros(graph(), node_.inputs[i].shape());
}

bool TangentContext::any_tangent() const {
  for (const Value& t : input_tangents_) {
    if (t.valid()) return true;
  }
  return false;
}

Values linear_tangent(const TangentContext& c) {
  const Node& node = c.node();
  if (!c.any_tangent() && !node.communication) {
    return Values(node.num_outputs());
  }
  Values inputs;
  for (int i = 0; i < c.num_inputs(); ++i) {
    inputs.push_back(c.tangent_or_zeros(i));
  }
  NodeOptions options;
  options.tensors = node.tensors;
  options.resource = node.resource;
  return c.graph().add_node_outputs(
      node.op_name(), std::move(inputs), node.attrs, std::move(options));
}

Values bilinear_tangent(const TangentContext& c) {
  const Node& node = c.node();
  Graph& g = c.graph();
  Value t;
  for (int i = 0; i < 2; ++i) {
    if (!c.tangent(i).valid()) continue;
    std::vector<Value> inputs = {c.input(0), c.input(1)};
    inputs[i] = c.tangent(i);
    NodeOptions options;
    options.tensors = node.tensors;
    options.resource = node.resource;
    Value term = g.add_node(
        node.op_name(), std::move(inputs), node.attrs, std::move(options));
    t = t.valid() ? accumulate(t, term) : term;
  }
  return {t};
}

ComputeFn kernel_of(const Node& n) {
  return n.op->bind ? n.op->bind(n) : n.op->compute;
}

std::vector<std::pair<int, int>> in_place_pairs(const Node& n) {
  return n.op->in_place_of ? n.op->in_place_of(n) : n.op->in_place;
}

void OpRegistry::add(OpDef def) {
  if (def.name.empty()) throw GraphError("an op needs a name");
  if (ops_.count(def.name)) {
    throw GraphError("an op of this name is already registered", {}, def.name);
  }
  if (!def.shape || !(def.compute || def.bind)) {
    throw GraphError(
        "an op needs a shape rule and a compute kernel", {}, def.name);
  }
  if (!def.compute) {
    def.compute = [bind = def.bind](KernelContext& c) { bind(c.node())(c); };
  }
  if (def.num_outputs < 0) {
    throw GraphError(
        "an op cannot have a negative number of outputs", {}, def.name);
  }
  std::string name = def.name;
  ops_.emplace(std::move(name), std::make_unique<OpDef>(std::move(def)));
}

const OpDef* OpRegistry::find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

namespace {
std::atomic<void (*)()>& completion() {
  static std::atomic<void (*)()> f{nullptr};
  return f;
}
}  // namespace

void OpRegistry::set_completion(void (*register_all)()) {
  completion().store(register_all);
}

const OpDef& OpRegistry::get(const std::string& name) const {
  if (const OpDef* def = find(name)) return *def;
  void (*register_all)() = completion().load();
  if (register_all != nullptr && this == &global()) {
    register_all();  // once only: later calls return at once
    if (const OpDef* def = find(name)) return *def;
  }
  std::string nearest;
  std::size_t best = name.size() + 1;
  for (const auto& [known, def] : ops_) {
    std::size_t d = edit_distance(name, known);
    if (d < best) best = d, nearest = known;
  }
  std::string detail = "unknown op \"" + name + "\"";
  if (!nearest.empty() && best <= std::max<std::size_t>(2, name.size() / 3)) {
    detail += "; did you mean \"" + nearest + "\"?";
  } else {
    detail +=
        ": no registered op has this name (a layer registers its ops when "
        "its node builders are first called; to look every op of the "
        "library up by name, call adgraph::register_all_ops() first)";
  }
  throw GraphError(detail);
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (const auto& [name, def] : ops_) out.push_back(def.get());
  return out;
}

OpRegistry& OpRegistry::global() {
  static OpRegistry registry;
  static std::once_flag once;
  // register_op calls global() while the core's ops register; that nested
  // call on the registering thread must not wait for itself. The layers
  // above register their own ops (their register_*_layer()); the core
  // calls none of them.
  thread_local bool registering = false;
  if (!registering) {
    std::call_once(once, [] {
      registering = true;
      register_core_ops();
      registering = false;
    });
  }
  return registry;
}

void register_op(OpDef def) { OpRegistry::global().add(std::move(def)); }

}  // namespace adgraph
