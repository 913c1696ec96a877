// Graph, Node and Value: the static computational graph.
//
// Nodes are stored in creation order, which is also a topological order:
// a node's data and control inputs always exist before it does. Shapes are
// inferred when a node is built, so shape errors surface there.
#pragma once

#include <compare>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/checkpoint_schedule.h"
#include "core/fwd.h"
#include "core/tensor.h"

namespace adgraph {

// A light handle to one output of one node of a graph. Copyable; it does not
// own the graph, which must outlive it. A default-constructed Value is
// invalid (it stands for "no value", e.g. a zero gradient contribution).
class Value final {
 public:
  Value() = default;
  Value(Graph* graph, int node, int output = 0)
      : graph_(graph), node_(node), output_(output) {}

  bool valid() const { return graph_ != nullptr; }
  Graph& graph() const { return *graph_; }
  int node_id() const { return node_; }
  int output() const { return output_; }
  const Node& node() const;
  const Shape& shape() const;
  const std::string& name() const;

  friend bool operator==(const Value& a, const Value& b) {
    return a.graph_ == b.graph_ && a.node_ == b.node_ && a.output_ == b.output_;
  }
  friend auto operator<=>(const Value& a, const Value& b) {
    if (a.node_ != b.node_) return a.node_ <=> b.node_;
    return a.output_ <=> b.output_;
  }

 private:
  Graph* graph_ = nullptr;
  int node_ = -1;
  int output_ = 0;
};

// What the nodes of an op may share beyond their attributes: an object too
// large or too stateful for JSON (a sparse matrix's pattern and its
// solver, sparse/). The core only carries it along: a node built with
// NodeOptions::resource holds it from before its shape rule runs, and loop
// bodies' clones keep it; an op's derivative builders pass it on to the
// nodes they build.
class NodeResource {
 public:
  virtual ~NodeResource() = default;
};

struct Node {
  int id = -1;
  std::string name;
  const OpDef* op = nullptr;
  // Attributes after validation against the op's schema (defaults filled in).
  nlohmann::json attrs = nlohmann::json::object();
  // Tensor-valued attributes (e.g. a constant's value).
  std::map<std::string, Tensor> tensors;
  std::vector<Value> inputs;
  // Ordering-only edges: these nodes run before this one.
  std::vector<int> control_inputs;
  // Ghost dependency: the previous communication node (-1 for none or for a
  // local node). It orders communication; see Graph::add_node.
  int ghost_input = -1;
  std::vector<Shape> output_shapes;
  // Position among the graph's communication nodes, -1 for local nodes.
  int communication_index = -1;
  // The node communicates (its op does, or a loop body holds a
  // communication node) and so is chained by ghost dependencies.
  bool communication = false;
  // Every rank runs it (its op is every_rank, or a loop body holds such a
  // node), so it joins the plan-time sequence check.
  bool every_rank = false;
  // A loop node's body and schedule (core/loops/loop.h); null for other nodes.
  std::shared_ptr<const LoopSpec> loop;
  // The communicator of a node whose op needs one (OpDef::communicator);
  // null for other nodes. Its adjoint and tangent nodes use the same one.
  std::shared_ptr<CommContext> comm;
  // The op's shared object (NodeResource); null for most nodes.
  std::shared_ptr<NodeResource> resource;

  int num_outputs() const { return static_cast<int>(output_shapes.size()); }

  const std::string& op_name() const;
  int64_t attr_int(const std::string& name) const;
  double attr_float(const std::string& name) const;
  bool attr_bool(const std::string& name) const;
  std::string attr_string(const std::string& name) const;
  Shape attr_ints(const std::string& name) const;
  const Tensor& tensor(const std::string& name) const;
};

// Optional parts of a new node.
// What the graph needs to know of a node's body (a loop's; the loop code
// fills it in from core/loops/loop.h's LoopSpec::traits).
struct BodyTraits {
  bool communicates = false;          // a node of the body communicates
  bool every_rank = false;            // a node of the body runs on every rank
  std::shared_ptr<CommContext> comm;  // the body's communicator, if any
};

struct NodeOptions {
  // Unique name; empty gives "<op>_<id>".
  std::string name;
  // Control inputs: nodes that must run before this one.
  std::vector<Value> after;
  // Values of kTensor attributes given as tensors rather than JSON.
  std::map<std::string, Tensor> tensors;
  // The body of a loop node (core/loops/loop.h builds it).
  std::shared_ptr<const LoopSpec> loop;
  // With `loop`: what its body holds.
  BodyTraits body;
  // For an op that needs a communicator (OpDef::communicator): the one to
  // use. Empty: the graph's CommScope if one is open, else the graph's
  // communicator (bound by the first such node).
  std::shared_ptr<CommContext> comm;
  // The op's shared object, seen by its shape rule and kernel
  // (Node::resource).
  std::shared_ptr<NodeResource> resource;
};

// While it lives, communication nodes added to `graph` without
// NodeOptions::comm use `comm` (e.g. a row communicator of a patch grid):
//   { CommScope rows(g, world->row_communicator(2, 2)); s = mpi_allreduce(x); }
// The derivative builders open one for each communication node, so adjoint
// and tangent messages travel on the forward node's communicator. Scopes
// nest; a null `comm` means the graph's own.
class CommScope final {
 public:
  CommScope(Graph& graph, std::shared_ptr<CommContext> comm);
  ~CommScope();
  CommScope(const CommScope&) = delete;
  CommScope& operator=(const CommScope&) = delete;

