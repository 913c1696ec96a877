#include "solvers/patch_operators.h"

#include <algorithm>

#include "core/error.h"
#include "core/op.h"
#include "mpi_ops/halo.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"
#include "solvers/heat_step.h"

namespace adgraph::solvers {
namespace {

enum Direction { kLeft, kRight, kUp, kDown, kCenter };

// The global index of every grid point, patch by patch.
class Numbering {
 public:
  explicit Numbering(const HeatConfig& config) : config_(config) {
    int64_t first = 0;
    for (int r = 0; r < config.px * config.py; ++r) {
      patches_.push_back(patch_of(config, r));
      firsts_.push_back(first);
      first += patches_.back().n * patches_.back().m;
    }
    for (int i = 0; i < config.px; ++i)
      row0_.push_back(patches_[i * config.py].row0);
    for (int j = 0; j < config.py; ++j) col0_.push_back(patches_[j].col0);
  }
  bool inside(int64_t gi, int64_t gj) const {
    return gi >= 0 && gi < config_.nx && gj >= 0 && gj < config_.ny;
  }
  int64_t index(int64_t gi, int64_t gj) const {
    const int I = static_cast<int>(
        std::upper_bound(row0_.begin(), row0_.end(), gi) - row0_.begin() - 1);
    const int J = static_cast<int>(
        std::upper_bound(col0_.begin(), col0_.end(), gj) - col0_.begin() - 1);
    const int r = I * config_.py + J;
    const Patch& p = patches_[r];
    return firsts_[r] + (gi - p.row0) * p.m + (gj - p.col0);
  }
  const Patch& patch(int r) const { return patches_[r]; }
  int64_t first(int r) const { return firsts_[r]; }

