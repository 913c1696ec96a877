#include "mpi_ops/halo.h"

#include <utility>

#include "core/op.h"
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
  auto out = left.graph().add_node_outputs("data_exchange",
                                           {left, right, up, down},
                                           {{"rows", rows}, {"cols", cols}});
  return {out[0], out[1], out[2], out[3]};
}

void register_halo_ops() {
  // y_k = strip the neighbour in direction k sent to this rank (0 if none);
  // x̄ = data_exchange(ȳ)
  OpDef def;
  def.name = "data_exchange";
  def.doc = "halo swap with the four neighbours of a rows x cols patch grid";
  def.inputs = {"left", "right", "up", "down"};
  def.attrs = {
      {"rows", AttrType::kInt, nlohmann::json(), "patch rows N", 1},
      {"cols", AttrType::kInt, nlohmann::json(), "patch columns M", 1}};
  def.num_outputs = 4;
  def.communication = true;
  def.every_rank = true;
  def.communicator = world_communicator;
  def.shape = [](const ShapeContext& c) {
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
             "shape " + shape_string(c.input_shape(1)) +
                 " differs from left's " + shape_string(c.input_shape(0)));
    }
    if (c.input_shape(2) != c.input_shape(3)) {
      c.fail("input \"down\"",
             "shape " + shape_string(c.input_shape(3)) + " differs from up's " +
                 shape_string(c.input_shape(2)));
    }
    return Shapes{
        c.input_shape(0), c.input_shape(1), c.input_shape(2), c.input_shape(3)};
  };
  def.compute = comm_kernel([](KernelContext& c, Communicator& comm) {
    const HaloNeighbours n =
        neighbours_of(comm.rank(),
                      static_cast<int>(c.attr_int("rows")),
                      static_cast<int>(c.attr_int("cols")));
    const double* send[4];
    double* recv[4];
    int64_t counts[4];
    for (int k = 0; k < 4; ++k) {
      send[k] = c.input(k).data();
      recv[k] = c.output(k).data();
      counts[k] = c.input(k).size();
      c.output(k).array().setZero();
    }
    comm.data_exchange(n, send, recv, counts, kHaloTag);
  });
  def.gradient = [](const GradientContext& c) {
    auto adj = data_exchange(c.grad(0),
                             c.grad(1),
                             c.grad(2),
                             c.grad(3),
                             static_cast<int>(c.node().attr_int("rows")),
                             static_cast<int>(c.node().attr_int("cols")));
    return Values{adj[0], adj[1], adj[2], adj[3]};
  };
  def.tangent = linear_tangent;
  register_op(std::move(def));
}

}  // namespace adgraph
