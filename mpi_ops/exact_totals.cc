// The exact totals over every rank: mpi_total, mpi_dot and mpi_total_rows,
// each a sum of every rank's terms that is exact and rounded once
// (core/exact_sum.h), so bitwise the same however the terms are split.
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/exact_sum.h"
#include "core/op.h"
#include "mpi_ops/collective_impl.h"
#include "mpi_ops/collectives.h"
#include "mpi_ops/communicator.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"

namespace adgraph {
namespace {

using namespace detail;  // mpi_ops/collective_impl.h

// y = Σ_r Σ_i x_r[i] exactly, rounded once, on root (0 elsewhere);
// x̄_r = bcast(ȳ, root) in every element
void register_total_op() {
  OpDef total = collective("mpi_total",
                           "y = the sum of every element of x on every rank, "
                           "exact and rounded once, on root; 0 elsewhere",
                           true);
  total.shapes_differ_by_rank = true;
  total.input_docs = {"this rank's terms (any shape; it may differ by rank)"};
  total.output_docs = {
      "a scalar: on root, the sum of every element of every rank's x; 0 on "
      "other ranks"};
  total.ranks_doc =
      "Every rank runs it and sends its terms; ranks other than root get 0. "
      "Adjoint: every element of x̄ on every rank is root's ȳ.";
  total.shape = [](const ShapeContext& c) {
    check_root(c);
    return Shapes{Shape{}};
  };
  total.bind = [](const Node& n) {
    return comm_kernel(
        [root = root_of(n)](KernelContext& c, Communicator& comm) {
          const Tensor& x = c.input(0);
          const double y = comm.allreduce_exact_sum(x.data(), x.size());
          c.output(0)[0] = comm.rank() == root ? y : 0.0;
        });
  };
  total.gradient = [](const GradientContext& c) {
    return Values{broadcast_to(mpi_bcast(c.grad(), root_of(c.node())),
                               c.input(0).shape())};
  };
  total.tangent = linear_tangent;
  register_op(std::move(total));
}

// y = Σ_r Σ_i a_r[i]·b_r[i], the sum exact and rounded once, on root (0
// elsewhere); s = bcast(ȳ, root), ā_r = s·b_r, b̄_r = s·a_r
void register_exact_dot_op() {
  OpDef dot = collective("mpi_dot",
                         "y = the sum of a * b over every element of every "
                         "rank, exact and rounded once, on root; 0 elsewhere",
                         true);
  dot.inputs = {"a", "b"};
  dot.input_docs = {"this rank's a (any shape; it may differ by rank)",
                    "this rank's b (a's shape)"};
  dot.output_docs = {
      "a scalar: on root, the sum of a * b over every element of every rank; "
      "0 on other ranks"};
  dot.ranks_doc =
      "Every rank runs it; ranks other than root get 0. Adjoint: with s = "
      "root's ȳ on every rank, ā = s * b and b̄ = s * a.";
  dot.shapes_differ_by_rank = true;
  dot.shape = [](const ShapeContext& c) {
    check_root(c);
    if (c.input_shape(0) != c.input_shape(1)) {
      c.fail("input \"b\"",
             "shape " + shape_string(c.input_shape(1)) + " differs from a's " +
                 shape_string(c.input_shape(0)));
    }
    return Shapes{Shape{}};
  };
  dot.bind = [](const Node& n) {
    return comm_kernel(
        [root = root_of(n)](KernelContext& c, Communicator& comm) {
          const Tensor &a = c.input(0), &b = c.input(1);
          ExactSum sum;
          sum.add_products(a.data(), b.data(), a.size());
          double y = 0;
          comm.allreduce_exact_sums(&sum, &y, 1);
          c.output(0)[0] = comm.rank() == root ? y : 0.0;
        });
  };
  dot.gradient = [](const GradientContext& c) {
    Value s = mpi_bcast(c.grad(), root_of(c.node()));
    return Values{s * c.input(1), s * c.input(0)};
  };
  dot.tangent = bilinear_tangent;
  register_op(std::move(dot));
}

// y[j…] = Σ_r Σ_i x_r[i, j…] exactly, rounded once, on root (0
// elsewhere); x̄_r = bcast(ȳ, root) in every row
void register_total_rows_op() {
  OpDef total = collective("mpi_total_rows",
                           "y = x's rows summed over every rank, exact and "
                           "rounded once per entry, on root; 0 elsewhere",
                           true);
  total.shapes_differ_by_rank = true;
  total.input_docs = {
      "[rows, ...]: this rank's rows (their number may differ by rank; the "
      "trailing shape may not)"};
  total.output_docs = {
      "on root: the sum of every rank's rows (shape x.shape[1:]); zeros on "
      "other ranks"};
  total.ranks_doc =
      "Every rank runs it; ranks other than root get zeros. Adjoint: every "
      "row of x̄ on every rank is root's ȳ.";
  total.shape = [](const ShapeContext& c) {
    check_root(c);
    const Shape& x = c.input_shape(0);
    if (x.empty())
      c.fail("input \"x\"", "expected rows (at least one axis), got a scalar");
    return Shapes{Shape(x.begin() + 1, x.end())};
  };
  total.bind = [](const Node& n) {
    return comm_kernel([root = root_of(n), name = n.name](KernelContext& c,
                                                          Communicator& comm) {
      const Tensor& x = c.input(0);
      Tensor& y = c.output(0);
      const int64_t m = y.size(), rows = x.shape()[0];
      // Every rank must sum entries of one shape: agreed before the
      // message whose length depends on it.
      double extents[2] = {static_cast<double>(m), -static_cast<double>(m)};
      comm.allreduce(extents, extents, 2, ReduceOp::kMax);
      if (extents[0] != -extents[1]) {
        throw RunError("the entries of a row differ between ranks (" +
                           std::to_string(static_cast<int64_t>(-extents[1])) +
                           " to " +
                           std::to_string(static_cast<int64_t>(extents[0])) +
                           "); only the number of rows may",
                       name,
                       "mpi_total_rows",
                       "input \"x\"");
      }
      std::vector<ExactSum> sums(static_cast<std::size_t>(m));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < m; ++j) sums[j].add(x[i * m + j]);
      comm.allreduce_exact_sums(sums.data(), y.data(), static_cast<int>(m));
      if (comm.rank() != root) y.array().setZero();
    });
  };
  total.gradient = [](const GradientContext& c) {
    const Shape& x = c.input(0).shape();
    Shape one_row = x;
    one_row[0] = 1;
    return Values{broadcast_to(
        reshape(mpi_bcast(c.grad(), root_of(c.node())), one_row), x)};
  };
  total.tangent = linear_tangent;
  register_op(std::move(total));
}

}  // namespace

Value mpi_total(Value x, int root) {
  register_mpi_ops_layer();
  return with_root("mpi_total", x, root);
}
Value mpi_dot(Value a, Value b, int root) {
  register_mpi_ops_layer();
  return a.graph().add_node("mpi_dot", {a, b}, {{"root", root}});
}
Value mpi_total_rows(Value x, int root) {
  register_mpi_ops_layer();
  return with_root("mpi_total_rows", x, root);
}

void register_exact_total_ops() {
  register_total_op();
  register_exact_dot_op();
  register_total_rows_op();
}

}  // namespace adgraph
