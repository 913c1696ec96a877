#include "mpi_ops/nonblocking.h"

#include <memory>
#include <string>
#include <utility>

#include "core/core_ops.h"
#include "core/error.h"
#include "core/op.h"
#include "mpi_ops/collectives.h"
#include "mpi_ops/communicator.h"
#include "mpi_ops/peer_attrs.h"
#include "mpi_ops/tags.h"

namespace adgraph {
namespace {

using namespace mpi_detail;  // mpi_ops/peer_attrs.h

constexpr const char* kIsend = "mpi_isend";
constexpr const char* kIrecv = "mpi_irecv";

int64_t handle_of(const Tensor& request) {
  return static_cast<int64_t>(request[0]);
}

// The shape a wait of `request` yields; fails unless a start node made it.
Shape completed_shape(const ShapeContext& c, int i) {
  const Value& request = c.node().inputs[i];
  const Node& start = request.node();
  const std::string field = "input " + std::to_string(i) + " (\"request\")";
  if (start.op_name() == kIrecv) return start.inputs[0].shape();
  if (start.op_name() == kIsend) return Shape{0};
  c.fail(field,
         "\"" + start.name + "\" (" + start.op_name() +
             ") is not a request: wait for an mpi_isend or mpi_irecv");
}

// The reverse message of a completed request, posted where the forward
// request completed: an irecv of x̄ from dest for an isend, an isend of ȳ
// to src for an irecv.
Value reverse_request(const Value& request, const Value& grad) {
  const Node& start = request.node();
  const int tag = attr(start, "tag");
  if (start.op_name() == kIsend)
    return mpi_irecv(start.inputs[0], attr(start, "dest"), tag);
  return mpi_isend(grad, attr(start, "src"), tag);
}

// The cotangent of a start node's request must be the reverse request its
// single wait posted; anything else means no wait, or several.
const Value& reverse_of(const GradientContext& c, const char* reverse_op) {
  const Value& g = c.grad(0);
  if (!g.valid() || g.node().op_name() != reverse_op) {
    throw GraphError(
        "its request must be completed by exactly one mpi_wait or "
        "mpi_waitall before gradients() can build its adjoint",
        c.node().name,
        c.node().op_name(),
        "request");
  }
  return g;
}

OpDef start_def(const char* name, const char* doc, const char* peer) {
  OpDef def(name, doc);
  def.attrs = {
      peer_attr(peer, peer[0] == 'd' ? "receiving rank" : "sending rank"),
      tag_attr()};
  def.communication = true;
  def.request = true;
  def.communicator = world_communicator;
  def.tangent = linear_tangent;
  return def;
}

}  // namespace

Value mpi_isend(Value x, int dest, int tag) {
  register_mpi_ops_layer();
  return x.graph().add_node(kIsend, {x}, {{"dest", dest}, {"tag", tag}});
}
Value mpi_irecv(Value like, int src, int tag) {
  register_mpi_ops_layer();
  return like.graph().add_node(kIrecv, {like}, {{"src", src}, {"tag", tag}});
}
Value mpi_irecv(Graph& graph, Shape shape, int src, int tag) {
  return mpi_irecv(zeros(graph, std::move(shape)), src, tag);
}
Value mpi_wait(Value request) {
  register_mpi_ops_layer();
  return request.graph().add_node("mpi_wait", {request});
}
std::vector<Value> mpi_waitall(const std::vector<Value>& requests) {
  register_mpi_ops_layer();
  if (requests.empty()) throw GraphError("mpi_waitall of no requests");
  return requests[0].graph().add_node_outputs("mpi_waitall", requests);
}

namespace {

void register_isend_op() {
  // y = request for x on its way to dest;  x̄ = the cotangent its reverse
  // request (ȳ) receives
  OpDef isend =
      start_def(kIsend, "starts sending x to dest; y = request", "dest");
  isend.inputs = {"x"};
  isend.input_docs = {"the tensor sent to dest"};
  isend.output_docs = {
      "a request (a scalar handle) that exactly one mpi_wait or mpi_waitall "
      "must complete"};
  isend.ranks_doc =
      "Only this rank runs it: dest must receive with src = this rank and "
      "the same tag. Adjoint: its wait receives x̄ back from dest.";
  isend.shape = [](const ShapeContext& c) {
    check_peer(c, "dest");
    return Shapes{Shape{}};
  };
  // When x dies here, the message takes its buffer (no copy).
  isend.consumes = {0};
  isend.bind = [](const Node& n) {
    const int dest = attr(n, "dest"), tag = attr(n, "tag");
    return comm_kernel([dest, tag](KernelContext& c, Communicator& comm) {
      Tensor* mine = c.consumable(0);
      const Tensor& x = c.input(0);
      c.output(0)[0] = static_cast<double>(
          mine != nullptr ? comm.isend_buffer(*mine, dest, tag)
                          : comm.isend(x.data(), x.size(), dest, tag));
    });
  };
  isend.gradient = [](const GradientContext& c) {
    return Values{mpi_wait(reverse_of(c, kIrecv))};
  };
  register_op(std::move(isend));
}

void register_irecv_op() {
  // y = request for a tensor of like's shape from src;  like gets nothing,
  // the reverse request (ȳ, an isend of the cotangent) is completed here
  OpDef irecv = start_def(
      kIrecv,
      "starts receiving a tensor of like's shape from src; y = request",
      "src");
  irecv.inputs = {"like"};
  irecv.input_docs = {
      "any value of the message's shape (only its shape is used)"};
  irecv.output_docs = {
      "a request (a scalar handle); its mpi_wait gives the tensor received"};
  irecv.ranks_doc =
      "Only this rank runs it: src must send to this rank with the same tag; "
      "without a sender the wait waits until the communication deadline. "
      "Adjoint: the cotangent of the received tensor goes back to src.";
  irecv.shape_only = {0};  // like is not read: it need not stay alive
  irecv.shape = [](const ShapeContext& c) {
    check_peer(c, "src");
    return Shapes{Shape{}};
  };
  irecv.bind = [](const Node& n) {
    const int src = attr(n, "src"), tag = attr(n, "tag");
    const int64_t count = num_elements(n.inputs[0].shape());
    return comm_kernel([src, tag, count](KernelContext& c, Communicator& comm) {
      c.output(0)[0] = static_cast<double>(comm.irecv(count, src, tag));
    });
  };
  irecv.gradient = [](const GradientContext& c) {
    // A side effect, like mpi_recv's adjoint send: gradients() makes its
    // results wait for the newest adjoint communication node.
    mpi_wait(reverse_of(c, kIsend));
    return Values{Value()};
  };
  register_op(std::move(irecv));
}

// The kernel of mpi_wait and mpi_waitall. The arrays wait() is given are
// made once per node and plan. A received message lands in the output
// without a copy unless the output is a caller's tensor (run_into), which
// keeps its buffer.
ComputeFn bind_wait(const Node& node) {
  struct Arrays {
    std::vector<int64_t> handles, counts;
    std::vector<Tensor*> out;
    std::unique_ptr<bool[]> adopt;
  };
  auto arrays = std::make_shared<Arrays>();
  const std::size_t n = node.inputs.size();
  arrays->handles.resize(n);
  arrays->counts.resize(n);
  arrays->out.resize(n);
  arrays->adopt = std::make_unique<bool[]>(n);
  return comm_kernel([arrays](KernelContext& c, Communicator& comm) {
    Arrays& a = *arrays;
    const int n = static_cast<int>(a.handles.size());
    for (int i = 0; i < n; ++i) {
      a.handles[i] = handle_of(c.input(i));
      a.out[i] = &c.output(i);
      a.counts[i] = c.output(i).size();
      a.adopt[i] = c.output_replaceable(i);
    }
    comm.wait(
        a.handles.data(), a.out.data(), a.counts.data(), a.adopt.get(), n);
  });
}

// y_k = what request k completes with;  request k's cotangent = the
// reverse message of request k, posted here
OpDef wait_def(const char* name, const char* doc, bool all) {
  OpDef def(name, doc, {"request"});
  def.variadic = all;
  def.input_docs = {
      all ? "the requests of mpi_isend / mpi_irecv nodes, one output each"
          : "the request of an mpi_isend or mpi_irecv node"};
  def.output_docs = {
      std::string(all ? "for each request, in order: " : "") +
      "the tensor received (like's shape) for an mpi_irecv's request, an "
      "empty tensor of shape [0] for an mpi_isend's"};
  def.ranks_doc =
      "Only this rank runs it; it blocks until its messages complete (no "
      "longer than the communication deadline). Adjoint: the reverse "
      "messages of its requests, posted here.";
  def.num_outputs = all ? 0 : 1;
  def.communication = true;
  def.communicator = world_communicator;
  def.shape = [all](const ShapeContext& c) {
    if (all && c.num_inputs() == 0)
      c.fail("inputs", "mpi_waitall needs at least one request");
    Shapes out;
    for (int i = 0; i < c.num_inputs(); ++i)
      out.push_back(completed_shape(c, i));
    return out;
  };
  def.bind = bind_wait;
  def.gradient = [](const GradientContext& c) {
    Values out;
    for (int i = 0; i < static_cast<int>(c.node().inputs.size()); ++i)
      out.push_back(reverse_request(c.node().inputs[i], c.grad(i)));
    return out;
  };
  def.tangent = linear_tangent;
  return def;
}

}  // namespace

void register_nonblocking_ops() {
  register_isend_op();
  register_irecv_op();
  register_op(wait_def("mpi_wait",
                       "completes a request; y = the tensor received (or [0])",
                       false));
  register_op(wait_def(
      "mpi_waitall", "completes every request; y_k as mpi_wait of each", true));
}

}  // namespace adgraph