 private:
  Graph& graph_;
  std::shared_ptr<CommContext> saved_;
};

// A static computational graph. Neither copyable nor movable: every Value
// points at its graph, so a move would leave them dangling. Hold it in a
// std::unique_ptr to hand it around.
class Graph final {
 public:
  Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  // Adds a node of registered op `op` and returns its first output.
  // Throws GraphError (unknown op, wrong input count, input from another
  // graph, bad attribute, duplicate name, a name holding ':', which names
  // outputs as in "pe:1") or ShapeError (from the op's shape rule), each
  // naming the node, the op and the field.
  Value add_node(const std::string& op,
                 std::vector<Value> inputs,
                 nlohmann::json attrs = nlohmann::json::object(),
                 NodeOptions options = {});
  // As add_node, returning every output of the new node.
  std::vector<Value> add_node_outputs(
      const std::string& op,
      std::vector<Value> inputs,
      nlohmann::json attrs = nlohmann::json::object(),
      NodeOptions options = {});

  // Makes `node` run after `dependency`; `dependency` must be older.
  void add_control_input(Value node, Value dependency);

  // A placeholder that Session::run must feed with a tensor of `shape`.
  Value placeholder(const std::string& name, Shape shape);
  // A constant node holding `value`.
  Value constant(Tensor value, const std::string& name = {});
  Value scalar(double value) { return constant(Tensor::scalar(value)); }

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int id) const { return *nodes_[id]; }
  // nullptr when no node has that name.
  const Node* find(const std::string& name) const;
  // Throws GraphError when no node has that name.
  Value get(const std::string& name);

  // The communicator of the graph's communication nodes; null until the
  // first one is built. A graph has at most one communicator; binding a
  // different one throws GraphError. Binding is allowed on a const graph
  // because the shape rules of communication ops bind it lazily.
  CommContext* comm() const { return comm_.get(); }
  const std::shared_ptr<CommContext>& shared_comm() const { return comm_; }
  void set_comm(std::shared_ptr<CommContext> comm);

  // The checkpoint schedule of loops built with
  // CheckpointSchedule::graph_default(); store_all() unless changed. Throws
  // OptionsError for an invalid schedule or for graph_default() itself.
  void set_default_checkpoints(CheckpointSchedule schedule);
  const CheckpointSchedule& default_checkpoints() const {
    return default_checkpoints_;
  }

  // Declares that every rank builds this graph identically (as adgraph-run
  // builds its document). Session then checks each new plan's
  // point-to-point messages pair up, on every rank and without
  // communicating (core/exec/plan_checks.h). Default: false, since graphs built
  // through the C++ API may differ by rank.
  void set_same_on_every_rank(bool same) { same_on_every_rank_ = same; }
  bool same_on_every_rank() const { return same_on_every_rank_; }

  // Id of the newest communication node, -1 if none.
  int last_communication() const { return last_communication_; }
  int num_communication_nodes() const { return num_communication_; }

  const OpRegistry& registry() const { return *registry_; }

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unordered_map<std::string, int> by_name_;
  std::shared_ptr<CommContext> comm_;
  std::shared_ptr<CommContext> scope_;
  bool same_on_every_rank_ = false;
  friend class CommScope;
  const OpRegistry* registry_;
  int last_communication_ = -1;
  int num_communication_ = 0;
  CheckpointSchedule default_checkpoints_ = CheckpointSchedule::store_all();
};

}  // namespace adgraph
