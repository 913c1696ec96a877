#include "mpi_ops/point_to_point.h"

#include <utility>

#include "core/op.h"
#include "mpi_ops/collectives.h"
#include "mpi_ops/communicator.h"
#include "mpi_ops/peer_attrs.h"
#include "mpi_ops/tags.h"
#include "ops/elementwise.h"

namespace adgraph {
namespace {

using namespace mpi_detail;  // mpi_ops/peer_attrs.h

// mpi_sendrecv (transpose = false) and its transpose, mpi_sendrecv_adjoint:
// each is the other's adjoint, so one definition serves both.
OpDef sendrecv_def(std::string name, std::string doc, bool transpose) {
  OpDef def = every_rank_op(std::move(name), std::move(doc));
  def.inputs = {"x"};
  def.input_docs = {
      transpose ? "on dest: the value sent back to src; on src: its own term; "
                  "other ranks: passed through"
                : "on src: the value sent to dest; on every rank: what it "
                  "returns unless it is dest"};
  def.output_docs = {
      transpose ? "on src: x + dest's x; on dest: zeros; on other ranks: x"
                : "on dest: src's x; on src and other ranks: their own x"};
  def.ranks_doc =
      transpose
          ? "Every rank runs it; only dest sends and only src receives. "
            "Ranks other than src and dest return x. src == dest returns x. "
            "Adjoint: mpi_sendrecv."
          : "Every rank runs it; only src sends and only dest receives. "
            "Ranks other than src and dest return x. src == dest returns x. "
            "Adjoint: mpi_sendrecv_adjoint (dest's cotangent goes back to "
            "src).";
  def.attrs = {peer_attr("src", "sending rank"),
               peer_attr("dest", "receiving rank"),
               tag_attr()};
  def.shape = [](const ShapeContext& c) {
    check_peer(c, "src");
    check_peer(c, "dest");
    return Shapes{c.input_shape(0)};
  };
  // The peers and tag are the node's: read once (OpDef::bind).
  def.bind = [transpose](const Node& n) {
    return comm_kernel(
        [transpose,
         src = attr(n, "src"),
         dest = attr(n, "dest"),
         tag = attr(n, "tag")](KernelContext& c, Communicator& comm) {
          const Tensor& x = c.input(0);
          Tensor& y = c.output(0);
          y.array() = x.array();
          if (src == dest) return;
          if (!transpose && comm.rank() == src)
            comm.send(x.data(), x.size(), dest, tag);
          if (!transpose && comm.rank() == dest)
            comm.recv(y.data(), y.size(), src, tag);
          if (transpose && comm.rank() == dest) {
            comm.send(x.data(), x.size(), src, tag);
            y.array().setZero();
          }
          if (transpose && comm.rank() == src) {
            comm.recv(y.data(), y.size(), dest, tag);
            y.array() += x.array();
          }
        });
  };
  def.gradient = [transpose](const GradientContext& c) {
    const Node& n = c.node();
    const int src = attr(n, "src"), dest = attr(n, "dest"),
              tag = attr(n, "tag");
    return Values{transpose ? mpi_sendrecv(c.grad(), src, dest, tag)
                            : mpi_sendrecv_adjoint(c.grad(), src, dest, tag)};
  };
  def.tangent = linear_tangent;
  return def;
}

}  // namespace

Value mpi_send(Value x, int dest, int tag) {
  register_mpi_ops_layer();
  return x.graph().add_node("mpi_send", {x}, {{"dest", dest}, {"tag", tag}});
}
Value mpi_recv(Value like, int src, int tag) {
  register_mpi_ops_layer();
  return like.graph().add_node(
      "mpi_recv", {like}, {{"src", src}, {"tag", tag}});
}
Value mpi_sendrecv(Value x, int src, int dest, int tag) {
  register_mpi_ops_layer();
  return x.graph().add_node(
      "mpi_sendrecv", {x}, {{"src", src}, {"dest", dest}, {"tag", tag}});
}
Value mpi_sendrecv_adjoint(Value x, int src, int dest, int tag) {
  register_mpi_ops_layer();
  return x.graph().add_node("mpi_sendrecv_adjoint",
                            {x},
                            {{"src", src}, {"dest", dest}, {"tag", tag}});
}

namespace {

void register_mpi_send_op() {
  // y = x, and x goes to dest;  x̄ = ȳ + recv(from dest)
  OpDef send("mpi_send", "sends x to dest; y = x", {"x"});
  send.attrs = {peer_attr("dest", "receiving rank"), tag_attr()};
  send.input_docs = {"the tensor sent to dest"};
  send.output_docs = {"x itself (so later nodes may depend on the send)"};
  send.ranks_doc =
      "Only this rank runs it: dest must run an mpi_recv (or mpi_irecv) with "
      "src = this rank and the same tag. Adjoint: x̄ = ȳ + the cotangent "
      "received back from dest.";
  send.communication = true;
  send.communicator = world_communicator;
  send.shape = [](const ShapeContext& c) {
    check_peer(c, "dest");
    return Shapes{c.input_shape(0)};
  };
  // When x dies here, y holds x's buffer; when y is not read either, the
  // message takes that buffer and y gets a spare one: no copy at all.
  send.in_place = {{0, 0}};
  send.bind = [](const Node& n) {
    const int dest = attr(n, "dest"), tag = attr(n, "tag");
    return comm_kernel([dest, tag](KernelContext& c, Communicator& comm) {
      const Tensor& x = c.input(0);
      Tensor& y = c.output(0);
      const bool in_place = &x == &y;
      if (in_place && !c.output_used(0)) {
        comm.send_buffer(y, dest, tag);
        return;
      }
      comm.send(x.data(), x.size(), dest, tag);
      if (!in_place && c.output_used(0)) y.array() = x.array();
    });
  };
  send.gradient = [](const GradientContext& c) {
    const Node& n = c.node();
    return Values{c.grad() +
                  mpi_recv(c.grad(), attr(n, "dest"), attr(n, "tag"))};
  };
  send.tangent = linear_tangent;
  register_op(std::move(send));
}

void register_mpi_recv_op() {
  // y = message from src;  ȳ goes back to src, like gets nothing
  OpDef recv("mpi_recv",
             "y = the tensor (of like's shape) received from src",
             {"like"});
  recv.attrs = {peer_attr("src", "sending rank"), tag_attr()};
  recv.input_docs = {
      "any value of the message's shape (only its shape is used)"};
  recv.output_docs = {"the tensor src sent (like's shape)"};
  recv.ranks_doc =
      "Only this rank runs it: src must run an mpi_send (or mpi_isend) to "
      "this rank with the same tag; without one the receive waits until "
      "the communication deadline. Adjoint: ȳ is sent back to src; like "
      "gets no cotangent.";
  recv.shape_only = {0};  // like is not read: it need not stay alive
  recv.communication = true;
  recv.communicator = world_communicator;
  recv.shape = [](const ShapeContext& c) {
    check_peer(c, "src");
    return Shapes{c.input_shape(0)};
  };
  recv.bind = [](const Node& n) {
    const int src = attr(n, "src"), tag = attr(n, "tag");
    return comm_kernel([src, tag](KernelContext& c, Communicator& comm) {
      Tensor& y = c.output(0);
      comm.recv(y.data(), y.size(), src, tag);
    });
  };
  recv.gradient = [](const GradientContext& c) {
    // The send is a side effect: gradients() makes its results depend on the
    // last adjoint communication node, so this send always runs.
    mpi_send(c.grad(), attr(c.node(), "src"), attr(c.node(), "tag"));
    return Values{Value()};
  };
  recv.tangent = linear_tangent;
  register_op(std::move(recv));
}

}  // namespace

void register_point_to_point_ops() {
  register_mpi_send_op();
  register_mpi_recv_op();
  // src: y = x (and sends x);  dest: y = x_src;  others: y = x
  // x̄ = mpi_sendrecv_adjoint(ȳ)
  register_op(sendrecv_def(
      "mpi_sendrecv",
      "rank src sends x to dest, which returns it; others return x",
      false));
  // src: y = x + x_dest;  dest: y = 0 (and sends x);  others: y = x
  // x̄ = mpi_sendrecv(ȳ)
  register_op(sendrecv_def(
      "mpi_sendrecv_adjoint",
      "transpose of mpi_sendrecv: dest sends x to src, which adds it",
      true));
}

}  // namespace adgraph
