// The op interface. An op is one OpDef record: name, inputs, attribute
// schema, shape rule, compute kernel and symbolic gradient builder. Ops are
// looked up by name in an OpRegistry; nothing switches on op kind.
//
// Writing a custom op (the heat step in solvers/ is written exactly so):
//
//   OpDef def("scale", "y = alpha * x", {"x"});
//   def.attrs = {{"alpha", AttrType::kFloat, 1.0, "factor"}};
//   def.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
//   def.compute = [](KernelContext& c) {
//     c.output(0).array() = c.attr_float("alpha") * c.input(0).array();
//   };
//   def.gradient = [](const GradientContext& c) {
//     return Values{c.grad(0) * c.node().attr_float("alpha")};
//   };
//   def.tangent = [](const TangentContext& c) {
//     return Values{c.tangent(0) * c.node().attr_float("alpha")};
//   };
//   register_op(std::move(def));
#pragma once

#include <array>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/enum_names.h"
#include "core/fwd.h"
#include "core/graph.h"
#include "core/tensor.h"

namespace adgraph {

using Shapes = std::vector<Shape>;
using Values = std::vector<Value>;

enum class AttrType { kInt, kFloat, kBool, kString, kInts, kFloats, kTensor };

constexpr auto enum_names(AttrType) {
  return std::array{EnumName{AttrType::kInt, "int"},
                    EnumName{AttrType::kFloat, "float"},
                    EnumName{AttrType::kBool, "bool"},
                    EnumName{AttrType::kString, "string"},
                    EnumName{AttrType::kInts, "int list"},
                    EnumName{AttrType::kFloats, "float list"},
                    EnumName{AttrType::kTensor, "tensor"}};
}

// "int", "float", ... as shown by error messages and --list-ops.
inline const char* attr_type_name(AttrType type) {
  return name_of(type).data();
}

// One attribute of an op's schema.
struct AttrSpec {
  std::string name;
  AttrType type = AttrType::kInt;
  // Value used when the attribute is not given; null means required.
  nlohmann::json default_value;
  std::string doc;
  // Valid range for kInt and kFloat (inclusive).
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
};

// What a shape rule sees: the node being built (name, attributes, inputs).
class ShapeContext final {
 public:
  ShapeContext(const Node& node, const Graph& graph)
      : node_(node), graph_(graph) {}
  const Node& node() const { return node_; }
  const Graph& graph() const { return graph_; }
  // The graph's communicator (bound before a communication op's shape rule
  // runs, OpDef::communicator); nullptr for a graph without one.
  CommContext* comm() const;
  int num_inputs() const;
  const Shape& input_shape(int i) const;
  int64_t attr_int(const std::string& name) const;
  double attr_float(const std::string& name) const;
  Shape attr_ints(const std::string& name) const;
  // Throws ShapeError naming the node, its op and `field`.
  [[noreturn]] void fail(const std::string& field,
                         const std::string& detail) const;

