#include "solvers/regularization.h"

#include <string>

#include "core/op.h"
#include "mpi_ops/collectives.h"
#include "mpi_ops/halo.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"
#include "solvers/heat_step.h"

namespace adgraph::solvers {
namespace {

// Which neighbours of a patch's points lie in the grid beyond its edges.
struct Beyond {
  bool left, right, up, down;
  explicit Beyond(const Node& n)
      : left(n.attr_bool("left")),
        right(n.attr_bool("right")),
        up(n.attr_bool("up")),
        down(n.attr_bool("down")) {}
};

// κ with its halos: κ(i, j) for −1 ≤ i ≤ n, −1 ≤ j ≤ m off the corners.
struct WithHalos {
  const double *x, *left, *right, *up, *down;
  int64_t n, m;
  double operator()(int64_t i, int64_t j) const {
    if (i < 0) return up[j];
    if (i >= n) return down[j];
    if (j < 0) return left[i];
    if (j >= m) return right[i];
    return x[i * m + j];
  }
};

WithHalos with_halos(const KernelContext& c, int first) {
  const Tensor& x = c.input(first);
  return {x.data(),
          c.input(first + 1).data(),
          c.input(first + 2).data(),
          c.input(first + 3).data(),
          c.input(first + 4).data(),
          x.shape()[0],
          x.shape()[1]};
}

// t = (κ − κ_east)²·[east in the grid] + (κ − κ_south)²·[south in the grid]
// per point, κ_east and κ_south taken across the patch's edges from the
// halos: every point by one expression, wherever the patch edges fall.
void terms_kernel(KernelContext& c) {
  const Beyond beyond(c.node());
  const WithHalos k = with_halos(c, 0);
  double* t = c.output(0).data();
  for (int64_t i = 0; i < k.n; ++i) {
    const double south = i + 1 < k.n || beyond.down ? 1.0 : 0.0;
    for (int64_t j = 0; j < k.m; ++j) {
      const double east = j + 1 < k.m || beyond.right ? 1.0 : 0.0;
      const double de = k(i, j) - k(i, j + 1), ds = k(i, j) - k(i + 1, j);
      t[i * k.m + j] = de * de * east + ds * ds * south;
    }
  }
}

// κ̄ = 2·t̄·(κ − κ_east) + 2·t̄·(κ − κ_south) − 2·t̄_west·(κ_west − κ)
//     − 2·t̄_north·(κ_north − κ), each term where that neighbour is in the
// grid: the gather form, with t̄ and κ across the edges from halos.
void terms_adjoint_kernel(KernelContext& c) {
  const Beyond beyond(c.node());
  const WithHalos tb = with_halos(c, 0), k = with_halos(c, 5);
  double* out = c.output(0).data();
  for (int64_t i = 0; i < k.n; ++i) {
    const double south = i + 1 < k.n || beyond.down ? 1.0 : 0.0;
    const double north = i > 0 || beyond.up ? 1.0 : 0.0;
    for (int64_t j = 0; j < k.m; ++j) {
      const double east = j + 1 < k.m || beyond.right ? 1.0 : 0.0;
      const double west = j > 0 || beyond.left ? 1.0 : 0.0;
      const double here = k(i, j);
      double g = 2.0 * tb(i, j) * (here - k(i, j + 1)) * east;
      g += 2.0 * tb(i, j) * (here - k(i + 1, j)) * south;
      g -= 2.0 * tb(i, j - 1) * (k(i, j - 1) - here) * west;
      g -= 2.0 * tb(i - 1, j) * (k(i - 1, j) - here) * north;
      out[i * k.m + j] = g;
    }
  }
}

std::vector<AttrSpec> beyond_attrs() {
  std::vector<AttrSpec> out;
  for (const char* side : {"left", "right", "up", "down"}) {
    out.push_back(
        {side,
         AttrType::kBool,
         nlohmann::json(),
         std::string("the grid goes on beyond the ") + side + " edge"});
  }
  out.push_back({"rows", AttrType::kInt, 1, "patch rows of the grid", 1});
  out.push_back({"cols", AttrType::kInt, 1, "patch columns of the grid", 1});
  return out;
}

// Checks a patch and its four halos from input `first` on.
Shape patch_with_halos(const ShapeContext& c, int first) {
  const Shape& x = c.input_shape(first);
  if (x.size() != 2)
    c.fail("input " + std::to_string(first),
           "expected an n x m patch, got shape " + shape_string(x));
  for (int k = 0; k < 4; ++k) {
    const Shape strip = k < 2 ? Shape{x[0]} : Shape{x[1]};
    if (c.input_shape(first + 1 + k) != strip)
      c.fail("input " + std::to_string(first + 1 + k),
             "shape " + shape_string(c.input_shape(first + 1 + k)) +
                 ", expected " + shape_string(strip));
  }
  return x;
}

// x shifted by one point east (south), its last column (row) from the
// halo `beyond`: the neighbours' values, for the tangent.
Value east_of(Value x, Value beyond) {
  const int64_t n = x.shape()[0], m = x.shape()[1];
  Value last = reshape(beyond, {n, 1});
  return m == 1 ? last : concat({slice(x, 1, 1, m), last}, 1);
}
Value south_of(Value x, Value beyond) {
  const int64_t n = x.shape()[0], m = x.shape()[1];
  Value last = reshape(beyond, {1, m});
  return n == 1 ? last : concat({slice(x, 0, 1, n), last}, 0);
}

void register_smoothness_terms_op() {
  OpDef terms(
      "smoothness_terms",
      "(kappa - kappa_east)^2 + (kappa - kappa_south)^2 per point of a patch, "
      "the neighbours across its edges from the halos",
      {"kappa", "from_left", "from_right", "from_up", "from_down"});
  terms.attrs = beyond_attrs();
  terms.shape = [](const ShapeContext& c) {
    return Shapes{patch_with_halos(c, 0)};
  };
  terms.compute = terms_kernel;
  // The gather form: the t̄ of the points across the left and upper edges
  // come from a halo exchange of t̄'s edges, on the grid and communicator
  // of κ's exchange.
  terms.gradient = [](const GradientContext& c) {
    Graph& g = c.graph();
    const Node& n = c.node();
    auto edges = patch_edges(c.grad());
    std::array<Value, 4> halos;
    {
      CommScope scope(g, c.input(1).node().comm);
      halos = data_exchange(edges[0],
                            edges[1],
                            edges[2],
                            edges[3],
                            static_cast<int>(n.attr_int("rows")),
                            static_cast<int>(n.attr_int("cols")));
    }
    std::vector<Value> inputs = {c.grad(), halos[0], halos[1], halos[2]};
    inputs.push_back(halos[3]);
    for (int k = 0; k < 5; ++k) inputs.push_back(c.input(k));
    return Values{g.add_node("smoothness_terms_adjoint", inputs, n.attrs),
                  Value(),
                  Value(),
                  Value(),
                  Value()};
  };
  // ṫ = 2(κ − κ_e)(κ̇ − κ̇_e)·[e] + 2(κ − κ_s)(κ̇ − κ̇_s)·[s]
  terms.tangent = [](const TangentContext& c) {
    Graph& g = c.graph();
    const Beyond beyond(c.node());
    Value k = c.input(0), kd = c.tangent_or_zeros(0);
    const int64_t n = k.shape()[0], m = k.shape()[1];
    Tensor east(k.shape(), 1.0), south(k.shape(), 1.0);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        if (j + 1 == m && !beyond.right) east[i * m + j] = 0;
        if (i + 1 == n && !beyond.down) south[i * m + j] = 0;
      }
    }
    Value de = k - east_of(k, c.input(2));
    Value ds = k - south_of(k, c.input(4));
    Value dde = kd - east_of(kd, c.tangent_or_zeros(2));
    Value dds = kd - south_of(kd, c.tangent_or_zeros(4));
    return Values{2.0 * de * dde * g.constant(east) +
                  2.0 * ds * dds * g.constant(south)};
  };
  register_op(std::move(terms));
}

