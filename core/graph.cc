#include "core/graph.h"

#include <cmath>
#include <limits>
#include <utility>

#include "core/check.h"
#include "core/comm_context.h"
#include "core/error.h"
#include "core/op.h"
#include "core/tensor_json.h"

namespace adgraph {
namespace {

// An integer that converts to int64_t exactly: a JSON integer in range, or
// a float literal (2.0, 1e3) that is a whole number below 2^53, where every
// integer is exact. 2^63 and above would wrap, so they are not integers here.
bool is_integral_number(const nlohmann::json& v) {
  if (v.is_number_unsigned())
    return v.get<uint64_t>() <=
           static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d && std::fabs(d) <= 0x1p53;
}

// The range check of an integer attribute, made on the exact integer (a
// double would round 2^63 − 1 and its neighbours together).
bool int_within(const nlohmann::json& v, double lo, double hi) {
  const int64_t i = v.get<int64_t>();
  const bool above_lo =
      !std::isfinite(lo) || lo <= -0x1p63 ||
      (lo < 0x1p63 && i >= static_cast<int64_t>(std::ceil(lo)));
  const bool below_hi =
      !std::isfinite(hi) || hi >= 0x1p63 ||
      (hi >= -0x1p63 && i <= static_cast<int64_t>(std::floor(hi)));
  return above_lo && below_hi;
}

// Checks one given attribute against its spec; returns the canonical value.
nlohmann::json check_attr(const AttrSpec& spec,
                          const nlohmann::json& value,
                          const std::string& node,
                          const std::string& op) {
  const std::string field = "attribute \"" + spec.name + "\"";
  auto fail = [&](const std::string& detail) -> nlohmann::json {
    throw GraphError(detail, node, op, field);
  };
  auto check_range = [&](double v) {
    if (!std::isfinite(v)) fail("must be a finite number");
    if (v < spec.min || v > spec.max) {
      nlohmann::json lo = spec.min, hi = spec.max;
      fail("value " + nlohmann::json(v).dump() + " is outside [" +
           (std::isfinite(spec.min) ? lo.dump() : "-inf") + ", " +
           (std::isfinite(spec.max) ? hi.dump() : "inf") + "]");
    }
  };
  auto check_int = [&](const nlohmann::json& v, const char* expected) {
    if (!is_integral_number(v)) {
      fail(expected + v.dump() +
           (v.is_number() ? " (not an exact integer in [-2^63, 2^63 - 1]; "
                            "floats only up to 2^53)"
                          : ""));
    }
    if (int_within(v, spec.min, spec.max)) return;
    check_range(v.get<double>());
    fail("value " + v.dump() + " is outside the attribute's range");
  };
  switch (spec.type) {
    case AttrType::kInt:
      check_int(value, "expected an integer, found ");
      return value.get<int64_t>();
    case AttrType::kFloat:
      if (!value.is_number()) {
        return fail("expected a number, found " + value.dump());
      }
      check_range(value.get<double>());
      return value.get<double>();
    case AttrType::kBool:
      if (!value.is_boolean()) return fail("expected true or false");
      return value;
    case AttrType::kString:
      if (!value.is_string()) return fail("expected a string");
      return value;
    case AttrType::kInts: {
      if (!value.is_array()) return fail("expected a list of integers");
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : value) {
        check_int(item, "expected a list of integers, found ");
        out.push_back(item.get<int64_t>());
      }
      return out;
    }
    case AttrType::kFloats: {
      if (!value.is_array()) return fail("expected a list of numbers");
      for (const auto& item : value) {
        if (!item.is_number()) return fail("expected a list of numbers");
        check_range(item.get<double>());
      }
      return value;
    }
    case AttrType::kTensor:
      break;
  }
  ADGRAPH_CHECK(false) << "kTensor handled by caller";
  return {};
}

// Throws unless `inputs` fit the op's declared inputs and are earlier
// values of `graph` (the new node's id is `id`).
void check_inputs(const OpDef& op_def,
                  const std::vector<Value>& inputs,
                  int id,
                  const Graph* graph,
                  const std::string& name) {
  const OpDef* def = &op_def;
  const std::string& op = op_def.name;
  const std::size_t declared = def->inputs.size();
  const bool count_ok =
      def->variadic ? inputs.size() + 1 >= declared : inputs.size() == declared;
  if (!count_ok) {
    throw GraphError(
        "expected " + std::string(def->variadic ? "at least " : "") +
            std::to_string(def->variadic ? declared - 1 : declared) +
            " inputs, got " + std::to_string(inputs.size()),
        name,
        op,
        "inputs");
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string field = "input " + std::to_string(i) + " (\"" +
                              def->inputs[std::min(i, declared - 1)] + "\")";
    if (!inputs[i].valid() || &inputs[i].graph() != graph ||
        inputs[i].node_id() >= id) {
      throw GraphError("not a value of this graph", name, op, field);
    }
  }
}

// The node's attributes from `attrs` and its tensor attributes from
// `tensors` (taken) or `attrs`, each checked against the op's schema, with
// defaults for the ones not given.
void set_attributes(const OpDef& op_def,
                    nlohmann::json attrs,
                    std::map<std::string, Tensor>& tensors,
                    const std::string& name,
                    Node* node) {
  const OpDef* def = &op_def;
  const std::string& op = op_def.name;
  if (attrs.is_null()) attrs = nlohmann::json::object();
  if (!attrs.is_object()) {
    throw GraphError("attributes must be an object", name, op, "attrs");
  }
  for (const auto& [key, value] : attrs.items()) {
    bool known = false;
    for (const auto& spec : def->attrs) known = known || spec.name == key;
    if (!known) {
      std::string list;
      for (const auto& spec : def->attrs) {
        list += (list.empty() ? "" : ", ") + spec.name;
      }
      throw GraphError("unknown attribute (known: " +
                           (list.empty() ? std::string("none") : list) + ")",
                       name,
                       op,
                       "attribute \"" + key + "\"");
    }
  }
  for (const auto& spec : def->attrs) {
    const std::string field = "attribute \"" + spec.name + "\"";
    if (spec.type == AttrType::kTensor) {
      auto given = tensors.find(spec.name);
      if (given != tensors.end()) {
        node->tensors[spec.name] = std::move(given->second);
      } else if (attrs.contains(spec.name)) {
        try {
          node->tensors[spec.name] = tensor_from_json(attrs[spec.name]);
        } catch (const Error& e) {
          throw GraphError(e.detail(), name, op, field);
        }
      } else if (!spec.default_value.is_null()) {
        node->tensors[spec.name] = tensor_from_json(spec.default_value);
      } else {
        throw GraphError("required attribute is missing", name, op, field);
      }
      continue;
    }
    if (attrs.contains(spec.name)) {
      node->attrs[spec.name] = check_attr(spec, attrs[spec.name], name, op);
    } else if (!spec.default_value.is_null()) {
      node->attrs[spec.name] = spec.default_value;
    } else {
      throw GraphError("required attribute is missing", name, op, field);
    }
  }
}

}  // namespace

