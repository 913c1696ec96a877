// The adjoint kernels of heat_step: heat_step_adjoint (the scatter form:
// the halos' cotangents go back to their owners, which add them onto
// their edges one step later) and heat_step_adjoint_gather (the gather
// form: the owners of the halos send κ ⊙ ū⁺ on their edges first, and
// every point evaluates one stencil, so the result does not depend on
// where patch edges fall), and heat_step_adjoint_edges, which gives the
// gather form the edges it sends.
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/comm_context.h"
#include "core/op.h"
#include "mpi_ops/halo.h"
#include "solvers/heat_adjoint_row_impl.h"
#include "solvers/heat_step.h"
#include "solvers/heat_step_adjoint_impl.h"
#include "solvers/heat_step_impl.h"

namespace adgraph::solvers {

using namespace detail;

namespace {

// heat_step_adjoint's and heat_step_adjoint_gather's kernel: row blocks,
// each row's ū and κ̄ in one pass (adjoint_row) and its two ends with
// their halos and edge cotangents.
template <bool kGather>
void step_adjoint_kernel(KernelContext& c, const StepAttrs& a) {
  const AdjointInputs<kGather> in(c);
  const int64_t n = in.n, m = in.m;
  const double* u = in.u;
  const double *hu = in.hu, *hd = in.hd;
  const double *zhu = in.zhu, *zhd = in.zhd;
  double *gu = c.output(0).data(), *gk = c.output(1).data(),
         *gf = c.output(2).data();
  const bool overwritten = gu == in.g;  // ū written over ū⁺
  const int64_t ahead = prefetch_distance(m);
  for_row_blocks(0, n, n * m, [&](int64_t i0, int64_t i1, auto&& sync) {
    // Rows of m + 2 rounded up to whole cache lines, placed so that each
    // Z row's point 0 (index 1) starts a line: z_row's stores are then
    // aligned (split stores cost ~10 % of the pass).
    const int64_t w = (m + 2 + 7) / 8 * 8;
    std::vector<double> buffers((kGather ? 9 : 7) * w + 8, 0.0);
    double* base = buffers.data();
    while ((reinterpret_cast<std::uintptr_t>(base + 1) & 63) != 0) ++base;
    double *zero = base, *zp = zero + w, *zc = zp + w, *zn = zc + w,
           *bc = zn + w + 1, *bn = bc + w, *after = bn + w;
    // Rows −1 and n of Z: zeros, or the up and down Z halos.
    const double *z_above = zero, *z_below = zero;
    if constexpr (kGather) {
      double* above = after + w;
      double* below = above + w;
      std::copy(zhu, zhu + m, above + 1);
      std::copy(zhd, zhd + m, below + 1);
      z_above = above;
      z_below = below;
    }
    const double *gc = nullptr, *gn = nullptr;
    // Rows i0 − 1 and i1 of ū⁺ belong to the blocks either side, which
    // may write ū over them: each block reads them before it syncs.
    if (i0 < i1 && i0 > 0) in.z_row(i0 - 1, in.g_row(i0 - 1, bn, false), zp);
    const double* g_after =
        overwritten && i1 < n && i0 < i1 ? in.g_row(i1, after, true) : nullptr;
    if (overwritten) sync();
    if (i0 < i1) {
      gc = in.g_row(i0, bc, false);
      in.z_row(i0, gc, zc);
    }
    for (int64_t i = i0; i < i1; ++i) {
      const bool south = i + 1 < n;
      if (south) {
        gn = i + 1 == i1 && g_after != nullptr ? g_after
                                               : in.g_row(i + 1, bn, false);
        in.z_row(i + 1, gn, zn);
      }
      const double* zs = south ? zn : z_below;
      const double* zno = i > 0 ? zp : z_above;
      const double* ur = u + i * m;
      const double* un = i > 0 ? ur - m : hu;
      const double* us = south ? ur + m : hd;
      if (ahead > 0 && i + 1 + ahead < n)
        prefetch_row<false>(ur + (1 + ahead) * m, m);
      // In a middle row the pass covers all m points, as the forward does.
      const bool whole = i > 0 && i + 1 < n && m > 1;
      adjoint_of_row(c,
                     in,
                     a,
                     i,
                     gc,
                     {zno, zc, zs},
                     {un, ur, us},
                     whole ? 0 : 1,
                     whole ? m : m - 1,
                     gu,
                     gk,
                     gf);
      std::swap(zp, zc);
      std::swap(zc, zn);
      std::swap(bc, bn);
      gc = gn;
    }
  });
}

// Z = κ ⊙ G on the four edges of the patch, G as step_adjoint_kernel<true>
// forms it (the edge cotangents added by add_nonzero: up and down, then
// left and right); zeros on the edges `sent` marks 0 (no neighbour there
// reads them). A left or right edge is a column: reading it costs a cache
// line a row, about 5 % of the adjoint pass at 256², so an unsent one is
// not read.
void adjoint_edges_kernel(KernelContext& c, const std::array<bool, 4>& sent) {
  const Tensor& gt = c.input(0);
  const int64_t n = gt.shape()[0], m = gt.shape()[1];
  const double* g = gt.data();
  const double *el = c.input(1).data(), *er = c.input(2).data();
  const double *eu = c.input(3).data(), *ed = c.input(4).data();
  const double* kappa = c.input(5).data();
  auto z = [&](int64_t i, int64_t j) {
    double v = g[i * m + j];
    if (i == 0) v = add_nonzero(v, eu[j]);
    if (i == n - 1) v = add_nonzero(v, ed[j]);
    if (j == 0) v = add_nonzero(v, el[i]);
    if (j == m - 1) v = add_nonzero(v, er[i]);
    return kappa[i * m + j] * v;
  };
  double *zl = c.output(0).data(), *zr = c.output(1).data();
  double *zu = c.output(2).data(), *zd = c.output(3).data();
  for (int64_t i = 0; i < n; ++i) {
    zl[i] = sent[0] ? z(i, 0) : 0.0;
    zr[i] = sent[1] ? z(i, m - 1) : 0.0;
  }
  for (int64_t j = 0; j < m; ++j) {
    zu[j] = sent[2] ? z(0, j) : 0.0;
    zd[j] = sent[3] ? z(n - 1, j) : 0.0;
  }
}

Shapes gather_adjoint_shapes(const ShapeContext& c) {
  check_shapes(c, 5, 3, 8);
  const Shape& u = c.input_shape(5);
  if (c.num_inputs() < 16) c.fail("inputs", "expected at least 16 inputs");
  if (c.num_inputs() > 17)
    c.fail("input \"kappa_grad_in\"", "given more than once");
  if (c.num_inputs() == 17 && c.input_shape(16) != u)
    c.fail("input \"kappa_grad_in\"", "differs from u's shape");
  if (c.input_shape(0) != u) c.fail("input \"grad\"", "differs from u's shape");
  for (int k = 0; k < 4; ++k) {
    const Shape strip = k < 2 ? Shape{u[0]} : Shape{u[1]};
    if (c.input_shape(1 + k) != strip)
      c.fail("input " + std::to_string(1 + k), "bad edge");
    if (c.input_shape(12 + k) != strip)
      c.fail("input " + std::to_string(12 + k), "bad halo of z");
  }
  return Shapes{u, u, u};
}

}  // namespace

HaloSource detail::halo_source(const GradientContext& c, int first) {
  const Value& h = c.input(first);
  for (int k = 0; k < 4; ++k) {
    const Value& in = c.input(first + k);
    if (in.node_id() != h.node_id() || in.output() != k) return {};
  }
  const Node& exchange = h.node();
  const std::string& op = exchange.op_name();
  const Node* grid = &exchange;  // the node with the rows and cols
  if (op == "data_exchange_finish") {
    grid = &exchange.inputs[0].node();
  } else if (op != "data_exchange") {
    return {};
  }
  return {&exchange,
          static_cast<int>(grid->attr_int("rows")),
          static_cast<int>(grid->attr_int("cols")),
          grid->comm};
}

Values detail::add_gather_adjoint(const GradientContext& c,
                                  int first,
                                  const HaloSource& source) {
  Graph& g = c.graph();
  const int kappa = first + 1;
  // The edges a neighbour receives: this rank's place in the patch grid.
  std::vector<int64_t> sent = {1, 1, 1, 1};
  if (source.comm != nullptr && source.cols > 0) {
    const int rank = source.comm->rank();
    const int i = rank / source.cols, j = rank % source.cols;
    sent = {j > 0, j + 1 < source.cols, i > 0, i + 1 < source.rows};
  }
  auto z = g.add_node_outputs(
      "heat_step_adjoint_edges",
      {c.grad(0), c.grad(1), c.grad(2), c.grad(3), c.grad(4), c.input(kappa)},
      {{"sent", sent}});
  std::array<Value, 4> z_halos;
  {
    CommScope scope(g, source.comm);
    z_halos = data_exchange(z[0], z[1], z[2], z[3], source.rows, source.cols);
  }
  std::vector<Value> inputs = {
      c.grad(0), c.grad(1), c.grad(2), c.grad(3), c.grad(4)};
  for (int k = first; k < first + 7; ++k) inputs.push_back(c.input(k));
  inputs.insert(inputs.end(), z_halos.begin(), z_halos.end());
  if (c.needs_gradient(kappa) && c.accumulated(kappa).valid()) {
    inputs.push_back(c.accumulated(kappa));
    c.absorb(kappa);
  }
  nlohmann::json attrs = c.node().attrs;
  attrs["f_gradient"] = c.needs_gradient(first + 2);
  Values out = g.add_node_outputs("heat_step_adjoint_gather", inputs, attrs);
  if (!c.needs_gradient(first + 2)) out[2] = Value();
  return out;
}

void register_heat_adjoint_ops() {
  // (ū, κ̄, f̄, halō…) of heat_step for the cotangents of u⁺ and its edges;
  // one pass over the patch with rolling rows (see the header).
  OpDef adjoint = step_adjoint_def(
      "heat_step_adjoint",
      "cotangents of heat_step's seven inputs for the cotangents of its "
      "outputs");
  // κ̄ accumulates in kappa_grad_in's buffer, and ū is written over ū⁺ when
  // ū⁺ dies here: at 1024² the pass then keeps three patches in the cache
  // hierarchy instead of four and reads no line of ū for ownership.
  adjoint.in_place = {{1, 12}, {0, 0}};
  adjoint.num_outputs = 7;
  adjoint.shape = step_adjoint_shapes;
  adjoint.bind = bind_step(step_adjoint_kernel<false>);
  register_op(std::move(adjoint));

  // (ū, κ̄, f̄) of heat_step from ū⁺, its edge cotangents and the halos of
  // Z = κ ⊙ G: the gather form (heat_step.h)
  OpDef gather = step_adjoint_def(
      "heat_step_adjoint_gather",
      "cotangents of heat_step's u, kappa and f, every point by one "
      "stencil over kappa * cotangent with its halos");
  // The step adjoint's inputs with the four halos of Z before
  // kappa_grad_in.
  gather.inputs.insert(
      gather.inputs.end() - 1,
      {"z_from_left", "z_from_right", "z_from_up", "z_from_down"});
  gather.in_place = {{1, 16}, {0, 0}};
  gather.num_outputs = 3;
  gather.shape = gather_adjoint_shapes;
  gather.bind = bind_step(step_adjoint_kernel<true>);
  register_op(std::move(gather));

  // Z = κ ⊙ (ū⁺ with its edge cotangents) on the patch's four edges: what
  // the gather form sends to the neighbours
  OpDef edges(
      "heat_step_adjoint_edges",
      "kappa times the cotangent of heat_step's state on the patch's left, "
      "right, top and bottom edges",
      {"grad", "grad_left", "grad_right", "grad_up", "grad_down", "kappa"});
  edges.attrs = {{"sent",
                  AttrType::kInts,
                  nlohmann::json::array({1, 1, 1, 1}),
                  "1 for each of left, right, up, down that a neighbour "
                  "receives; the others are zeros"}};
  edges.num_outputs = 4;
  edges.shape = [](const ShapeContext& c) {
    const Shape& u = c.input_shape(0);
    if (c.attr_ints("sent").size() != 4)
      c.fail("attribute \"sent\"", "expected four flags");
    if (u.size() != 2)
      c.fail("input \"grad\"",
             "expected an n x m patch, got shape " + shape_string(u));
    if (c.input_shape(5) != u) c.fail("input \"kappa\"", "differs from grad's");
    for (int k = 0; k < 4; ++k) {
      if (c.input_shape(1 + k) != (k < 2 ? Shape{u[0]} : Shape{u[1]}))
        c.fail("input " + std::to_string(1 + k), "bad edge");
    }
    return Shapes{{u[0]}, {u[0]}, {u[1]}, {u[1]}};
  };
  edges.bind = [](const Node& n) {
    const Shape flags = n.attr_ints("sent");
    const std::array<bool, 4> sent = {
        flags[0] != 0, flags[1] != 0, flags[2] != 0, flags[3] != 0};
    return ComputeFn(
        [sent](KernelContext& c) { adjoint_edges_kernel(c, sent); });
  };
  register_op(std::move(edges));
}

}  // namespace adgraph::solvers