void register_smoothness_terms_adjoint_op() {
  OpDef adjoint(
      "smoothness_terms_adjoint",
      "the cotangent of smoothness_terms' kappa from the terms' cotangent "
      "and both with their halos",
      {"grad",
       "grad_from_left",
       "grad_from_right",
       "grad_from_up",
       "grad_from_down",
       "kappa",
       "from_left",
       "from_right",
       "from_up",
       "from_down"});
  adjoint.attrs = beyond_attrs();
  adjoint.shape = [](const ShapeContext& c) {
    const Shape t = patch_with_halos(c, 0);
    if (patch_with_halos(c, 5) != t)
      c.fail("input \"kappa\"", "differs from grad's shape");
    return Shapes{t};
  };
  adjoint.compute = terms_adjoint_kernel;
  register_op(std::move(adjoint));
}

}  // namespace

void register_regularization_ops() {
  register_smoothness_terms_op();
  register_smoothness_terms_adjoint_op();
}

Value regularization_tikhonov(Value kappa, Value kappa0, double alpha) {
  Value d = kappa - kappa0;
  return alpha * mpi_dot(d, d, 0);
}

Value regularization_smoothness(Value kappa,
                                const HeatConfig& config,
                                const Patch& patch,
                                double alpha) {
  register_solvers_layer();
  const auto edges = patch_edges(kappa);
  const auto halos = data_exchange(
      edges[0], edges[1], edges[2], edges[3], config.px, config.py);
  Value terms =
      kappa.graph().add_node("smoothness_terms",
                             {kappa, halos[0], halos[1], halos[2], halos[3]},
                             {{"left", patch.J > 0},
                              {"right", patch.J + 1 < config.py},
                              {"up", patch.I > 0},
                              {"down", patch.I + 1 < config.px},
                              {"rows", config.px},
                              {"cols", config.py}});
  return alpha * mpi_total(terms, 0);
}

}  // namespace adgraph::solvers