 private:
  const Node& node_;
  const Graph& graph_;
};

// What a kernel sees at run time: inputs, preallocated outputs (shapes as
// inferred, contents uninitialised) and the communicator, if any.
class KernelContext final {
 public:
  KernelContext(const Node& node,
                const Tensor* const* inputs,
                Tensor* outputs,
                CommContext* comm)
      : node_(node), inputs_(inputs), outputs_(outputs), comm_(comm) {}
  const Node& node() const { return node_; }
  int num_inputs() const;
  const Tensor& input(int i) const { return *inputs_[i]; }
  Tensor& output(int i) { return outputs_[i]; }
  // The graph's communicator; nullptr for a graph without communication.
  CommContext* comm() const { return comm_; }
  int64_t attr_int(const std::string& name) const;
  double attr_float(const std::string& name) const;
  // How many readers output `k` has in this run (later nodes' inputs and
  // fetches; 1 when the executor does not say). A kernel may skip an unread
  // output that is costly to produce; it must still leave a tensor of the
  // declared shape there.
  int output_readers(int k) const { return readers_ ? readers_[k] : 1; }
  bool output_used(int k) const { return output_readers(k) > 0; }
  // The executor's per-output reader counts (nullptr: one each).
  void set_output_readers(const int* readers) { readers_ = readers; }
  // Whether the kernel may give output `k` a buffer of its own of the same
  // size (swapping it into output(k).array(), after its last read of the
  // inputs) instead of writing into the one it got: false for a caller's
  // tensor (Session::run_into), which keeps its buffer.
  bool output_replaceable(int k) const {
    return kept_ == nullptr || kept_[k] == nullptr;
  }
  // The executor's caller tensors by output (nullptr entries: its own).
  void set_kept_outputs(Tensor* const* kept) { kept_ = kept; }
  // Input `i` as a tensor the kernel may take the buffer of (swapping in
  // one of the same size, contents unspecified), when the executor gives it
  // up (OpDef::consumes); nullptr otherwise.
  Tensor* consumable(int i) const {
    return consumable_ == nullptr ? nullptr : consumable_[i];
  }
  // The executor's consumable inputs by input (nullptr entries: not).
  void set_consumable_inputs(Tensor* const* inputs) { consumable_ = inputs; }

 private:
  const Node& node_;
  const Tensor* const* inputs_;
  Tensor* outputs_;
  CommContext* comm_;
  const int* readers_ = nullptr;
  Tensor* const* kept_ = nullptr;
  Tensor* const* consumable_ = nullptr;
};

// What a gradient builder sees: the forward node's inputs and outputs as
// handles and the cotangent of each output (zeros where none flowed).
class GradientContext final {
 public:
  GradientContext(const Node& node,
                  Values outputs,
                  Values output_grads,
                  std::vector<bool> needed = {});
  const Node& node() const { return node_; }
  Graph& graph() const;
  int num_inputs() const;
  const Value& input(int i) const;
  const Value& output(int i) const { return outputs_[i]; }
  // Cotangent of output `i`.
  const Value& grad(int i = 0) const { return output_grads_[i]; }
  // Whether gradients() will use the cotangent of input `i`; a builder may
  // return an invalid Value for (and skip the work of) the others.
  bool needs_gradient(int i) const { return needed_.empty() || needed_[i]; }
  // The cotangent of input `i` summed so far over the nodes that use it
  // after this one; invalid when there is none yet (or when the same value
  // feeds two of this node's inputs). A builder may add it into its result
  // for input `i` (saving the separate `add` pass over it) and then calls
  // absorb(i): gradients() takes that result as the whole sum.
  const Value& accumulated(int i) const;
  void absorb(int i) const;
  bool absorbed(int i) const { return !absorbed_.empty() && absorbed_[i]; }
  // gradients() hands in the partial sums before calling the builder.
  void set_accumulated(Values partial) { accumulated_ = std::move(partial); }

 private:
  const Node& node_;
  Values outputs_;
  Values output_grads_;
  std::vector<bool> needed_;
  Values accumulated_;
  mutable std::vector<bool> absorbed_;
};

// What a tangent (forward-mode) rule sees: the node's inputs and outputs as
// handles and the tangent of each input (invalid where it is zero).
class TangentContext final {
 public:
  TangentContext(const Node& node, Values outputs, Values input_tangents);
  const Node& node() const { return node_; }
  Graph& graph() const;
  int num_inputs() const;
  const Value& input(int i) const;
  const Value& output(int k = 0) const { return outputs_[k]; }
  // Tangent of input `i`; invalid when it is zero.
  const Value& tangent(int i = 0) const { return input_tangents_[i]; }
  // Tangent of input `i`, with a zeros node built when it is zero.
  Value tangent_or_zeros(int i) const;
  // Whether any input has a (non-zero) tangent.
  bool any_tangent() const;

