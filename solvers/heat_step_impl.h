// What the heat-step kernels share (internal to solvers/): the stencil's
// inputs, the shape checks and attributes, and edge extraction.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/core_ops.h"
#include "core/op.h"
#include "ops/elementwise.h"

namespace adgraph::solvers::detail {

// Patches smaller than this run their stencil on one thread.
constexpr int64_t kParallelPoints = 16384;

// Calls rows(i0, i1, sync) over row blocks covering [first, last): one
// block per OpenMP thread for a patch of at least kParallelPoints points
// when there are threads, else one block on the calling thread without
// entering a parallel region (even an `if (false)` region costs libgomp a
// team allocation and a wake-up: ~0.4 µs per step, measured at 16 x 16).
// sync() returns once every block has called it: a block that writes rows
// its neighbours read calls it between their reads and its writes. It is
// this function's own barrier, so a kernel run inside another parallel
// region (Session's concurrent executor) never meets a barrier of that one.
template <class Rows>
void for_row_blocks(int64_t first, int64_t last, int64_t points, Rows rows) {
  if (last <= first) return;
  if (points < kParallelPoints || omp_get_max_threads() == 1) {
    rows(first, last, [] {});
    return;
  }
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t count = last - first;
    rows(first + count * t / threads, first + count * (t + 1) / threads, [] {
#pragma omp barrier
    });
  }
}

// for_row_blocks for blocks that read only their own rows' outputs: rows
// are independent, so the blocks do not change the result.
template <class Rows>
void for_rows(int64_t first, int64_t last, int64_t points, Rows rows) {
  for_row_blocks(first, last, points, [&](int64_t i0, int64_t i1, auto&&) {
    rows(i0, i1);
  });
}

// Software prefetch for the row loops. In a gradient the step writes each
// state into a buffer of the loop's tape and the adjoint reads it back, from
// DRAM once the tape outgrows the L3. Each row of the tape starts a stream
// the hardware prefetchers must pick up again: with rows under a 4 KiB page
// they lose it every row or two (256², NT = 100: ~11 → ~9 ms with these
// prefetches), and rows of a page still start cold (512², NT = 20: the
// adjoint's prefetch of the taped rows took the gradient from 10.4–10.6 to
// 7.9–9.1 ms). The step's prefetch of its output rows for writing slowed
// the forward at 1024², so rows of a page or more get none there
// (docs/PERFORMANCE.md). A loop at row i prefetches row i + distance, at
// least 8 KiB ahead; 0 means no prefetch.
inline int64_t prefetch_distance(int64_t m) {
  return std::max<int64_t>(1, 8192 / (m * int64_t{sizeof(double)}));
}
// For the step's output rows.
inline int64_t write_prefetch_distance(int64_t m) {
  return m * int64_t{sizeof(double)} >= 4096 ? 0 : prefetch_distance(m);
}

// Prefetches the m doubles from `row` into the cache, for writing when
// kWrite is true.
template <bool kWrite>
inline void prefetch_row(const double* row, int64_t m) {
  for (int64_t j = 0; j < m; j += 8) __builtin_prefetch(row + j, kWrite, 3);
}

// An n × m patch u with the four halo strips around it.
struct Stencil {
  const double* u;
  const double* left;
  const double* right;
  const double* up;
  const double* down;
  int64_t n, m;
};

inline Stencil stencil_of(const KernelContext& c, int first_halo) {
  const Tensor& u = c.input(0);
  return {u.data(),
          c.input(first_halo).data(),
          c.input(first_halo + 1).data(),
          c.input(first_halo + 2).data(),
          c.input(first_halo + 3).data(),
          u.shape()[0],
          u.shape()[1]};
}