 private:
  const HeatConfig& config_;
  std::vector<Patch> patches_;
  std::vector<int64_t> firsts_, row0_, col0_;
};

// The pattern of `rank` and, per direction and point, the index of its
// entry (−1 for a neighbour outside the domain).
struct Layout {
  sparse::CsrPattern pattern;
  std::array<std::vector<int64_t>, 5> entry;
};

Layout layout(const HeatConfig& config, int rank) {
  const Numbering numbering(config);
  const Patch& p = numbering.patch(rank);
  Layout out;
  out.pattern.first_row = numbering.first(rank);
  for (auto& e : out.entry) e.assign(p.n * p.m, -1);
  constexpr int64_t di[5] = {0, 0, -1, 1, 0}, dj[5] = {-1, 1, 0, 0, 0};
  for (int64_t a = 0; a < p.n; ++a) {
    for (int64_t b = 0; b < p.m; ++b) {
      std::vector<std::pair<int64_t, int>> row;
      for (int d = 0; d < 5; ++d) {
        const int64_t gi = p.row0 + a + di[d], gj = p.col0 + b + dj[d];
        if (numbering.inside(gi, gj))
          row.emplace_back(numbering.index(gi, gj), d);
      }
      std::sort(row.begin(), row.end());
      for (const auto& [column, d] : row) {
        out.entry[d][a * p.m + b] = out.pattern.local_entries();
        out.pattern.columns.push_back(column);
      }
      out.pattern.row_offsets.push_back(out.pattern.local_entries());
    }
  }
  return out;
}

// Fine point i's coarse neighbours and weights in one direction: an odd
// point is coarse point (i − 1)/2; an even one lies halfway between coarse
// points i/2 − 1 (none before the first) and i/2.
int weights_1d(int64_t i, std::array<std::pair<int64_t, double>, 2>& out) {
  if (i % 2 == 1) {
    out[0] = {(i - 1) / 2, 1.0};
    return 1;
  }
  int k = 0;
  if (i >= 2) out[k++] = {i / 2 - 1, 0.5};
  out[k++] = {i / 2, 0.5};
  return k;
}

sparse::Prolongation prolongation(const HeatConfig& fine,
                                  const HeatConfig& coarse,
                                  int rank) {
  const Numbering numbering(coarse);
  const Patch p = patch_of(fine, rank);
  const Patch& cp = numbering.patch(rank);
  sparse::Prolongation out;
  out.coarse_rows = cp.n * cp.m;
  out.pattern.first_row = Numbering(fine).first(rank);
  std::array<std::pair<int64_t, double>, 2> wi, wj;
  std::vector<std::pair<int64_t, double>> row;
  for (int64_t a = 0; a < p.n; ++a) {
    for (int64_t b = 0; b < p.m; ++b) {
      const int ni = weights_1d(p.row0 + a, wi);
      const int nj = weights_1d(p.col0 + b, wj);
      row.clear();
      for (int x = 0; x < ni; ++x)
        for (int y = 0; y < nj; ++y)
          row.emplace_back(numbering.index(wi[x].first, wj[y].first),
                           wi[x].second * wj[y].second);
      std::sort(row.begin(), row.end());
      for (const auto& [column, w] : row) {
        out.pattern.columns.push_back(column);
        out.values.push_back(w);
      }
      out.pattern.row_offsets.push_back(out.pattern.local_entries());
    }
  }
  return out;
}

HeatConfig config_of(const Node& n) {
  HeatConfig c;
  c.nx = static_cast<int>(n.attr_int("nx"));
  c.ny = static_cast<int>(n.attr_int("ny"));
  c.px = static_cast<int>(n.attr_int("px"));
  c.py = static_cast<int>(n.attr_int("py"));
  return c;
}

nlohmann::json attrs_of(const HeatConfig& c, int rank) {
  return {
      {"nx", c.nx}, {"ny", c.ny}, {"px", c.px}, {"py", c.py}, {"rank", rank}};
}

std::vector<AttrSpec> grid_attrs() {
  return {{"nx", AttrType::kInt, nullptr, "grid rows", 1},
          {"ny", AttrType::kInt, nullptr, "grid columns", 1},
          {"px", AttrType::kInt, nullptr, "patch rows", 1},
          {"py", AttrType::kInt, nullptr, "patch columns", 1},
          {"rank", AttrType::kInt, nullptr, "this rank's patch", 0}};
}

Patch checked_patch(const ShapeContext& c) {
  HeatConfig config = config_of(c.node());
  const int rank = static_cast<int>(c.attr_int("rank"));
  std::string error;
  if (!config.is_valid(config.px * config.py, &error)) c.fail("attrs", error);
  if (rank >= config.px * config.py)
    c.fail("attribute \"rank\"", "outside the patch grid");
  return patch_of(config, rank);
}

void register_five_point_values_op() {
  OpDef def("five_point_values",
            "a 5-point matrix's entries (patch-by-patch numbering) from the "
            "coefficients of each point and of its four neighbours",
            {"left", "right", "up", "down", "center"});
  def.attrs = grid_attrs();
  def.shape = [](const ShapeContext& c) {
    const Patch p = checked_patch(c);
    for (int i = 0; i < 5; ++i) {
      if (c.input_shape(i) != Shape{p.n, p.m}) {
        c.fail("inputs",
               "each coefficient must be the n x m patch " +
                   shape_string(Shape{p.n, p.m}));
      }
    }
    Layout l =
        layout(config_of(c.node()), static_cast<int>(c.attr_int("rank")));
    return Shapes{Shape{l.pattern.local_entries()}};
  };
  def.bind = [](const Node& n) -> ComputeFn {
    auto l = std::make_shared<Layout>(
        layout(config_of(n), static_cast<int>(n.attr_int("rank"))));
    return [l](KernelContext& c) {
      double* out = c.output(0).data();
      for (int d = 0; d < 5; ++d) {
        const double* in = c.input(d).data();
        const auto& entry = l->entry[d];
        for (std::size_t k = 0; k < entry.size(); ++k) {
          if (entry[k] >= 0) out[entry[k]] = in[k];
        }
      }
    };
  };
  def.gradient = [](const GradientContext& c) {
    auto outs = c.graph().add_node_outputs(
        "five_point_values_adjoint", {c.grad(), c.input(0)}, c.node().attrs);
    return Values(outs.begin(), outs.end());
  };
  def.tangent = linear_tangent;
  register_op(std::move(def));
}

void register_five_point_values_adjoint_op() {
  OpDef adj("five_point_values_adjoint",
            "five_point_values' transpose: each coefficient's cotangent "
            "gathered from its entry (0 where it has none)",
            {"values", "like"});
  adj.shape_only = {1};
  adj.num_outputs = 5;
  adj.attrs = grid_attrs();
  adj.shape = [](const ShapeContext& c) {
    const Patch p = checked_patch(c);
    return Shapes(5, Shape{p.n, p.m});
  };
  adj.bind = [](const Node& n) -> ComputeFn {
    auto l = std::make_shared<Layout>(
        layout(config_of(n), static_cast<int>(n.attr_int("rank"))));
    return [l](KernelContext& c) {
      const double* in = c.input(0).data();
      for (int d = 0; d < 5; ++d) {
        double* out = c.output(d).data();
        const auto& entry = l->entry[d];
        for (std::size_t k = 0; k < entry.size(); ++k) {
          out[k] = entry[k] >= 0 ? in[entry[k]] : 0.0;
        }
      }
    };
  };
  adj.gradient = [](const GradientContext& c) {
    std::vector<Value> inputs;
    for (int d = 0; d < 5; ++d) inputs.push_back(c.grad(d));
    return Values{
        c.graph().add_node("five_point_values", inputs, c.node().attrs),
        Value()};
  };
  adj.tangent = [](const TangentContext& c) {
    auto outs = c.graph().add_node_outputs("five_point_values_adjoint",
                                           {c.tangent_or_zeros(0), c.input(1)},
                                           c.node().attrs);
    return Values(outs.begin(), outs.end());
  };
  register_op(std::move(adj));
}

// κ at each point's neighbour in direction d (left, right, up, down): from
// the patch, from the halo across a patch edge, or κ itself across the
// domain boundary.
std::array<Value, 4> neighbour_kappa(const HeatConfig& config,
                                     int rank,
                                     Value kappa) {
  const Patch p = patch_of(config, rank);
  const int64_t n = p.n, m = p.m;
  std::array<Value, 4> edges = patch_edges(kappa);
  std::array<Value, 4> halos = data_exchange(
      edges[0], edges[1], edges[2], edges[3], config.px, config.py);
  const bool boundary[4] = {
      p.J == 0, p.J == config.py - 1, p.I == 0, p.I == config.px - 1};
  std::array<Value, 4> from;
  for (int d = 0; d < 4; ++d) from[d] = boundary[d] ? edges[d] : halos[d];
  return {concat({reshape(from[0], {n, 1}), slice(kappa, 1, 0, m - 1)}, 1),
          concat({slice(kappa, 1, 1, m), reshape(from[1], {n, 1})}, 1),
          concat({reshape(from[2], {1, m}), slice(kappa, 0, 0, n - 1)}, 0),
          concat({slice(kappa, 0, 1, n), reshape(from[3], {1, m})}, 0)};
}

}  // namespace

sparse::CsrPattern five_point_pattern(const HeatConfig& config, int rank) {
  return layout(config, rank).pattern;
}

Value five_point_values(const HeatConfig& config,
                        int rank,
                        Value center,
                        const std::array<Value, 4>& sides) {
  register_solvers_layer();
  return center.graph().add_node(
      "five_point_values",
      {sides[0], sides[1], sides[2], sides[3], center},
      attrs_of(config, rank));
}

Value heat_matrix_values(const HeatConfig& config,
                         int rank,
                         Value kappa,
                         double s) {
  const double c = s / (config.h() * config.h());
  Value side = c * kappa;
  return five_point_values(
      config, rank, 1.0 - 4.0 * side, {side, side, side, side});
}

Value scaled_heat_matrix_values(const HeatConfig& config,
                                int rank,
                                Value inv_kappa,
                                double s) {
  const double c = s / (config.h() * config.h());
  Value side = inv_kappa.graph().constant(Tensor(inv_kappa.shape(), c));
  return five_point_values(
      config, rank, inv_kappa - 4.0 * c, {side, side, side, side});
}

Value conservative_values(const HeatConfig& config, int rank, Value kappa) {
  const double inv_h2 = 1.0 / (config.h() * config.h());
  std::array<Value, 4> near = neighbour_kappa(config, rank, kappa);
  std::array<Value, 4> sides;
  Value center;
  for (int d = 0; d < 4; ++d) {
    Value c = 0.5 * inv_h2 * (kappa + near[d]);
    center = center.valid() ? center + c : c;
    sides[d] = -c;
  }
  return five_point_values(config, rank, center, sides);
}

void register_patch_operator_ops() {
  register_five_point_values_op();
  register_five_point_values_adjoint_op();
}

std::vector<sparse::Prolongation> patch_prolongations(const HeatConfig& config,
                                                      int rank,
                                                      int max_levels,
                                                      int min_points) {
  std::vector<sparse::Prolongation> out;
  HeatConfig fine = config;
  while (static_cast<int>(out.size()) + 1 < max_levels) {
    const int64_t n = fine.nx / fine.px, m = fine.ny / fine.py;
    if (n % 2 != 0 || m % 2 != 0 || fine.nx / 2 < min_points ||
        fine.ny / 2 < min_points) {
      break;
    }
    HeatConfig coarse = fine;
    coarse.nx /= 2;
    coarse.ny /= 2;
    out.push_back(prolongation(fine, coarse, rank));
    fine = coarse;
  }
  return out;
}

}  // namespace adgraph::solvers