 private:
  const Node& node_;
  Values outputs_;
  Values input_tangents_;
};

using ShapeFn = std::function<Shapes(const ShapeContext&)>;
using ComputeFn = std::function<void(KernelContext&)>;
// Makes the kernel of one node, with what it needs from the node's
// attributes read once (OpDef::bind).
using BindFn = std::function<ComputeFn(const Node&)>;
// Returns one handle per input: its cotangent contribution, or an invalid
// Value for "no contribution" (a zero gradient).
using GradientFn = std::function<Values(const GradientContext&)>;
// Returns one handle per output: its tangent, or an invalid Value for zero.
using TangentFn = std::function<Values(const TangentContext&)>;

// The tangent rule of an op that is linear in all its inputs jointly (a
// reshape, a sum, a halo exchange): the op itself applied to the tangents,
// with the node's attributes. For a communication op it always builds the
// node (zeros in, zeros out), so the messages pair up on every rank.
Values linear_tangent(const TangentContext& c);
// The tangent rule of a one-output op linear in each of its two inputs (a
// product): op(ȧ, b) + op(a, ḃ), zero terms skipped.
Values bilinear_tangent(const TangentContext& c);

struct OpDef {
  OpDef() = default;
  // The three fields every op states first: its name, its math, its inputs.
  OpDef(std::string op_name,
        std::string op_doc,
        std::vector<std::string> op_inputs = {})
      : name(std::move(op_name)),
        doc(std::move(op_doc)),
        inputs(std::move(op_inputs)) {}

