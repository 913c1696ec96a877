// The loader's top level (driver/loader.cc): the format version, the four
// ways to write a feed, fetches of a node's k-th output, and the
// "optimize" section as the Document hands it to optim::minimize, with
// the sides of a bound left open; refusals name the file and the field.
#include <gtest/gtest.h>

#include <limits>

#include "tests/driver/load.h"

namespace adgraph {
namespace {

using testing::expect_refused;
using testing::load;

TEST(Loader, FeedsAsANumberAFlatListNestedListsOrAFill) {
  auto loaded = load(R"({"adgraph": 1, "nodes": [
      {"name": "a", "op": "placeholder", "shape": [2, 2]},
      {"name": "b", "op": "placeholder", "shape": [2, 2]},
      {"name": "c", "op": "placeholder", "shape": [2, 2]},
      {"name": "d", "op": "placeholder", "shape": []}],
    "feeds": {"a": [1, 2, 3, 4], "b": [[5, 6], [7, 8]],
              "c": {"fill": -1.5, "shape": [2, 2]}, "d": 0.25},
    "fetch": ["d", "c", "b", "a"]})");
  EXPECT_EQ(loaded->doc.fetch, (std::vector<std::string>{"d", "c", "b", "a"}));
  const std::vector<Tensor> out = loaded->fetched();
  EXPECT_EQ(out[0].item(), 0.25);
  EXPECT_EQ(out[1].to_vector(), (std::vector<double>(4, -1.5)));
  EXPECT_EQ(out[2].to_vector(), (std::vector<double>{5, 6, 7, 8}));
  EXPECT_EQ(out[3].to_vector(), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(out[3].shape(), (Shape{2, 2}));
}

TEST(Loader, FetchesAnOutputByIndex) {
  // patch_edges of [[1, 2], [3, 4]]: left (1, 3), right (2, 4), up (1, 2),
  // down (3, 4).
  auto loaded = load(R"({"adgraph": 1, "nodes": [
      {"name": "u", "op": "constant", "attrs": {"value": [[1, 2], [3, 4]]}},
      {"name": "e", "op": "patch_edges", "inputs": ["u"]}],
    "fetch": ["e:1", "e:3", "e"]})");
  const std::vector<Tensor> out = loaded->fetched();
  EXPECT_EQ(out[0].to_vector(), (std::vector<double>{2, 4}));
  EXPECT_EQ(out[1].to_vector(), (std::vector<double>{3, 4}));
  EXPECT_EQ(out[2].to_vector(), (std::vector<double>{1, 3}));  // "e" is "e:0"
}

TEST(Loader, TheOptimizeSectionAsMinimizeTakesIt) {
  auto loaded = load(R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": [3]},
      {"name": "y", "op": "placeholder", "shape": []},
      {"name": "L", "op": "sum", "inputs": ["x"]}],
    "optimize": {"objective": "L", "variables": {"x": [1, 2, 3], "y": 5},
                 "bounds": {"x": {"lower": 0, "upper": [4, 5, 6]}},
                 "layout": "sharded",
                 "options": {"history": 7, "max_iterations": 12,
                             "tolerance_gradient": 1e-9}}})");
  const driver::Document& doc = loaded->doc;
  ASSERT_TRUE(doc.has_optimize);
  const driver::Optimize& o = doc.optimize;
  EXPECT_EQ(o.objective, doc.values.at("L"));
  EXPECT_EQ(o.names, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(o.variables,
            (std::vector<Value>{doc.values.at("x"), doc.values.at("y")}));
  EXPECT_EQ(o.start[0].to_vector(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(o.start[1].item(), 5.0);
  EXPECT_TRUE(o.bounded);  // bounds make the method L-BFGS-B
  EXPECT_EQ(o.layout, optim::Layout::kSharded);
  EXPECT_EQ(o.options.history, 7);
  EXPECT_EQ(o.options.max_iterations, 12);
  EXPECT_EQ(o.options.tolerance_gradient, 1e-9);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(o.bounds.lower[0].to_vector(), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(o.bounds.upper[0].to_vector(), (std::vector<double>{4, 5, 6}));
  // y is left out: open on both sides.
  EXPECT_EQ(o.bounds.lower[1].item(), -inf);
  EXPECT_EQ(o.bounds.upper[1].item(), inf);
}

TEST(Loader, RefusalsNameTheFileAndTheField) {
  expect_refused(R"({"nodes": []})",
                 "t.json: adgraph: required field is "
                 "missing");
  expect_refused(R"({"adgraph": 2, "nodes": []})",
                 "t.json: adgraph: unsupported format version 2 (this build "
                 "reads version 1 only)");
  expect_refused(R"({"adgraph": 1, "nodes": [], "fetches": []})",
                 "t.json: fetches: unknown field (allowed: adgraph, nodes, "
                 "gradients, tangents, feeds, fetch, optimize, communicators, "
                 "doc)");
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": [2]}],
    "feeds": {"x": [1, 2, 3]}})",
                 "t.json: node \"x\": feeds.x: 3 value(s) for shape [2]");
  expect_refused(R"({"adgraph": 1, "nodes": [], "fetch": ["nothing"]})",
                 "t.json: fetch[0]: unknown node \"nothing\"");
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": []}],
    "optimize": {"objective": "x", "variables": {"x": 1},
                 "method": "newton"}})",
                 "optimize.method: unknown method \"newton\" (known: lbfgs, "
                 "lbfgsb)");
}

}  // namespace
}  // namespace adgraph
