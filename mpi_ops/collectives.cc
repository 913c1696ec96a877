#include "mpi_ops/collectives.h"

#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/core_ops.h"
#include "core/error.h"
#include "core/exact_sum.h"
#include "core/op.h"
#include "mpi_ops/collective_impl.h"
#include "mpi_ops/communicator.h"
#include "mpi_ops/halo.h"
#include "mpi_ops/nonblocking.h"
#include "mpi_ops/point_to_point.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"

namespace adgraph {
namespace {

using namespace detail;  // mpi_ops/collective_impl.h

const std::set<std::string> kReduceOps = {"sum", "max", "min", "prod"};

// Shape [P, …x].
Shape stacked(const ShapeContext& c, const Shape& x) {
  Shape out{c.comm()->size()};
  out.insert(out.end(), x.begin(), x.end());
  return out;
}

// Shape x without its leading extent, which must be P.
Shape unstacked(const ShapeContext& c, const Shape& x) {
  const int size = c.comm()->size();
  if (x.empty() || x[0] != size) {
    c.fail("input \"x\"",
           "expected a leading extent of " + std::to_string(size) +
               " (the number of ranks), got shape " + shape_string(x));
  }
  return Shape(x.begin() + 1, x.end());
}

// The terms of a scalar cotangent that accumulate nodes sum: a sum of all
// elements (sum_to a scalar, sum without axes, or either reshaped, as an
// element-wise op's gradient sums its broadcast operand) gives its input's
// elements rather than their rounded sum. True when such a sum was opened.
bool open_sums(const Value& v, Values& terms) {
  const Node& n = v.node();
  const std::string& op = n.op_name();
  if (op == "accumulate") {
    const bool first = open_sums(n.inputs[0], terms);
    return open_sums(n.inputs[1], terms) || first;
  }
  const bool sums_all = (op == "sum_to" && v.shape().empty()) ||
                        (op == "sum" && n.attr_ints("axes").empty());
  if (sums_all) {
    terms.push_back(n.inputs[0]);
    return true;
  }
  if (op == "reshape" && num_elements(v.shape()) == 1) {
    Values inner;
    if (open_sums(n.inputs[0], inner)) {
      terms.insert(terms.end(), inner.begin(), inner.end());
      return true;
    }
  }
  terms.push_back(v);
  return false;
}

// Σ over ranks of a scalar's cotangent, on root (0 elsewhere), when the
// scalar multiplied a distributed array (every rank holds the scalar; its
// cotangent is a sum_to of the array's terms): one exact total over those
// terms of every rank, mpi_total, rather than each rank's rounded sum
// summed, whose rounding depends on how the array is split. Invalid for
// any other cotangent. The choice is read from each rank's graph, so every
// rank must build the same kind of cotangent here: a rank-dependent graph
// that differs gets Session's "collectives differ" RunError on every rank.
Value exact_total_of_terms(const Value& grad, int root) {
  Values terms;
  if (!grad.shape().empty() || !open_sums(grad, terms)) return {};
  for (Value& t : terms) t = reshape(t, {num_elements(t.shape())});
  return mpi_total(terms.size() == 1 ? terms[0] : concat(terms, 0), root);
}

const AttrSpec kExactAttr = {
    "exact",
    AttrType::kString,
    "auto",
    "sum exactly, rounded once: yes, no or auto (exact for at most 1024 "
    "elements)"};

void check_exact(const ShapeContext& c) {
  const std::string mode = c.node().attr_string("exact");
  if (mode != "yes" && mode != "no" && mode != "auto") {
    c.fail("attribute \"exact\"",
           "\"" + mode + "\" is not one of yes, no, auto");
  }
}

// Whether a sum node of exact `mode` over `elements` elements sums
// exactly.
bool sums_exactly(const std::string& mode, int64_t elements) {
  return mode == "yes" || (mode == "auto" && elements <= kExactAutoElements);
}

// Mask of the elements where this rank holds the extreme `y` of x over the
// ranks, ties to the lowest rank. Helper of the max/min adjoint.
Value allreduce_owner(Value x, Value y) {
  register_mpi_ops_layer();
  return x.graph().add_node("mpi_allreduce_owner", {x, y});
}

}  // namespace

Value mpi_sum(Value x, int root, const std::string& exact) {
  register_mpi_ops_layer();
  return x.graph().add_node("mpi_sum", {x}, {{"root", root}, {"exact", exact}});
}
Value mpi_allreduce(Value x, const std::string& op, const std::string& exact) {
  register_mpi_ops_layer();
  return x.graph().add_node(
      "mpi_allreduce", {x}, {{"op", op}, {"exact", exact}});
}
Value mpi_bcast(Value x, int root) {
  register_mpi_ops_layer();
  return with_root("mpi_bcast", x, root);
}
Value mpi_gather(Value x, int root) {
  register_mpi_ops_layer();
  return with_root("mpi_gather", x, root);
}
Value mpi_scatter(Value x, int root) {
  register_mpi_ops_layer();
  return with_root("mpi_scatter", x, root);
}
Value mpi_allgather(Value x) {
  register_mpi_ops_layer();
  return x.graph().add_node("mpi_allgather", {x});
}
Value mpi_reduce_scatter(Value x) {
  register_mpi_ops_layer();
  return x.graph().add_node("mpi_reduce_scatter", {x});
}
Value mpi_alltoall(Value x) {
  register_mpi_ops_layer();
  return x.graph().add_node("mpi_alltoall", {x});
}
Value mpi_rank(Graph& graph) {
  register_mpi_ops_layer();
  return graph.add_node("mpi_rank", {});
}
Value mpi_size(Graph& graph) {
  register_mpi_ops_layer();
  return graph.add_node("mpi_size", {});
}

namespace {

void register_mpi_sum_op() {
  // y = Σ_r x_r on root, 0 elsewhere;  x̄_r = bcast(ȳ, root)
  OpDef sum = collective(
      "mpi_sum", "y = sum over ranks of x on root, zeros elsewhere", true);
  sum.input_docs = {"this rank's term (any shape, the same on every rank)"};
  sum.output_docs = {
      "on root: the sum over ranks of x (x's shape); zeros on other ranks"};
  sum.ranks_doc =
      "A reduce to root over the graph's communicator: every rank runs it and "
      "sends its x; ranks other than root get zeros. Adjoint: x̄ = "
      "mpi_bcast(ȳ, root) (the loss is the sum of the per-rank losses).";
  sum.attrs.push_back(kExactAttr);
  sum.shape = [](const ShapeContext& c) {
    check_root(c);
    check_exact(c);
    return Shapes{c.input_shape(0)};
  };
  sum.bind = [](const Node& n) {
    return comm_kernel([root = root_of(n), mode = n.attr_string("exact")](
                           KernelContext& c, Communicator& comm) {
      Tensor& y = c.output(0);
      if (sums_exactly(mode, y.size())) {
        comm.allreduce_exact(c.input(0).data(), y.data(), y.size());
      } else {
        comm.reduce_sum(c.input(0).data(), y.data(), y.size(), root);
      }
      if (comm.rank() != root) y.array().setZero();
    });
  };
  sum.in_place = {{0, 0}};  // MPI_IN_PLACE on the root
  sum.gradient = [](const GradientContext& c) {
    return Values{mpi_bcast(c.grad(), root_of(c.node()))};
  };
  sum.tangent = linear_tangent;
  register_op(std::move(sum));
}

void register_mpi_allreduce_op() {
  // y = ⊕_r x_r;  x̄_r = Σ_q ȳ_q (sum), masked (max/min), · Π_{q≠r} x_q (prod)
  OpDef all = collective(
      "mpi_allreduce", "y = sum/max/min/prod over ranks of x", false);
  all.input_docs = {"this rank's x (any shape, the same on every rank)"};
  all.output_docs = {
      "x reduced over ranks element by element (x's shape), on every rank"};
  all.ranks_doc =
      "Every rank of the graph's communicator runs it, sends its x and gets "
      "the same result; no rank lacks a partner. Adjoint: the sum over ranks "
      "of ȳ (max/min: on the lowest rank holding the extreme; prod: times "
      "the other ranks' product).";
  all.attrs = {{"op", AttrType::kString, "sum", "sum, max, min or prod"},
               kExactAttr};
  all.shape = [](const ShapeContext& c) {
    if (!kReduceOps.count(c.node().attr_string("op"))) {
      c.fail("attribute \"op\"",
             "\"" + c.node().attr_string("op") +
                 "\" is not one of sum, max, min, prod");
    }
    check_exact(c);
    return Shapes{c.input_shape(0)};
  };
  all.bind = [](const Node& n) {
    // The shape rule allowed only these four.
    const std::string name = n.attr_string("op");
    const ReduceOp reduce = name == "sum"   ? ReduceOp::kSum
                            : name == "max" ? ReduceOp::kMax
                            : name == "min" ? ReduceOp::kMin
                                            : ReduceOp::kProd;
    return comm_kernel([reduce, mode = n.attr_string("exact")](
                           KernelContext& c, Communicator& comm) {
      const Tensor& x = c.input(0);
      Tensor& y = c.output(0);
      if (reduce == ReduceOp::kSum && sums_exactly(mode, y.size())) {
        comm.allreduce_exact(x.data(), y.data(), y.size());
      } else {
        comm.allreduce(x.data(), y.data(), y.size(), reduce);
      }
    });
  };
  all.in_place = {{0, 0}};  // MPI_IN_PLACE when x dies here
  all.gradient = [](const GradientContext& c) {
    const std::string op = c.node().attr_string("op");
    const std::string exact = c.node().attr_string("exact");
    Value total;
    if (exact != "no") {
      if (Value terms = exact_total_of_terms(c.grad(), 0); terms.valid())
        total = mpi_bcast(terms, 0);
    }
    if (!total.valid()) total = mpi_allreduce(c.grad(), "sum", exact);
    if (op == "sum") return Values{total};
    if (op == "prod") {
      return Values{total * c.graph().add_node("mpi_allreduce_prod_others",
                                               {c.input(0)})};
    }
    return Values{total * allreduce_owner(c.input(0), c.output(0))};
  };
  // ẏ = Σ_r ẋ_r (sum), ẋ of the owning rank (max/min),
  // Σ_r ẋ_r·Π_{q≠r} x_q (prod)
  all.tangent = [](const TangentContext& c) {
    const std::string op = c.node().attr_string("op");
    Value t = c.tangent_or_zeros(0);
    if (op == "prod") {
      t = t * c.graph().add_node("mpi_allreduce_prod_others", {c.input(0)});
    } else if (op != "sum") {
      t = t * allreduce_owner(c.input(0), c.output(0));
    }
    return Values{mpi_allreduce(t, "sum", c.node().attr_string("exact"))};
  };
  register_op(std::move(all));
}

void register_mpi_allreduce_owner_op() {
  // mask = 1 where this rank is the lowest holding x == y;  no derivative
  OpDef owner = collective(
      "mpi_allreduce_owner",
      "mask of the elements where this rank is the lowest rank with x == y",
      false);
  owner.input_docs = {"this rank's x (any shape)",
                      "the reduced value (mpi_allreduce max/min of x)"};
  owner.output_docs = {
      "1 where this rank is the lowest one whose x equals y, else 0 (x's "
      "shape)"};
  owner.ranks_doc =
      "Every rank runs it (an allreduce-min of rank numbers); each element "
      "has exactly one owning rank.";
  owner.inputs = {"x", "y"};
  owner.shape = [](const ShapeContext& c) {
    return Shapes{equal_input_shapes(c, "input \"y\"")};
  };
  owner.compute = comm_kernel([](KernelContext& c, Communicator& comm) {
    const Tensor &x = c.input(0), &y = c.input(1);
    // The lowest owning rank per element, reduced in the mask's buffer.
    Tensor& mask = c.output(0);
    for (int64_t i = 0; i < x.size(); ++i) {
      mask[i] = x[i] == y[i] ? comm.rank() : comm.size();
    }
    comm.allreduce(mask.data(), mask.data(), x.size(), ReduceOp::kMin);
    for (int64_t i = 0; i < x.size(); ++i)
      mask[i] = mask[i] == comm.rank() ? 1.0 : 0.0;
  });
  owner.gradient = [](const GradientContext&) {
    return Values{Value(), Value()};
  };
  owner.tangent = [](const TangentContext&) { return Values{Value()}; };
  register_op(std::move(owner));
}

void register_mpi_allreduce_prod_others_op() {
  // z_r = Π_{q≠r} x_q, multiplied in rank order (no division: zero-safe).
  // Helper of the prod adjoint; it declares no adjoint of its own.
  OpDef others =
      collective("mpi_allreduce_prod_others",
                 "y = product over the other ranks of x (no division)",
                 false);
  others.input_docs = {"this rank's x (any shape, the same on every rank)"};
  others.output_docs = {
      "the product over every other rank of x, in rank order (x's shape)"};
  others.ranks_doc =
      "Every rank runs it (an allgather); with one rank the product is 1.";
  others.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
  others.compute = comm_kernel([](KernelContext& c, Communicator& comm) {
    const Tensor& x = c.input(0);
    const int64_t n = x.size();
    // Every rank's x, gathered into the communicator's scratch.
    Eigen::ArrayXd all = comm.take_spare(n * comm.size());
    comm.allgather(x.data(), all.data(), n);
    Tensor& z = c.output(0);
    z.array().setOnes();
    for (int q = 0; q < comm.size(); ++q) {
      if (q == comm.rank()) continue;
      z.array() *= all.segment(q * n, n);
    }
    comm.keep_spare(std::move(all));
  });
  register_op(std::move(others));
}

void register_mpi_bcast_op() {
  // y = x_root;  x̄_r = mpi_sum(ȳ, root)
  OpDef bcast = collective("mpi_bcast", "y = x of root on every rank", true);
  bcast.input_docs = {
      "the value to share: root's is sent, other ranks' values are not read "
      "(their shape must match)"};
  bcast.output_docs = {"root's x, on every rank (x's shape)"};
  bcast.ranks_doc =
      "Every rank of the graph's communicator runs it and gets root's x. "
      "Adjoint: the sum over ranks of ȳ on root, zeros on the other ranks.";
  bcast.shape = [](const ShapeContext& c) {
    check_root(c);
    return Shapes{c.input_shape(0)};
  };
  bcast.bind = [](const Node& n) {
    const int root = root_of(n);
    return comm_kernel([root](KernelContext& c, Communicator& comm) {
      Tensor& y = c.output(0);
      // Only the root's x is sent; in place (OpDef::in_place) it needs no
      // copy.
      if (comm.rank() == root && y.data() != c.input(0).data())
        y.array() = c.input(0).array();
      comm.bcast(y.data(), y.size(), root);
    });
  };
  bcast.in_place = {{0, 0}};
  bcast.gradient = [](const GradientContext& c) {
    const int root = root_of(c.node());
    Value terms = exact_total_of_terms(c.grad(), root);
    return Values{terms.valid() ? terms : mpi_sum(c.grad(), root)};
  };
  bcast.tangent = linear_tangent;
  register_op(std::move(bcast));
}

void register_mpi_gather_op() {
  // y = [x_0; …; x_{P−1}] on root, 0 elsewhere;  x̄_r = scatter(ȳ, root)[r]
  OpDef gather =
      collective("mpi_gather",
                 "y = x of every rank stacked on root, zeros elsewhere",
                 true);
  gather.input_docs = {"this rank's block (any shape, the same everywhere)"};
  gather.output_docs = {
      "on root: [x of rank 0; x of rank 1; ...], shape [P, x's shape...]; "
      "zeros of that shape on other ranks"};
  gather.ranks_doc =
      "Every rank runs it and sends x to root; ranks other than root get "
      "zeros. Adjoint: x̄ = mpi_scatter(ȳ, root).";
  gather.shape = [](const ShapeContext& c) {
    check_root(c);
    return Shapes{stacked(c, c.input_shape(0))};
  };
  gather.bind = [](const Node& n) {
    return comm_kernel(
        [root = root_of(n)](KernelContext& c, Communicator& comm) {
          Tensor& y = c.output(0);
          comm.gather(c.input(0).data(), y.data(), c.input(0).size(), root);
          if (comm.rank() != root) y.array().setZero();
        });
  };
  gather.gradient = [](const GradientContext& c) {
    return Values{mpi_scatter(c.grad(), root_of(c.node()))};
  };
  gather.tangent = linear_tangent;
  register_op(std::move(gather));
}

void register_mpi_scatter_op() {
  // y_r = x_root[r];  x̄ = gather(ȳ, root) (zeros off root)
  OpDef scatter =
      collective("mpi_scatter", "y = slice r of root's x on rank r", true);
  scatter.input_docs = {
      "shape [P, ...]: root's row r goes to rank r; other ranks' values are "
      "not read"};
  scatter.output_docs = {"row r of root's x on rank r (shape x.shape[1:])"};
  scatter.ranks_doc =
      "Every rank runs it and gets its row of root's x. Adjoint: x̄ = "
      "mpi_gather(ȳ, root) (zeros off root).";
  scatter.shape = [](const ShapeContext& c) {
    check_root(c);
    return Shapes{unstacked(c, c.input_shape(0))};
  };
  scatter.bind = [](const Node& n) {
    return comm_kernel(
        [root = root_of(n)](KernelContext& c, Communicator& comm) {
          Tensor& y = c.output(0);
          comm.scatter(c.input(0).data(), y.data(), y.size(), root);
        });
  };
  scatter.gradient = [](const GradientContext& c) {
    return Values{mpi_gather(c.grad(), root_of(c.node()))};
  };
  scatter.tangent = linear_tangent;
  register_op(std::move(scatter));
}

void register_mpi_allgather_op() {
  // y = [x_0; …; x_{P−1}];  x̄_r = reduce_scatter(ȳ)
  OpDef allgather = collective(
      "mpi_allgather", "y = x of every rank stacked, on every rank", false);
  allgather.input_docs = {"this rank's block (any shape, the same everywhere)"};
  allgather.output_docs = {
      "[x of rank 0; x of rank 1; ...], shape [P, x's shape...], on every "
      "rank"};
  allgather.ranks_doc =
      "Every rank runs it and gets every rank's x. Adjoint: x̄ = "
      "mpi_reduce_scatter(ȳ).";
  allgather.shape = [](const ShapeContext& c) {
    return Shapes{stacked(c, c.input_shape(0))};
  };
  allgather.compute = comm_kernel([](KernelContext& c, Communicator& comm) {
    comm.allgather(c.input(0).data(), c.output(0).data(), c.input(0).size());
  });
  allgather.gradient = [](const GradientContext& c) {
    return Values{mpi_reduce_scatter(c.grad())};
  };
  allgather.tangent = linear_tangent;
  register_op(std::move(allgather));
}

void register_mpi_reduce_scatter_op() {
  // y_r = Σ_q x_q[r];  x̄ = allgather(ȳ)
  OpDef reduce_scatter =
      collective("mpi_reduce_scatter",
                 "y = slice r of the sum over ranks of x, on rank r",
                 false);
  reduce_scatter.input_docs = {
      "shape [P, ...]: row q is this rank's term for rank q"};
  reduce_scatter.output_docs = {
      "on rank r: the sum over ranks of their row r (shape x.shape[1:])"};
  reduce_scatter.ranks_doc =
      "Every rank runs it. Adjoint: x̄ = mpi_allgather(ȳ).";
  reduce_scatter.shape = [](const ShapeContext& c) {
    return Shapes{unstacked(c, c.input_shape(0))};
  };
  reduce_scatter.compute =
      comm_kernel([](KernelContext& c, Communicator& comm) {
        comm.reduce_scatter(
            c.input(0).data(), c.output(0).data(), c.output(0).size());
      });
  reduce_scatter.gradient = [](const GradientContext& c) {
    return Values{mpi_allgather(c.grad())};
  };
  reduce_scatter.tangent = linear_tangent;
  register_op(std::move(reduce_scatter));
}

void register_mpi_alltoall_op() {
  // y_r[q] = x_q[r];  x̄ = alltoall(ȳ)
  OpDef alltoall =
      collective("mpi_alltoall", "y[q] on rank r = x[r] of rank q", false);
  alltoall.input_docs = {"shape [P, ...]: row q goes to rank q"};
  alltoall.output_docs = {
      "shape x's: row q is what rank q sent to this rank (its row r)"};
  alltoall.ranks_doc =
      "Every rank runs it and sends one row to each rank (itself too). "
      "Adjoint: x̄ = mpi_alltoall(ȳ).";
  alltoall.shape = [](const ShapeContext& c) {
    unstacked(c, c.input_shape(0));
    return Shapes{c.input_shape(0)};
  };
  alltoall.compute = comm_kernel([](KernelContext& c, Communicator& comm) {
    const int64_t block = c.input(0).size() / comm.size();
    comm.alltoall(c.input(0).data(), c.output(0).data(), block);
  });
  alltoall.gradient = [](const GradientContext& c) {
    return Values{mpi_alltoall(c.grad())};
  };
  alltoall.tangent = linear_tangent;
  register_op(std::move(alltoall));
}

void register_mpi_rank_ops() {
  // Local queries; no communication and no inputs.
  OpDef rank("mpi_rank", "y = this process's rank (a scalar)");
  rank.communicator = world_communicator;
  rank.shape = [](const ShapeContext&) { return Shapes{Shape{}}; };
  rank.compute = [](KernelContext& c) {
    c.output(0)[0] = kernel_communicator(c).rank();
  };
  OpDef size = rank;
  size.name = "mpi_size";
  size.doc = "y = the number of ranks (a scalar)";
  size.compute = [](KernelContext& c) {
    c.output(0)[0] = kernel_communicator(c).size();
  };
  register_op(std::move(rank));
  register_op(std::move(size));
}

}  // namespace

void register_collective_ops() {
  register_mpi_sum_op();
  register_mpi_allreduce_op();
  register_mpi_allreduce_owner_op();
  register_mpi_allreduce_prod_others_op();
  register_mpi_bcast_op();
  register_mpi_gather_op();
  register_mpi_scatter_op();
  register_mpi_allgather_op();
  register_mpi_reduce_scatter_op();
  register_mpi_alltoall_op();
  register_mpi_rank_ops();
}

void register_mpi_ops_layer() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_ops_layer();
    register_collective_ops();
    register_exact_total_ops();
    register_point_to_point_ops();
    register_halo_ops();
    register_nonblocking_ops();
  });
}

}  // namespace adgraph