const Node& Value::node() const { return graph_->node(node_); }
const Shape& Value::shape() const {
  return graph_->node(node_).output_shapes[output_];
}
const std::string& Value::name() const { return graph_->node(node_).name; }

const std::string& Node::op_name() const { return op->name; }

int64_t Node::attr_int(const std::string& name) const {
  return attrs.at(name).get<int64_t>();
}
double Node::attr_float(const std::string& name) const {
  return attrs.at(name).get<double>();
}
bool Node::attr_bool(const std::string& name) const {
  return attrs.at(name).get<bool>();
}
std::string Node::attr_string(const std::string& name) const {
  return attrs.at(name).get<std::string>();
}
Shape Node::attr_ints(const std::string& name) const {
  return attrs.at(name).get<Shape>();
}
const Tensor& Node::tensor(const std::string& name) const {
  auto it = tensors.find(name);
  ADGRAPH_CHECK(it != tensors.end())
      << "node " << this->name << " tensor " << name;
  return it->second;
}

Graph::Graph() : registry_(&OpRegistry::global()) {}
Graph::~Graph() = default;

Value Graph::add_node(const std::string& op,
                      std::vector<Value> inputs,
                      nlohmann::json attrs,
                      NodeOptions options) {
  return add_node_outputs(
      op, std::move(inputs), std::move(attrs), std::move(options))[0];
}

namespace {

// The node's output shapes by its op's shape rule, each within the limit
// for one tensor.
void infer_output_shapes(const OpDef& def, const Graph& graph, Node& node) {
  node.output_shapes = def.shape(ShapeContext(node, graph));
  ADGRAPH_CHECK(def.num_outputs == 0 ||
                static_cast<int>(node.output_shapes.size()) == def.num_outputs)
      << "shape rule of " << def.name << " returned the wrong number of shapes";
  for (std::size_t k = 0; k < node.output_shapes.size(); ++k) {
    const Shape& shape = node.output_shapes[k];
    if (checked_num_elements(shape) >= 0) continue;
    throw ShapeError("output " + std::to_string(k) + " would have shape " +
                         shape_string(shape) + ", more than 2^30 elements " +
                         "(the limit for one tensor, 8 GiB)",
                     node.name,
                     def.name,
                     "shape");
  }
}

// "pe:1" names output 1 of node "pe" in fetches, feeds and documents, so
// no node may be called that.
void check_name(const std::string& name, const std::string& op) {
  if (name.find(':') == std::string::npos) return;
  throw GraphError(
      "a node name may not hold ':', which names a node's outputs "
      "(\"name:k\"); choose a name without ':'",
      name,
      op,
      "name");
}

}  // namespace

