// The loader's node entries (driver/graph_nodes.cc): inputs by name and by
// output, attributes, control inputs in any order, nodes on a declared
// communicator, and the refusals of an entry's form and order.
#include <gtest/gtest.h>

#include "tests/driver/load.h"

namespace adgraph {
namespace {

using testing::expect_refused;
using testing::load;

int world_size() { return Communicator::world()->size(); }

TEST(GraphNodes, InputsAttributesAndOutputsByIndex) {
  // pad([1, 2], before 1, after 2, value 9) = [9, 1, 2, 9, 9]; slice 1..3
  // of it: [1, 2]; the down edge (e:3) of [[1, 2], [3, 4]]: [3, 4].
  auto loaded = load(R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "constant", "attrs": {"value": [1, 2]}},
      {"name": "p", "op": "pad", "inputs": ["x"],
       "attrs": {"axis": 0, "before": 1, "after": 2, "value": 9}},
      {"name": "s", "op": "slice", "inputs": ["p"],
       "attrs": {"axis": 0, "begin": 1, "end": 3}},
      {"name": "u", "op": "constant", "attrs": {"value": [[1, 2], [3, 4]]}},
      {"name": "e", "op": "patch_edges", "inputs": ["u"]},
      {"name": "d", "op": "add", "inputs": ["s", "e:3"]}],
    "fetch": ["p", "d"]})");
  const std::vector<Tensor> out = loaded->fetched();
  EXPECT_EQ(out[0].to_vector(), (std::vector<double>{9, 1, 2, 9, 9}));
  EXPECT_EQ(out[1].to_vector(), (std::vector<double>{4, 6}));
}

TEST(GraphNodes, AfterMayNameALaterNode) {
  auto loaded = load(R"({"adgraph": 1, "nodes": [
      {"name": "a", "op": "constant", "attrs": {"value": 2},
       "after": ["b"]},
      {"name": "b", "op": "constant", "attrs": {"value": 3}},
      {"name": "c", "op": "mul", "inputs": ["a", "b"]}],
    "fetch": ["c"]})");
  EXPECT_EQ(loaded->fetched()[0].item(), 6.0);
  const Node& a = loaded->doc.values.at("a").node();
  ASSERT_EQ(a.control_inputs.size(), 1u);
  EXPECT_EQ(a.control_inputs[0], loaded->doc.values.at("b").node_id());
}

TEST(GraphNodes, ANodeOnADeclaredCommunicatorReducesOverItsRanks) {
  // "alone": every rank a color of its own. x = 1.5 on every rank.
  std::string colors;
  for (int r = 0; r < world_size(); ++r)
    colors += (r ? ", " : "") + std::to_string(r);
  auto loaded = load(R"({"adgraph": 1,
    "communicators": {"alone": {"color": [)" +
                     colors + R"(]}},
    "nodes": [
      {"name": "x", "op": "fill", "attrs": {"shape": [], "value": 1.5}},
      {"name": "all", "op": "mpi_allreduce", "inputs": ["x"]},
      {"name": "own", "op": "mpi_allreduce", "inputs": ["x"],
       "comm": "alone"}],
    "fetch": ["all", "own"]})");
  const std::vector<Tensor> out = loaded->fetched();
  EXPECT_EQ(out[0].item(), 1.5 * world_size());
  EXPECT_EQ(out[1].item(), 1.5);
}

TEST(GraphNodes, RefusalsOfAnEntrysFormAndOrder) {
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": [2]},
      {"name": "x", "op": "placeholder", "shape": [2]}]})",
                 "t.json: node \"x\" (placeholder): name: duplicate node name");
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "y", "op": "square", "inputs": ["x"]},
      {"name": "x", "op": "placeholder", "shape": [2]}]})",
                 "node \"y\" (square): inputs[0]: \"x\" is defined later in "
                 "the document");
  expect_refused(
      R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": [2]},
      {"name": "y", "op": "square", "inputs": ["x:1"]}]})",
      "node \"y\" (square): inputs[0]: \"x\" has 1 output(s), not 2");
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "y", "op": "sqaure", "inputs": []}]})",
                 "node \"y\" (sqaure): op: unknown op \"sqaure\"; did you mean "
                 "\"square\"?");
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "a", "op": "constant", "attrs": {"value": 1}, "after": ["b"]},
      {"name": "b", "op": "constant", "attrs": {"value": 1},
       "after": ["a"]}]})",
                 "the \"after\" dependencies form a cycle");
  expect_refused(
      R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder"}]})",
      "node \"x\" (placeholder): shape: a placeholder needs a shape");
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "a:b", "op": "placeholder", "shape": []}]})",
                 "node \"a:b\": name: a node name must be non-empty and "
                 "contain neither");
}

}  // namespace
}  // namespace adgraph
