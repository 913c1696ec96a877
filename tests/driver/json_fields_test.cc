// The loader's typed access to JSON fields (driver/json_fields.cc): every
// JSON type named in "expected …, found …", required and unknown fields,
// references, shapes and values, each refusal naming the file, the node
// and the field.
#include <gtest/gtest.h>

#include "tests/driver/load.h"

namespace adgraph {
namespace {

using testing::expect_refused;
using testing::load;

// A document whose node "s" has `attrs` as given.
std::string with_attrs(const std::string& attrs) {
  return R"({"adgraph": 1, "nodes": [
      {"name": "s", "op": "fill", "attrs": )" +
         attrs + "}]}";
}

TEST(JsonFields, EveryJsonTypeIsNamed) {
  const std::pair<const char*, const char*> cases[] = {{"1", "an integer"},
                                                       {"1.5", "a number"},
                                                       {"\"x\"", "a string"},
                                                       {"[]", "a list"},
                                                       {"true", "a boolean"},
                                                       {"null", "null"}};
  for (const auto& [json, name] : cases) {
    expect_refused(with_attrs(json),
                   std::string("t.json: node \"s\": attrs: expected an "
                               "object, found ") +
                       name);
  }
}

TEST(JsonFields, RequiredAndUnknownFields) {
  expect_refused(R"({"adgraph": 1, "nodes": [{"op": "placeholder"}]})",
                 "t.json: nodes[0].name: required field is missing");
  expect_refused(R"({"adgraph": 1, "nodes": [{"name": "x"}]})",
                 "t.json: node \"x\": op: required field is missing");
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": [1], "input": []}]})",
                 "t.json: node \"x\": input: unknown field (allowed: name, op, "
                 "inputs, attrs, shape, after, comm, doc, stencil, grid)");
  expect_refused(R"({"adgraph": 1, "nodes": [], "fetch": "x"})",
                 "t.json: fetch: expected a list, found a string");
}

TEST(JsonFields, ShapesAndValues) {
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": [2, -2]}]})",
                 "t.json: node \"x\": shape: extents must be non-negative "
                 "integers, found -2");
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": [100000, 100000]}]})",
                 "node \"x\": shape: shape [100000, 100000] has more than "
                 "2^30 elements");
  expect_refused(
      R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": [2]}],
    "feeds": {"x": [1, "two"]}})",
      "t.json: node \"x\": feeds.x: expected a number, found string");
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": [2, 3]}],
    "feeds": {"x": [[1, 2], [3, 4], [5, 6]]}})",
                 "node \"x\": feeds.x: nested lists of shape [3, 2] for a node "
                 "of shape [2, 3]");
  // A fill of the node's shape, and nested lists of it.
  auto loaded = load(R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": [3, 1]},
      {"name": "y", "op": "placeholder", "shape": [1, 2]}],
    "feeds": {"x": [[1], [2], [3]], "y": {"fill": 7, "shape": [1, 2]}},
    "fetch": ["x", "y"]})");
  const std::vector<Tensor> out = loaded->fetched();
  EXPECT_EQ(out[0].shape(), (Shape{3, 1}));
  EXPECT_EQ(out[0].to_vector(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(out[1].to_vector(), (std::vector<double>{7, 7}));
}

TEST(JsonFields, ReferencesToNodesAndOutputs) {
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": [2]},
      {"name": "y", "op": "square", "inputs": ["z"]}]})",
                 "t.json: node \"y\" (square): inputs[0]: unknown node \"z\"");
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": [2]},
      {"name": "y", "op": "square", "inputs": ["x:7"]}]})",
                 "inputs[0]: \"x\" has 1 output(s), not 8");
  expect_refused(R"({"adgraph": 1, "nodes": [], "fetch": ["nothing"]})",
                 "t.json: fetch[0]: unknown node \"nothing\"");
}

}  // namespace
}  // namespace adgraph