std::vector<Value> Graph::add_node_outputs(const std::string& op,
                                           std::vector<Value> inputs,
                                           nlohmann::json attrs,
                                           NodeOptions options) {
  const int id = num_nodes();
  std::string name =
      options.name.empty() ? op + "_" + std::to_string(id) : options.name;
  const OpDef* def = registry_->find(op);
  if (def == nullptr) {
    try {
      def = &registry_->get(op);  // may complete the registry (op.h)
    } catch (const GraphError& e) {
      throw GraphError(e.detail(), name, {}, "op");
    }
  }
  check_name(name, op);
  if (by_name_.count(name)) {
    throw GraphError("duplicate node name", name, op, "name");
  }

  check_inputs(*def, inputs, id, this, name);

  auto node = std::make_unique<Node>();
  node->id = id;
  node->name = name;
  node->op = def;
  node->inputs = std::move(inputs);

  set_attributes(*def, std::move(attrs), options.tensors, name, node.get());

  for (const Value& dep : options.after) {
    if (!dep.valid() || &dep.graph() != this || dep.node_id() >= id) {
      throw GraphError("control input is not an earlier node of this graph",
                       name,
                       op,
                       "after");
    }
    node->control_inputs.push_back(dep.node_id());
  }

  node->loop = std::move(options.loop);
  node->resource = std::move(options.resource);
  node->communication = def->communication;
  node->every_rank = def->every_rank;
  if (node->loop) {
    node->communication = options.body.communicates;
    node->every_rank = options.body.every_rank;
    if (node->communication) set_comm(options.body.comm);
  } else if (def->communicator) {
    // The first communication node binds the graph's communicator, before
    // its shape rule (which may ask for the communicator's size) runs.
    if (!comm_) set_comm(def->communicator());
    node->comm = options.comm ? std::move(options.comm)
                 : scope_     ? scope_
                              : comm_;
  }
  if (options.comm) {
    throw GraphError(
        "only communication ops take a communicator", name, op, "comm");
  }
  infer_output_shapes(*def, *this, *node);

  if (node->communication) {
    // Ghost dependency: every communication node runs after the previous
    // one, so all ranks issue their MPI calls in creation order.
    node->ghost_input = last_communication_;
    last_communication_ = id;
    node->communication_index = num_communication_++;
  }

  by_name_.emplace(name, id);
  const int num_outputs = node->num_outputs();
  nodes_.push_back(std::move(node));
  std::vector<Value> outputs;
  for (int i = 0; i < num_outputs; ++i) outputs.emplace_back(this, id, i);
  return outputs;
}

void Graph::add_control_input(Value node, Value dependency) {
  if (!node.valid() || &node.graph() != this || !dependency.valid() ||
      &dependency.graph() != this) {
    throw GraphError("control input between values of different graphs");
  }
  if (dependency.node_id() >= node.node_id()) {
    throw GraphError("control input \"" + dependency.name() +
                         "\" is not older than the node",
                     node.name(),
                     node.node().op_name(),
                     "after");
  }
  nodes_[node.node_id()]->control_inputs.push_back(dependency.node_id());
}

Value Graph::placeholder(const std::string& name, Shape shape) {
  NodeOptions options;
  options.name = name;
  return add_node("placeholder", {}, {{"shape", shape}}, std::move(options));
}

Value Graph::constant(Tensor value, const std::string& name) {
  NodeOptions options;
  options.name = name;
  options.tensors["value"] = std::move(value);
  return add_node("constant", {}, nlohmann::json::object(), std::move(options));
}

const Node* Graph::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : nodes_[it->second].get();
}

Value Graph::get(const std::string& name) {
  const Node* node = find(name);
  if (node == nullptr) throw GraphError("no node of this name", name);
  return Value(this, node->id, 0);
}

void Graph::set_default_checkpoints(CheckpointSchedule schedule) {
  std::string error;
  if (schedule.kind == CheckpointSchedule::Kind::kDefault) {
    error = "the graph's default cannot itself be graph_default()";
  } else if (!schedule.is_valid(&error)) {
  } else {
    default_checkpoints_ = schedule;
    return;
  }
  throw OptionsError(error, {}, {}, "default checkpoints");
}

CommScope::CommScope(Graph& graph, std::shared_ptr<CommContext> comm)
    : graph_(graph), saved_(graph.scope_) {
  graph_.scope_ = std::move(comm);
}

CommScope::~CommScope() { graph_.scope_ = std::move(saved_); }

void Graph::set_comm(std::shared_ptr<CommContext> comm) {
  if (comm_ && comm_ != comm) {
    throw GraphError(
        "a graph's communication nodes must share one communicator");
  }
  comm_ = std::move(comm);
}

}  // namespace adgraph