  std::string name;
  // One line shown by --list-ops; it states the op's math.
  std::string doc;
  // Names of the data inputs, in order.
  std::vector<std::string> inputs;
  // When true the last input may repeat (zero or more times), as in concat.
  bool variadic = false;
  // Optional, for help() (Python's docstrings): one line per input, in
  // `inputs` order (a variadic op's last line covers every repeat), saying
  // what it holds and its shape; one line per output, in order (an op with
  // num_outputs 0: one line per kind of output, in order). Every
  // communication op has both.
  std::vector<std::string> input_docs;
  std::vector<std::string> output_docs;
  // Communication ops: which rank sends what to which, and what a rank
  // without a partner gets (no neighbour on that side, not the root,
  // neither src nor dest). Empty for the others.
  std::string ranks_doc;
  std::vector<AttrSpec> attrs;
  // 0: the shape rule decides per node (a loop's outputs follow its body).
  int num_outputs = 1;
  ShapeFn shape;
  ComputeFn compute;
  // Optional, for an op whose kernel reads attributes: makes one node's
  // kernel with them parsed (a reduce op, a time step). Executors take each
  // node's kernel once per plan through kernel_of(), not on every run. An
  // op with bind needs no compute: OpRegistry::add makes it bind per call.
  BindFn bind;
  // Empty: the op has no adjoint and gradients() fails at it, naming it.
  GradientFn gradient;
  // Forward-mode rule used by jvp(). Empty: jvp() fails at the op, naming
  // it. Every built-in op with a gradient has one. A communication op's rule
  // is called on every rank for every such node, also with all tangents
  // zero, and must build the same communication nodes whatever is zero.
  TangentFn tangent;
  // Communication nodes are chained by ghost dependencies (Node::ghost_input,
  // in creation order) so every rank issues its MPI calls in one order. A
  // ghost dependency orders; it does not make a run execute the older node
  // (point-to-point nodes excepted, see Session::run).
  bool communication = false;
  // Every rank runs each node of this op (collectives, and pairwise
  // exchanges such as mpi_sendrecv), so it joins the per-plan cross-rank
  // sequence check and runs whenever a plan runs a later communication node.
  bool every_rank = false;
  // The input shapes of an every-rank node may differ from rank to rank (a
  // distributed sparse matrix's rows and entries): the cross-rank sequence
  // check then compares its op and attributes, not its shapes.
  bool shapes_differ_by_rank = false;
  // Output 0 is a request that one later node completes (mpi_isend,
  // mpi_irecv: their wait). A plan that runs such a node must run exactly
  // one reader of that output, or Session throws RunError naming it; and
  // gradients() hands the cotangent its reader's adjoint builds for that
  // output (the reverse request) to the node's own builder even when the
  // node does not depend on the differentiated variables.
  bool request = false;
  // For ops that need a communicator (communication ops, mpi_rank): the
  // communicator a graph without one binds when the first node of this op
  // is added, before the shape rule runs (ShapeContext::comm).
  std::function<std::shared_ptr<CommContext>()> communicator;
  // (output, input) pairs: a sequential Session hands input's buffer to the
  // output when this node is the input's last consumer, the input is
  // neither fed nor fetched nor given to another input of the node, and
  // both have as many elements. The kernel must then read each element of
  // the input before it writes the output at the same index (element-wise
  // ops do), and sees the same tensor through input(i) and output(k).
  std::vector<std::pair<int, int>> in_place;
  // The same pairs for one node, for an op whose pairs depend on its
  // attributes (a stencil output that starts from an input); used instead
  // of in_place when set.
  std::function<std::vector<std::pair<int, int>>(const Node&)> in_place_of;
  // Inputs whose buffer the kernel may keep (mpi_isend's x, which its
  // message then sends without a copy): a sequential run gives one up
  // (KernelContext::consumable) on the same terms as an in_place input.
  std::vector<int> consumes;
  // Inputs of which the kernel uses only the shape (mpi_recv's like): a
  // plan orders the node after them but does not keep their tensors alive
  // for it, so the kernel must not read input(i) for them.
  std::vector<int> shape_only;
};

// The kernel an executor plans for node `n`: OpDef::bind's, else compute.
ComputeFn kernel_of(const Node& n);
// Node `n`'s (output, input) pairs that may share a buffer:
// OpDef::in_place_of's, else OpDef::in_place.
std::vector<std::pair<int, int>> in_place_pairs(const Node& n);

// Whether input `i` of `def` is one of its shape-only inputs.
inline bool is_shape_only(const OpDef& def, int i) {
  for (int k : def.shape_only)
    if (k == i) return true;
  return false;
}

// The set of known ops, by name.
class OpRegistry final {
 public:
  // Adds `def`. Throws GraphError when the name is taken or a required
  // member (name, shape, compute or bind) is missing. Code outside the core
  // calls register_op, which adds to the global registry.
  void add(OpDef def);
  // nullptr when unknown.
  const OpDef* find(const std::string& name) const;
  // Throws GraphError when unknown, naming the nearest registered name, or,
  // when none is near, saying how a family's ops get registered.
  const OpDef& get(const std::string& name) const;
  // All ops, sorted by name.
  std::vector<const OpDef*> all() const;

  // The process-wide registry. On first use it registers the core's own
  // ops (core/core_ops.h), and nothing else: the core calls no code above
  // it. Each layer above registers its own families, once, when its node
  // builders are first called (register_ops_layer(), …,
  // solvers::register_solvers_layer(), each also registering the layers
  // below it); a program that looks ops up by name only, as the JSON
  // driver and the Python module do, calls register_all_ops()
  // (builtin_ops.h) first.
  static OpRegistry& global();

  // `register_all` registers every op of the library (adgraph.h passes
  // register_all_ops): the global registry's get() runs it when a name is
  // not found, then looks again, so a program that includes adgraph.h may name
  // any op without calling a builder first. The core holds only the pointer; it
  // names no code above it.
  static void set_completion(void (*register_all)());

 private:
  std::map<std::string, std::unique_ptr<OpDef>> ops_;
};

// Registers an op in the global registry: the one way to add an op, for
// the library's own families and for users alike.
void register_op(OpDef def);

}  // namespace adgraph
