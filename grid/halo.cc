#include "grid/halo.h"

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/op.h"
#include "grid/exchange.h"
#include "grid/grid_ops_impl.h"
#include "grid/points.h"
#include "grid/stencil.h"
#include "mpi_ops/collectives.h"
#include "mpi_ops/communicator.h"

namespace adgraph::grid {
namespace {

using detail::HaloSpec;

std::vector<int64_t> widths_for(std::vector<int64_t> width, int ndim) {
  if (width.size() == 1 && ndim > 1) width.assign(ndim, width[0]);
  return width;
}

HaloSpec spec_of(const Node& n) {
  HaloSpec s;
  s.width = n.attr_ints("width");
  s.corners = n.attr_bool("corners");
  detail::parse_boundary(n.attr_string("boundary"), &s.rule);
  return s;
}

// Checks the layout, the widths, the rule and that `field` (input 0) is a
// field of the grid with `pad` extra points per side; returns the spec.
HaloSpec checked_spec(const ShapeContext& c, const GridLayout& g) {
  HaloSpec s;
  s.width = c.attr_ints("width");
  if (static_cast<int>(s.width.size()) != g.ndim())
    c.fail("attribute \"width\"",
           std::to_string(s.width.size()) + " entries for a " +
               std::to_string(g.ndim()) + "-D grid");
  for (int64_t w : s.width)
    if (w < 0)
      c.fail("attribute \"width\"", "negative width " + std::to_string(w));
  s.corners = c.node().attr_bool("corners");
  const std::string rule = c.node().attr_string("boundary");
  if (!detail::parse_boundary(rule, &s.rule))
    c.fail("attribute \"boundary\"",
           "unknown rule \"" + rule + "\" (zero, mirror or copy)");
  const std::string why = detail::halo_problem(g, s);
  if (!why.empty()) c.fail("attribute \"width\"", why);
  return s;
}

// The field shape whose padded form is input 0 (the transpose ops' x),
// checked against the grid and the spec.
Shape unpadded_shape(const ShapeContext& c) {
  const GridLayout g = detail::checked_layout(c);
  const HaloSpec s = checked_spec(c, g);
  Shape x = c.input_shape(0);
  const int nb = static_cast<int>(x.size()) - g.ndim();
  if (nb < 0) c.fail("input \"x\"", "too few axes: " + shape_string(x));
  for (int a = 0; a < g.ndim(); ++a) x[nb + a] -= 2 * s.width[a];
  detail::check_field(c, g, x, "input \"x\"");
  return x;
}

std::vector<AttrSpec> halo_attrs() {
  std::vector<AttrSpec> a = detail::grid_attr_specs();
  a.push_back(
      {"width", AttrType::kInts, nlohmann::json(), "ghost layers per axis"});
  a.push_back(
      {"corners", AttrType::kBool, true, "fill edge and corner ghosts"});
  a.push_back({"boundary",
               AttrType::kString,
               "zero",
               "ghosts past a non-periodic edge: zero, mirror or copy"});
  return a;
}

OpDef halo_def(const char* name, const char* doc) {
  OpDef def = every_rank_op(name, doc);
  def.inputs = {"x"};
  def.attrs = halo_attrs();
  def.shapes_differ_by_rank = true;
  def.tangent = linear_tangent;
  return def;
}

Value halo_node(const char* op, const Node& like, Value x) {
  nlohmann::json attrs = like.attrs;
  NodeOptions o;
  o.comm = like.comm;
  return x.graph().add_node(op, {x}, attrs, std::move(o));
}

void register_grid_halo_op() {
  // y = x padded with width[a] ghost layers per side of each spatial axis;
  // x̄ = grid_halo_transpose(ȳ)
  OpDef def = halo_def(
      "grid_halo", "pads a grid field with ghost layers from its neighbours");
  def.input_docs = {
      "a field of the grid: [batch..., patch...] (this rank's patch, "
      "local_shape; leading batch axes ride along)"};
  def.output_docs = {
      "x with width[a] ghost layers on both sides of each spatial axis a: "
      "[batch..., patch[a] + 2 width[a]...]; the interior is x"};
  def.ranks_doc =
      "Every rank of the grid's communicator runs it. Ghosts come from the "
      "face neighbours (and edge and corner ones when corners is true; "
      "otherwise those ghosts are zeros). Where there is no neighbour, past "
      "a non-periodic edge of the grid, ghosts follow the boundary rule: "
      "zeros (zero), x[k] mirrored across the edge (mirror, numpy.pad's "
      "reflect) or the edge layer repeated (copy, numpy.pad's edge); a "
      "periodic axis wraps instead. Adjoint: grid_halo_transpose.";
  def.shape = [](const ShapeContext& c) {
    const GridLayout g = detail::checked_layout(c);
    const HaloSpec s = checked_spec(c, g);
    detail::check_field(c, g, c.input_shape(0), "input \"x\"");
    return Shapes{detail::padded_shape(c.input_shape(0), s)};
  };
  def.bind = [](const Node& n) {
    return comm_kernel([g = detail::layout_of(n), s = spec_of(n)](
                           KernelContext& c, Communicator& comm) {
      detail::exchange(comm, g, s, c.input(0), c.output(0));
    });
  };
  def.gradient = [](const GradientContext& c) {
    return Values{halo_node("grid_halo_transpose", c.node(), c.grad(0))};
  };
  register_op(std::move(def));
}

void register_grid_halo_transpose_op() {
  // x̄ = the ghosts' cotangents sent back and added where they came from;
  // its adjoint is grid_halo
  OpDef def =
      halo_def("grid_halo_transpose",
               "the transpose of grid_halo: ghost cotangents added back");
  def.input_docs = {
      "a cotangent of grid_halo's output: [batch..., patch[a] + 2 "
      "width[a]...]"};
  def.output_docs = {
      "[batch..., patch...]: the interior plus each ghost's value sent back "
      "to the rank it came from and added, in a fixed order, where it was "
      "read"};
  def.ranks_doc =
      "Every rank of the grid's communicator runs it: the reverse of "
      "grid_halo's messages. Ghosts past a non-periodic edge go back to the "
      "layer their boundary rule read (mirror, copy) or are dropped (zero). "
      "Adjoint: grid_halo.";
  def.shape = [](const ShapeContext& c) { return Shapes{unpadded_shape(c)}; };
  def.bind = [](const Node& n) {
    return comm_kernel([g = detail::layout_of(n), s = spec_of(n)](
                           KernelContext& c, Communicator& comm) {
      Tensor work = c.input(0);
      detail::exchange_transpose(comm, g, s, work, c.output(0));
    });
  };
  def.gradient = [](const GradientContext& c) {
    return Values{halo_node("grid_halo", c.node(), c.grad(0))};
  };
  register_op(std::move(def));
}

// The start node a finish reads (input 0), checked to be of op `start`.
const Node& start_of(const ShapeContext& c, const char* start) {
  const Node& n = c.node().inputs[0].node();
  if (n.op_name() != start)
    c.fail("input 0 (\"request\")",
           "\"" + n.name + "\" (" + n.op_name() + ") is not a " + start +
               " request");
  return n;
}

const char* const kSplitRanks =
    "Every rank of the grid's communicator runs it, and starts and finishes "
    "its exchanges in the same order. Without corners every axis's messages "
    "leave at the start; with corners only the first axis's (the others "
    "carry edges and corners the first one brings, so they travel in the "
    "finish). Same values, bit for bit, as grid_halo.";

OpDef start_def(const char* name, const char* doc) {
  OpDef def = halo_def(name, doc);
  def.request = true;
  def.ranks_doc = kSplitRanks;
  def.output_docs = {
      "a request (a scalar handle) that exactly one finish must complete; "
      "work that does not need the ghosts runs meanwhile"};
  return def;
}

OpDef finish_def(const char* name, const char* doc) {
  OpDef def = every_rank_op(name, doc);
  def.inputs = {"request"};
  def.input_docs = {"the request of the matching start"};
  def.ranks_doc = kSplitRanks;
  def.tangent = linear_tangent;
  return def;
}

Value split_node(const char* op, const Node& like, Value x) {
  NodeOptions o;
  o.comm = like.comm;
  return x.graph().add_node(op, {x}, nlohmann::json::object(), std::move(o));
}

// The request's cotangent a start's gradient gets: the reverse request its
// finish's adjoint started (op `reverse`), or zeros when that adjoint had
// no cotangent to send.
Value reverse_request(const GradientContext& c, const char* reverse) {
  const Value& r = c.grad(0);
  if (r.valid() && r.node().op_name() == reverse) return r;
  throw GraphError("its request must be finished by exactly one " +
                       std::string(c.node().op_name() == "grid_halo_start"
                                       ? "grid_halo_finish"
                                       : "grid_halo_transpose_finish") +
                       " before gradients() can build its adjoint",
                   c.node().name,
                   c.node().op_name(),
                   "request");
}

void register_split_forward_ops() {
  // y = request for grid_halo's exchange of x;  x̄ = what the reverse
  // exchange (the request's cotangent) brings back
  OpDef start = start_def("grid_halo_start",
                          "starts grid_halo's exchange; y = a request for "
                          "grid_halo_finish");
  start.input_docs = {"a field of the grid: [batch..., patch...]"};
  start.shape = [](const ShapeContext& c) {
    const GridLayout g = detail::checked_layout(c);
    checked_spec(c, g);
    detail::check_field(c, g, c.input_shape(0), "input \"x\"");
    return Shapes{Shape{}};
  };
  start.bind = [](const Node& n) {
    return comm_kernel([g = detail::layout_of(n), s = spec_of(n)](
                           KernelContext& c, Communicator& comm) {
      c.output(0)[0] =
          static_cast<double>(detail::start_exchange(comm, g, s, c.input(0)));
    });
  };
  start.gradient = [](const GradientContext& c) {
    Value r = reverse_request(c, "grid_halo_transpose_start");
    return Values{split_node("grid_halo_transpose_finish", c.node(), r)};
  };
  register_op(std::move(start));

  // y = grid_halo(x) for the exchange `request` started;  the request's
  // cotangent = the reverse exchange of ȳ, started here
  OpDef finish = finish_def(
      "grid_halo_finish",
      "finishes an exchange grid_halo_start began; y = grid_halo(x)");
  finish.output_docs = {
      "x with its ghost layers, as grid_halo gives: [batch..., patch[a] + 2 "
      "width[a]...]"};
  finish.shape = [](const ShapeContext& c) {
    const Node& start = start_of(c, "grid_halo_start");
    return Shapes{
        detail::padded_shape(start.inputs[0].shape(), spec_of(start))};
  };
  finish.compute = comm_kernel([](KernelContext& c, Communicator& comm) {
    detail::finish_exchange(
        comm, static_cast<int64_t>(c.input(0)[0]), c.output(0));
  });
  finish.gradient = [](const GradientContext& c) {
    const Node& start = c.node().inputs[0].node();
    return Values{halo_node("grid_halo_transpose_start", start, c.grad(0))};
  };
  register_op(std::move(finish));
}

void register_split_transpose_ops() {
  // y = request for grid_halo_transpose of x;  x̄ = the request's cotangent
  // finished (a grid_halo_start of x̄'s own cotangent)
  OpDef start = start_def("grid_halo_transpose_start",
                          "starts grid_halo_transpose; y = a request for "
                          "grid_halo_transpose_finish");
  start.input_docs = {
      "a cotangent of grid_halo's output: [batch..., patch[a] + 2 "
      "width[a]...]"};
  start.shape = [](const ShapeContext& c) {
    unpadded_shape(c);
    return Shapes{Shape{}};
  };
  start.bind = [](const Node& n) {
    return comm_kernel([g = detail::layout_of(n), s = spec_of(n)](
                           KernelContext& c, Communicator& comm) {
      c.output(0)[0] = static_cast<double>(
          detail::start_exchange_transpose(comm, g, s, c.input(0)));
    });
  };
  start.gradient = [](const GradientContext& c) {
    Value r = reverse_request(c, "grid_halo_start");
    return Values{split_node("grid_halo_finish", c.node(), r)};
  };
  register_op(std::move(start));

  OpDef finish = finish_def("grid_halo_transpose_finish",
                            "finishes what grid_halo_transpose_start began; "
                            "y = grid_halo_transpose(x)");
  finish.output_docs = {"[batch..., patch...]: as grid_halo_transpose gives"};
  finish.shape = [](const ShapeContext& c) {
    const Node& start = start_of(c, "grid_halo_transpose_start");
    Shape x = start.inputs[0].shape();
    const HaloSpec s = spec_of(start);
    const int nb = static_cast<int>(x.size() - s.width.size());
    for (std::size_t a = 0; a < s.width.size(); ++a)
      x[nb + a] -= 2 * s.width[a];
    return Shapes{x};
  };
  finish.compute = comm_kernel([](KernelContext& c, Communicator& comm) {
    detail::finish_exchange_transpose(
        comm, static_cast<int64_t>(c.input(0)[0]), c.output(0));
  });
  finish.gradient = [](const GradientContext& c) {
    const Node& start = c.node().inputs[0].node();
    return Values{halo_node("grid_halo_start", start, c.grad(0))};
  };
  register_op(std::move(finish));
}

// A node of `op` (grid_halo or grid_halo_start) on the grid's communicator.
Value grid_halo_node(const char* op,
                     const Grid& grid,
                     Value x,
                     std::vector<int64_t> width,
                     const HaloOptions& options) {
  register_grid_layer();
  nlohmann::json attrs = grid.layout().attrs();
  attrs["width"] = widths_for(std::move(width), grid.ndim());
  attrs["corners"] = options.corners;
  attrs["boundary"] = options.boundary;
  NodeOptions o;
  o.comm = grid.comm();
  return x.graph().add_node(op, {x}, attrs, std::move(o));
}

}  // namespace

Value halo(const Grid& grid,
           Value x,
           std::vector<int64_t> width,
           const HaloOptions& options) {
  return grid_halo_node("grid_halo", grid, x, std::move(width), options);
}

Value halo_start(const Grid& grid,
                 Value x,
                 std::vector<int64_t> width,
                 const HaloOptions& options) {
  return grid_halo_node("grid_halo_start", grid, x, std::move(width), options);
}

Value halo_finish(Value request) {
  register_grid_layer();
  NodeOptions o;
  o.comm = request.node().comm;
  return request.graph().add_node(
      "grid_halo_finish", {request}, nlohmann::json::object(), std::move(o));
}

void register_grid_layer() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_mpi_ops_layer();
    register_halo_ops();
    register_point_ops();
    register_stencil_ops();
  });
}

void register_halo_ops() {
  register_grid_halo_op();
  register_grid_halo_transpose_op();
  register_split_forward_ops();
  register_split_transpose_ops();
}

}  // namespace adgraph::grid