inline void check_shapes(const ShapeContext& c,
                         int first_patch_input,
                         int n_patch_inputs,
                         int first_halo) {
  const Shape& u = c.input_shape(first_patch_input);
  if (u.size() != 2)
    c.fail("input \"u\"",
           "expected an n x m patch, got shape " + shape_string(u));
  for (int k = first_patch_input + 1; k < first_patch_input + n_patch_inputs;
       ++k) {
    if (c.input_shape(k) != u) {
      c.fail("input " + std::to_string(k),
             "shape " + shape_string(c.input_shape(k)) + " differs from u's " +
                 shape_string(u));
    }
  }
  const Shape rows{u[0]}, cols{u[1]};
  const char* names[4] = {"from_left", "from_right", "from_up", "from_down"};
  for (int k = 0; k < 4; ++k) {
    const Shape& want = k < 2 ? rows : cols;
    if (c.input_shape(first_halo + k) != want) {
      c.fail(std::string("input \"") + names[k] + "\"",
             "shape " + shape_string(c.input_shape(first_halo + k)) +
                 ", expected " + shape_string(want) + " for a patch of " +
                 shape_string(u));
    }
  }
}

// What a step kernel reads from its node's attributes, read once per node
// (OpDef::bind): dt, coef = dt / h², and f_gradient for the adjoints.
struct StepAttrs {
  double dt = 0;
  double coef = 0;
  bool want_f = false;
};

// The `bind` of a step op whose kernel is kernel(c, attrs).
template <class Kernel>
BindFn bind_step(Kernel kernel) {
  return [kernel](const Node& n) {
    const double dt = n.attr_float("dt"), h = n.attr_float("h");
    StepAttrs attrs;
    attrs.dt = dt;
    attrs.coef = dt / (h * h);
    attrs.want_f = n.attrs.contains("f_gradient") && n.attr_bool("f_gradient");
    return ComputeFn([kernel, attrs](KernelContext& c) { kernel(c, attrs); });
  };
}

inline std::vector<AttrSpec> step_attrs() {
  return {{"dt", AttrType::kFloat, nlohmann::json(), "time step", 0},
          {"h", AttrType::kFloat, nlohmann::json(), "grid spacing", 1e-300}};
}

// heat_step's inputs (u, κ, f, the four halos) after `before` and before
// `after`.
inline std::vector<std::string> step_inputs(
    std::vector<std::string> before = {},
    const std::vector<std::string>& after = {}) {
  for (const char* name :
       {"u", "kappa", "f", "from_left", "from_right", "from_up", "from_down"})
    before.push_back(name);
  before.insert(before.end(), after.begin(), after.end());
  return before;
}

// Writes the four edges of the n × m patch `u` into `edges` (left, right,
// up, down).
inline void write_edges(const double* u, int64_t n, int64_t m, Tensor* edges) {
  for (int64_t i = 0; i < n; ++i)
    edges[0][i] = u[i * m], edges[1][i] = u[i * m + m - 1];
  for (int64_t j = 0; j < m; ++j)
    edges[2][j] = u[j], edges[3][j] = u[(n - 1) * m + j];
}

// What heat_step_adjoint and heat_step_boundary_adjoint share: inputs
// (grad, its four edges, the step's seven inputs, an optional
// kappa_grad_in), attributes (dt, h, f_gradient), variadic.
inline OpDef step_adjoint_def(const char* name, const char* doc) {
  OpDef def(
      name,
      doc,
      step_inputs({"grad", "grad_left", "grad_right", "grad_up", "grad_down"},
                  {"kappa_grad_in"}));
  // kappa_grad_in (at most one): a cotangent of κ to add onto κ̄.
  def.variadic = true;
  def.attrs = step_attrs();
  def.attrs.push_back(
      {"f_gradient", AttrType::kBool, true, "compute the cotangent of f"});
  return def;
}

// Their shape rule: (ū, κ̄, f̄, the four halos' cotangents).
inline Shapes step_adjoint_shapes(const ShapeContext& c) {
  check_shapes(c, 5, 3, 8);
  const Shape& u = c.input_shape(5);
  if (c.num_inputs() > 13)
    c.fail("input \"kappa_grad_in\"", "given more than once");
  if (c.num_inputs() == 13 && c.input_shape(12) != u)
    c.fail("input \"kappa_grad_in\"", "differs from u's shape");
  if (c.input_shape(0) != u) c.fail("input \"grad\"", "differs from u's shape");
  const Shapes strips = {{u[0]}, {u[0]}, {u[1]}, {u[1]}};
  for (int k = 0; k < 4; ++k) {
    if (c.input_shape(1 + k) != strips[k])
      c.fail("input " + std::to_string(1 + k), "bad edge");
  }
  return Shapes{u, u, u, {u[0]}, {u[0]}, {u[1]}, {u[1]}};
}

