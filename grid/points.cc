#include "grid/points.h"

#include <cmath>
#include <iomanip>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/op.h"
#include "grid/grid_ops_impl.h"
#include "grid/halo.h"
#include "mpi_ops/communicator.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"

namespace adgraph::grid {
namespace {

std::string number(double x) {
  std::ostringstream o;
  o << std::setprecision(17) << x;
  return o.str();
}

// Why `points` cannot be used on `layout` (empty: they can).
std::string points_problem(const GridLayout& layout, const Points& points) {
  const int nd = layout.ndim();
  for (std::size_t p = 0; p < points.size(); ++p) {
    const std::string which = "point " + std::to_string(p);
    if (static_cast<int>(points[p].size()) != nd)
      return which + " has " + std::to_string(points[p].size()) +
             " coordinates on a " + std::to_string(nd) + "-D grid";
    for (int a = 0; a < nd; ++a) {
      const double x = points[p][a];
      const double last = static_cast<double>(layout.shape[a] - 1);
      if (!(x >= 0.0 && x <= last))
        return which + " lies outside the grid: coordinate " +
               std::to_string(a) + " is " + number(x) + ", not within [0, " +
               std::to_string(layout.shape[a] - 1) + "]";
    }
  }
  return {};
}

Points points_of(const nlohmann::json& attrs, int ndim) {
  const std::vector<double> flat =
      attrs.at("points").get<std::vector<double>>();
  Points out(flat.size() / std::max(ndim, 1));
  for (std::size_t p = 0; p < out.size(); ++p)
    out[p].assign(flat.begin() + p * ndim, flat.begin() + (p + 1) * ndim);
  return out;
}

// The corners this rank owns, of nonzero weight, in point-then-corner
// order: their index in the [P, 2^d] array and their offset in the patch.
struct Owned {
  std::vector<int64_t> slot, offset;
};

Owned owned_corners(const GridLayout& layout, const Points& points, int rank) {
  const int nd = layout.ndim(), nc = 1 << nd;
  const Shape local = layout.local_shape(rank), first = layout.offset(rank);
  const Tensor w = corner_weights(layout, points);
  Owned o;
  for (std::size_t p = 0; p < points.size(); ++p) {
    for (int c = 0; c < nc; ++c) {
      const int64_t slot = static_cast<int64_t>(p) * nc + c;
      if (w[slot] == 0.0) continue;
      int64_t offset = 0;
      bool mine = true;
      for (int a = 0; a < nd; ++a) {
        const int64_t g =
            static_cast<int64_t>(std::floor(points[p][a])) + ((c >> a) & 1);
        const int64_t i = g - first[a];
        mine = mine && i >= 0 && i < local[a];
        offset = offset * local[a] + i;
      }
      if (!mine) continue;
      o.slot.push_back(slot);
      o.offset.push_back(offset);
    }
  }
  return o;
}

// A bound kernel's owned corners, worked out on its first run (a loop runs
// the kernel every step; the rank does not change between runs).
struct OwnedOnce {
  int rank = -1;
  Owned owned;
  const Owned& of(const GridLayout& g, const Points& points, int r) {
    if (r != rank) {
      owned = owned_corners(g, points, r);
      rank = r;
    }
    return owned;
  }
};

std::vector<AttrSpec> point_attrs() {
  std::vector<AttrSpec> a = detail::grid_attr_specs();
  a.push_back({"points",
               AttrType::kFloats,
               nlohmann::json(),
               "the points' global index coordinates, point by point "
               "(ndim numbers each)"});
  return a;
}

// The layout and points of a node, checked.
std::pair<GridLayout, Points> checked_points(const ShapeContext& c) {
  const GridLayout g = detail::checked_layout(c);
  const std::vector<double> flat =
      c.node().attrs.at("points").get<std::vector<double>>();
  if (flat.size() % g.ndim() != 0)
    c.fail("attribute \"points\"",
           std::to_string(flat.size()) + " numbers for points of " +
               std::to_string(g.ndim()) + " coordinates each");
  const Points points = points_of(c.node().attrs, g.ndim());
  const std::string why = points_problem(g, points);
  if (!why.empty()) c.fail("attribute \"points\"", why);
  return {g, points};
}

OpDef point_def(const char* name, const char* doc) {
  OpDef def = every_rank_op(name, doc);
  def.inputs = {"x"};
  def.attrs = point_attrs();
  def.shapes_differ_by_rank = true;
  def.tangent = linear_tangent;
  def.ranks_doc =
      "Every rank of the grid's communicator runs it; it sends no message. "
      "Each rank reads or writes the corners it owns (grid/points.h).";
  return def;
}

Value point_node(const char* op,
                 const nlohmann::json& attrs,
                 Value x,
                 std::shared_ptr<CommContext> comm) {
  register_grid_layer();
  NodeOptions o;
  o.comm = std::move(comm);
  return x.graph().add_node(op, {x}, attrs, std::move(o));
}

nlohmann::json attrs_of(const Grid& grid, const Points& points) {
  const std::string why = points_problem(grid.layout(), points);
  if (!why.empty()) throw OptionsError(why, "", "grid points", "points");
  nlohmann::json attrs = grid.layout().attrs();
  std::vector<double> flat;
  for (const auto& p : points) flat.insert(flat.end(), p.begin(), p.end());
  attrs["points"] = flat;
  return attrs;
}

// The kernel of grid_corners (y[b, slot] = x[b, offset] at the owned
// corners) or of its transpose (y[b, offset] += x[b, slot], in order).
ComputeFn corner_kernel(const Node& n, bool transpose) {
  const GridLayout g = detail::layout_of(n);
  const Points points = points_of(n.attrs, g.ndim());
  auto once = std::make_shared<OwnedOnce>();
  return comm_kernel(
      [g, points, transpose, once](KernelContext& c, Communicator& comm) {
        const Owned& o = once->of(g, points, comm.rank());
        const Tensor& x = c.input(0);
        Tensor& y = c.output(0);
        y.array().setZero();
        const int64_t patch = num_elements(g.local_shape(comm.rank()));
        const int64_t width = static_cast<int64_t>(points.size()) << g.ndim();
        const int64_t per = transpose ? width : patch;
        const int64_t batch = per > 0 ? x.size() / per : 0;
        for (int64_t b = 0; b < batch; ++b) {
          for (std::size_t k = 0; k < o.slot.size(); ++k) {
            if (transpose)
              y[b * patch + o.offset[k]] += x[b * width + o.slot[k]];
            else
              y[b * width + o.slot[k]] = x[b * patch + o.offset[k]];
          }
        }
      });
}

// grid_inject's kernel: y = u, then y[b, offset] += c[b, slot] at the
// owned corners in order. In place when u's buffer is handed over.
ComputeFn inject_kernel(const Node& n) {
  const GridLayout g = detail::layout_of(n);
  const Points points = points_of(n.attrs, g.ndim());
  auto once = std::make_shared<OwnedOnce>();
  return comm_kernel([g, points, once](KernelContext& c, Communicator& comm) {
    const Owned& o = once->of(g, points, comm.rank());
    const Tensor& u = c.input(0);
    const Tensor& x = c.input(1);
    Tensor& y = c.output(0);
    if (y.data() != u.data()) y.array() = u.array();
    const int64_t patch = num_elements(g.local_shape(comm.rank()));
    const int64_t width = static_cast<int64_t>(points.size()) << g.ndim();
    const int64_t batch = patch > 0 ? u.size() / patch : 0;
    for (int64_t b = 0; b < batch; ++b)
      for (std::size_t k = 0; k < o.slot.size(); ++k)
        y[b * patch + o.offset[k]] += x[b * width + o.slot[k]];
  });
}

// The gradient of either op: the other one, on the same attributes.
GradientFn gradient_by(const char* op) {
  return [op](const GradientContext& c) {
    return Values{point_node(op, c.node().attrs, c.grad(0), c.node().comm)};
  };
}

void register_corners_op() {
  OpDef def = point_def(
      "grid_corners",
      "x at the corners of each point's cell that this rank owns, 0 at the "
      "others");
  def.input_docs = {"a field of the grid: [batch..., patch...]"};
  def.output_docs = {
      "[batch..., P, 2^ndim]: x at corner c of point p where this rank owns "
      "it and its weight is not 0 (bit a of c: the upper corner on axis a), "
      "else 0"};
  def.shape = [](const ShapeContext& c) {
    const auto [g, points] = checked_points(c);
    detail::check_field(c, g, c.input_shape(0), "input \"x\"");
    const Shape& x = c.input_shape(0);
    Shape out(x.begin(), x.end() - g.ndim());
    out.push_back(static_cast<int64_t>(points.size()));
    out.push_back(int64_t{1} << g.ndim());
    return Shapes{out};
  };
  def.bind = [](const Node& n) { return corner_kernel(n, false); };
  def.gradient = gradient_by("grid_corners_transpose");
  register_op(std::move(def));
}

void register_corners_transpose_op() {
  OpDef def = point_def(
      "grid_corners_transpose",
      "adds each point's corner values into a field, at the corners this "
      "rank owns (the transpose of grid_corners)");
  def.input_docs = {"[batch..., P, 2^ndim]: values at each point's corners"};
  def.output_docs = {
      "[batch..., patch...]: zeros plus, point by point and corner by "
      "corner in order, each value of weight not 0 at a corner this rank "
      "owns"};
  def.shape = [](const ShapeContext& c) {
    const auto [g, points] = checked_points(c);
    const Shape& x = c.input_shape(0);
    const int64_t nc = int64_t{1} << g.ndim();
    if (x.size() < 2 ||
        x[x.size() - 2] != static_cast<int64_t>(points.size()) ||
        x.back() != nc) {
      c.fail("input \"x\"",
             "shape " + shape_string(x) + " does not end in [" +
                 std::to_string(points.size()) + ", " + std::to_string(nc) +
                 "] (points, corners)");
    }
    Shape out(x.begin(), x.end() - 2);
    const Shape patch =
        g.local_shape(c.comm() != nullptr ? c.comm()->rank() : 0);
    out.insert(out.end(), patch.begin(), patch.end());
    return Shapes{out};
  };
  def.bind = [](const Node& n) { return corner_kernel(n, true); };
  def.gradient = gradient_by("grid_corners");
  register_op(std::move(def));
}

// y = u + grid_corners_transpose(c) in one pass that touches only the
// corners (in place when u dies here): what inject runs each step.
void register_inject_op() {
  OpDef def = point_def(
      "grid_inject",
      "u plus each point's corner values, added at the corners this rank "
      "owns (u + grid_corners_transpose(c), without a pass over the field)");
  def.inputs = {"u", "c"};
  def.input_docs = {"a field of the grid: [batch..., patch...]",
                    "[batch..., P, 2^ndim]: values at each point's corners "
                    "(u's batch axes)"};
  def.output_docs = {
      "u with, point by point and corner by corner in order, each value of "
      "weight not 0 added at a corner this rank owns"};
  def.shape = [](const ShapeContext& c) {
    const auto [g, points] = checked_points(c);
    detail::check_field(c, g, c.input_shape(0), "input \"u\"");
    const Shape& u = c.input_shape(0);
    Shape want(u.begin(), u.end() - g.ndim());
    want.push_back(static_cast<int64_t>(points.size()));
    want.push_back(int64_t{1} << g.ndim());
    if (c.input_shape(1) != want)
      c.fail("input \"c\"",
             "shape " + shape_string(c.input_shape(1)) + ", not " +
                 shape_string(want) + " (u's batch axes, points, corners)");
    return Shapes{u};
  };
  def.in_place = {{0, 0}};
  def.bind = inject_kernel;
  def.gradient = [](const GradientContext& c) {
    return Values{
        c.grad(0),
        point_node("grid_corners", c.node().attrs, c.grad(0), c.node().comm)};
  };
  register_op(std::move(def));
}

}  // namespace

Tensor corner_weights(const GridLayout& layout, const Points& points) {
  const std::string why = points_problem(layout, points);
  if (!why.empty()) throw OptionsError(why, "", "grid points", "points");
  const int nd = layout.ndim(), nc = 1 << nd;
  Tensor w(Shape{static_cast<int64_t>(points.size()), nc});
  for (std::size_t p = 0; p < points.size(); ++p) {
    for (int c = 0; c < nc; ++c) {
      double weight = 1.0;
      for (int a = 0; a < nd; ++a) {
        const double f = points[p][a] - std::floor(points[p][a]);
        weight *= ((c >> a) & 1) ? f : 1.0 - f;
      }
      w[static_cast<int64_t>(p) * nc + c] = weight;
    }
  }
  return w;
}

Value corners(const Grid& grid, Value x, const Points& points) {
  return point_node("grid_corners", attrs_of(grid, points), x, grid.comm());
}

Value corners_transpose(const Grid& grid, Value c, const Points& points) {
  return point_node(
      "grid_corners_transpose", attrs_of(grid, points), c, grid.comm());
}

Value sample(const Grid& grid, Value u, const Points& points) {
  Value c = corners(grid, u, points);
  NodeOptions o;
  o.comm = grid.comm();
  // Each corner has one owner: the others add zeros, exactly.
  Value all = u.graph().add_node(
      "mpi_allreduce", {c}, {{"op", "sum"}, {"exact", "no"}}, std::move(o));
  Value w = broadcast_to(
      u.graph().constant(corner_weights(grid.layout(), points)), all.shape());
  return sum(all * w, {static_cast<int64_t>(all.shape().size()) - 1});
}

Value inject(const Grid& grid,
             Value u,
             const Points& points,
             Value amplitudes) {
  register_grid_layer();
  const Shape& as = amplitudes.shape();
  if (as.empty() || as.back() != static_cast<int64_t>(points.size()))
    throw ShapeError("shape " + shape_string(as) +
                         ": one amplitude per point "
                         "needs a last axis of " +
                         std::to_string(points.size()) +
                         " ([batch..., P]; without batch axes: [P])",
                     "",
                     "grid inject",
                     "amplitudes");
  Shape with_corner = amplitudes.shape();
  with_corner.push_back(1);
  Shape spread = amplitudes.shape();
  spread.push_back(int64_t{1} << grid.ndim());
  Value a = broadcast_to(reshape(amplitudes, with_corner), spread);
  Value w = broadcast_to(
      u.graph().constant(corner_weights(grid.layout(), points)), spread);
  Value c = a * w;
  const Shape& us = u.shape();
  const bool same_batch = static_cast<int>(us.size()) >= grid.ndim() &&
                          Shape(us.begin(), us.end() - grid.ndim()) ==
                              Shape(spread.begin(), spread.end() - 2);
  if (!same_batch)
    return u + corners_transpose(grid, c, points);  // broadcasts u or a
  NodeOptions o;
  o.comm = grid.comm();
  return u.graph().add_node(
      "grid_inject", {u, c}, attrs_of(grid, points), std::move(o));
}

void register_point_ops() {
  register_corners_op();
  register_corners_transpose_op();
  register_inject_op();
}

}  // namespace adgraph::grid
