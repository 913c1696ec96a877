#include "mpi_ops/halo.h"

#include <string>
#include <utility>
#include <vector>

#include "core/core_ops.h"
#include "core/error.h"
#include "core/op.h"
#include "mpi_ops/collectives.h"
#include "mpi_ops/communicator.h"
#include "mpi_ops/tags.h"

namespace adgraph {
namespace {

HaloNeighbours neighbours_of(int rank, int rows, int cols) {
  const int i = rank / cols, j = rank % cols;
  HaloNeighbours n;
  if (j > 0) n.left = rank - 1;
  if (j + 1 < cols) n.right = rank + 1;
  if (i > 0) n.up = rank - cols;
  if (i + 1 < rows) n.down = rank + cols;
  return n;
}

}  // namespace

std::array<Value, 4> data_exchange(
    Value left, Value right, Value up, Value down, int rows, int cols) {
  register_mpi_ops_layer();
  auto out = left.graph().add_node_outputs("data_exchange",
                                           {left, right, up, down},
                                           {{"rows", rows}, {"cols", cols}});
  return {out[0], out[1], out[2], out[3]};
}

Value data_exchange_start(
    Value left, Value right, Value up, Value down, int rows, int cols) {
  register_mpi_ops_layer();
  return left.graph().add_node("data_exchange_start",
                               {left, right, up, down},
                               {{"rows", rows}, {"cols", cols}});
}

std::array<Value, 4> data_exchange_finish(Value request) {
  register_mpi_ops_layer();
  auto out =
      request.graph().add_node_outputs("data_exchange_finish", {request});
  return {out[0], out[1], out[2], out[3]};
}

namespace {

// What data_exchange, data_exchange_start and _finish share.
OpDef exchange_def(const char* name, const char* doc) {
  OpDef def = every_rank_op(name, doc);
  // Patches of uneven size (solvers/heat_solver.h's patch_of) exchange
  // strips of different lengths; each receive checks the length its
  // neighbour sent.
  def.shapes_differ_by_rank = true;
  def.tangent = linear_tangent;
  return def;
}

// What help() says of the strips the three ops take and give.
std::vector<std::string> strip_input_docs() {
  return {
      "the strip this rank sends to its left neighbour (patch (I, J-1)), "
      "e.g. its first column; any shape, right's too",
      "the strip sent to the right neighbour (I, J+1); left's shape",
      "the strip sent to the upper neighbour (I-1, J), e.g. the first "
      "row; any shape, down's too",
      "the strip sent to the lower neighbour (I+1, J); up's shape"};
}
std::vector<std::string> strip_output_docs() {
  return {
      "from_left: what the left neighbour sent as its `right` strip "
      "(left's shape); zeros when J = 0 (no left neighbour)",
      "from_right: the right neighbour's `left` strip (right's shape); "
      "zeros when J = cols-1",
      "from_up: the upper neighbour's `down` strip (up's shape); zeros "
      "when I = 0",
      "from_down: the lower neighbour's `up` strip (down's shape); zeros "
      "when I = rows-1"};
}
constexpr const char* kStripRanks =
    "Rank r owns patch (I, J) = (r / cols, r % cols) of a rows x cols patch "
    "grid (not periodic; rows * cols = the number of ranks); its neighbours "
    "are left (I, J-1), right (I, J+1), up (I-1, J) and down (I+1, J). Every "
    "rank runs the node. A missing neighbour (a patch on the grid's edge) "
    "sends nothing, and the strip from it is zeros. A received strip must "
    "have as many elements as the one this rank sends back that way. "
    "Adjoint: the same swap of the output cotangents (data_exchange is its "
    "own transpose).";

std::vector<AttrSpec> grid_attrs() {
  return {{"rows", AttrType::kInt, nlohmann::json(), "patch rows N", 1},
          {"cols", AttrType::kInt, nlohmann::json(), "patch columns M", 1}};
}

// The grid must have as many patches as ranks; left/right and up/down
// strips must agree. Returns the four strip shapes.
Shapes check_strips(const ShapeContext& c) {
  const int size = c.comm()->size();
  if (c.attr_int("rows") * c.attr_int("cols") != size) {
    c.fail("attribute \"rows\"",
           "a " + std::to_string(c.attr_int("rows")) + " x " +
               std::to_string(c.attr_int("cols")) + " patch grid needs " +
               std::to_string(c.attr_int("rows") * c.attr_int("cols")) +
               " ranks, the communicator has " + std::to_string(size));
  }
  if (c.input_shape(0) != c.input_shape(1)) {
    c.fail("input \"right\"",
           "shape " + shape_string(c.input_shape(1)) + " differs from left's " +
               shape_string(c.input_shape(0)));
  }
  if (c.input_shape(2) != c.input_shape(3)) {
    c.fail("input \"down\"",
           "shape " + shape_string(c.input_shape(3)) + " differs from up's " +
               shape_string(c.input_shape(2)));
  }
  return Shapes{
      c.input_shape(0), c.input_shape(1), c.input_shape(2), c.input_shape(3)};
}

// The patch grid of a node's rows and cols attributes, read once per node
// (OpDef::bind); its kernel finds the neighbours from the rank.
struct Grid {
  int rows, cols;
  explicit Grid(const Node& n)
      : rows(static_cast<int>(n.attr_int("rows"))),
        cols(static_cast<int>(n.attr_int("cols"))) {}
  HaloNeighbours neighbours(const Communicator& comm) const {
    return neighbours_of(comm.rank(), rows, cols);
  }
};

// Whether no cotangent reached the four received strips (heat_step's
// gather-form adjoint takes its neighbours' terms through an exchange of
// its own): then the adjoint swap would send zeros, and it is left out.
// Every rank of one graph skips alike; a rank-dependent graph whose halos
// get cotangents on some ranks only would leave a neighbour waiting (the
// communication deadline names it).
bool no_strip_cotangents(const GradientContext& c) {
  for (int k = 0; k < 4; ++k)
    if (c.grad(k).node().op_name() != "zeros") return false;
  return true;
}

// Zero cotangents for the four strips `exchange` sends.
Values zero_strips(const GradientContext& c, const Node& exchange) {
  Values zero;
  for (const Value& strip : exchange.inputs)
    zero.push_back(zeros(c.graph(), strip.shape()));
  return zero;
}

// Whether a data_exchange_finish in `g` finishes `request`.
bool finished_in_graph(const Graph& g, const Value& request) {
  for (int id = request.node_id() + 1; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (n.op_name() == "data_exchange_finish" && n.inputs[0] == request)
      return true;
  }
  return false;
}

void register_data_exchange_op() {
  // y_k = strip the neighbour in direction k sent to this rank (0 if none);
  // x̄ = data_exchange(ȳ)
  OpDef def = exchange_def(
      "data_exchange",
      "halo swap with the four neighbours of a rows x cols patch grid");
  def.inputs = {"left", "right", "up", "down"};
  def.input_docs = strip_input_docs();
  def.output_docs = strip_output_docs();
  def.ranks_doc = kStripRanks;
  def.attrs = grid_attrs();
  def.num_outputs = 4;
  def.shape = check_strips;
  def.bind = [](const Node& n) {
    return comm_kernel([grid = Grid(n)](KernelContext& c, Communicator& comm) {
      const double* send[4];
      double* recv[4];
      int64_t counts[4];
      for (int k = 0; k < 4; ++k) {
        send[k] = c.input(k).data();
        recv[k] = c.output(k).data();
        counts[k] = c.input(k).size();
        c.output(k).array().setZero();
      }
      comm.data_exchange(grid.neighbours(comm), send, recv, counts, kHaloTag);
    });
  };
  def.gradient = [](const GradientContext& c) {
    if (no_strip_cotangents(c)) return zero_strips(c, c.node());
    auto adj = data_exchange(c.grad(0),
                             c.grad(1),
                             c.grad(2),
                             c.grad(3),
                             static_cast<int>(c.node().attr_int("rows")),
                             static_cast<int>(c.node().attr_int("cols")));
    return Values{adj[0], adj[1], adj[2], adj[3]};
  };
  register_op(std::move(def));
}

void register_data_exchange_start_op() {
  // y = request for the swap of (left, right, up, down);  x̄ = what the
  // reverse swap (the request's cotangent, started by the finish's
  // adjoint) brings back
  OpDef start =
      exchange_def("data_exchange_start",
                   "starts the halo swap of data_exchange; y = request for "
                   "data_exchange_finish");
  start.inputs = {"left", "right", "up", "down"};
  start.input_docs = strip_input_docs();
  start.output_docs = {
      "a request (a scalar handle) that exactly one data_exchange_finish "
      "must complete; work that does not need the strips runs meanwhile"};
  start.ranks_doc = kStripRanks;
  start.attrs = grid_attrs();
  start.request = true;
  start.shape = [](const ShapeContext& c) {
    check_strips(c);
    return Shapes{Shape{}};
  };
  start.bind = [](const Node& n) {
    return comm_kernel([grid = Grid(n)](KernelContext& c, Communicator& comm) {
      const double* send[4];
      int64_t counts[4];
      for (int k = 0; k < 4; ++k) {
        send[k] = c.input(k).data();
        counts[k] = c.input(k).size();
      }
      c.output(0)[0] = static_cast<double>(comm.start_data_exchange(
          grid.neighbours(comm), send, counts, kHaloTag));
    });
  };
  start.gradient = [](const GradientContext& c) {
    const Value& reverse = c.grad(0);
    // The finish's adjoint found no cotangent on the strips (see
    // no_strip_cotangents) and started no reverse swap.
    if (reverse.valid() && reverse.node().op_name() == "zeros" &&
        finished_in_graph(c.graph(), c.output(0)))
      return zero_strips(c, c.node());
    if (!reverse.valid() || reverse.node().op_name() != "data_exchange_start") {
      throw GraphError(
          "its request must be finished by exactly one data_exchange_finish "
          "before gradients() can build its adjoint",
          c.node().name,
          c.node().op_name(),
          "request");
    }
    auto adj = data_exchange_finish(reverse);
    return Values{adj[0], adj[1], adj[2], adj[3]};
  };
  register_op(std::move(start));
}

void register_data_exchange_finish_op() {
  // y_k = as data_exchange, for the swap `request` started;  the request's
  // cotangent = the reverse swap of ȳ, started here
  OpDef finish = exchange_def(
      "data_exchange_finish",
      "finishes a halo swap data_exchange_start began; y_k = the strip from "
      "direction k (zeros where there is no neighbour)");
  finish.inputs = {"request"};
  finish.input_docs = {"the request of a data_exchange_start"};
  finish.output_docs = strip_output_docs();
  finish.ranks_doc = kStripRanks;
  finish.num_outputs = 4;
  finish.shape = [](const ShapeContext& c) {
    const Node& start = c.node().inputs[0].node();
    if (start.op_name() != "data_exchange_start") {
      c.fail("input 0 (\"request\")",
             "\"" + start.name + "\" (" + start.op_name() +
                 ") is not a data_exchange_start request");
    }
    return Shapes{start.inputs[0].shape(),
                  start.inputs[1].shape(),
                  start.inputs[2].shape(),
                  start.inputs[3].shape()};
  };
  finish.compute = comm_kernel([](KernelContext& c, Communicator& comm) {
    double* recv[4];
    for (int k = 0; k < 4; ++k) {
      recv[k] = c.output(k).data();
      c.output(k).array().setZero();
    }
    comm.finish_data_exchange(static_cast<int64_t>(c.input(0)[0]), recv);
  });
  finish.gradient = [](const GradientContext& c) {
    const Node& start = c.node().inputs[0].node();
    if (no_strip_cotangents(c)) return Values{zeros(c.graph(), Shape{})};
    return Values{
        data_exchange_start(c.grad(0),
                            c.grad(1),
                            c.grad(2),
                            c.grad(3),
                            static_cast<int>(start.attr_int("rows")),
                            static_cast<int>(start.attr_int("cols")))};
  };
  register_op(std::move(finish));
}

}  // namespace

void register_halo_ops() {
  register_data_exchange_op();
  register_data_exchange_start_op();
  register_data_exchange_finish_op();
}

}  // namespace adgraph