// b added onto a unless b is 0, so that a −0 in a stays −0: the gather
// form adds edge cotangents this way, and a patch edge then changes no bit.
inline double add_nonzero(double a, double b) { return b == 0 ? a : a + b; }

// The exchange that produced a step's four halo inputs first..first+3
// when they are, in order, the four outputs of one data_exchange or
// data_exchange_finish (node null otherwise): the gather-form adjoint
// sends its edges over the same patch grid and communicator.
struct HaloSource {
  const Node* node = nullptr;
  int rows = 0, cols = 0;
  std::shared_ptr<CommContext> comm;
};
HaloSource halo_source(const GradientContext& c, int first);

// The gather-form adjoint of a step node whose inputs first..first+6 are
// (u, κ, f, halos from `source`) and whose five outputs are (u⁺, its
// edges): heat_step_adjoint_edges, a data_exchange of them, and
// heat_step_adjoint_gather (solvers/heat_step_adjoint.cc). Returns (ū, κ̄,
// f̄ or invalid when not needed); the halos get no cotangent.
Values add_gather_adjoint(const GradientContext& c,
                          int first,
                          const HaloSource& source);

// Adds the adjoint op `op` of a step node whose inputs first..first+6 are
// (u, κ, f, halos) and whose five outputs are (u⁺, its edges): κ̄ of the
// later steps is folded into its pass (κ is shared by all steps: this
// saves an `add` over the patch per step), f̄ only when needed.
inline Values add_step_adjoint(const GradientContext& c,
                               const char* op,
                               int first) {
  std::vector<Value> inputs = {
      c.grad(0), c.grad(1), c.grad(2), c.grad(3), c.grad(4)};
  for (int k = first; k < first + 7; ++k) inputs.push_back(c.input(k));
  const int kappa = first + 1;
  if (c.needs_gradient(kappa) && c.accumulated(kappa).valid()) {
    inputs.push_back(c.accumulated(kappa));
    c.absorb(kappa);
  }
  nlohmann::json attrs = c.node().attrs;
  attrs["f_gradient"] = c.needs_gradient(first + 2);
  return c.graph().add_node_outputs(op, inputs, attrs);
}

// The tangent of a step op linear in its state inputs and bilinear in
// (κ, u): ẏ = op(state tangents, κ) + (op(u, κ̇, 0) − u), where κ is
// input `kappa`, u input kappa − 1 (inputs before u, such as
// heat_step_boundary's interior, take u in the κ term: the term is then 0
// there) and f input kappa + 1. Output 0 is the state; when the op also
// outputs its edges (five outputs), they are the edges of ẏ.
inline Values step_tangent(const TangentContext& c, const char* op, int kappa) {
  Graph& g = c.graph();
  const nlohmann::json& attrs = c.node().attrs;
  const int n = c.num_inputs(), outputs = c.node().num_outputs();
  const Value u = c.input(kappa - 1);
  bool state_tangent = false;
  for (int k = 0; k < n; ++k)
    state_tangent = state_tangent || (k != kappa && c.tangent(k).valid());
  Values out;
  Value t;
  if (state_tangent) {
    std::vector<Value> inputs;
    for (int k = 0; k < n; ++k)
      inputs.push_back(k == kappa ? c.input(k) : c.tangent_or_zeros(k));
    out = g.add_node_outputs(op, inputs, attrs);
    t = out[0];
  }
  if (c.tangent(kappa).valid()) {
    std::vector<Value> inputs;
    for (int k = 0; k < n; ++k) {
      inputs.push_back(k < kappa - 1    ? u
                       : k == kappa     ? c.tangent(kappa)
                       : k == kappa + 1 ? zeros(g, c.input(k).shape())
                                        : c.input(k));
    }
    Value from_kappa = g.add_node(op, inputs, attrs) - u;
    t = t.valid() ? t + from_kappa : from_kappa;
    out = {t};
    if (outputs == 5) {
      auto edges = g.add_node_outputs("patch_edges", {t});
      out.insert(out.end(), edges.begin(), edges.end());
    }
  }
  if (out.empty()) out.resize(outputs);  // no tangent in: none out
  return out;
}

}  // namespace adgraph::solvers::detail
