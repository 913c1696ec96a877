// The loader's "stencil" field (driver/stencils.cc): five_point_values
// takes the grid and this rank, and a sparse op the 5-point matrix of the
// grid. On a 3 x 3 grid in one patch with center 4 and sides −1 (the
// Dirichlet Laplacian times h²), A·1 is 4 minus each point's number of
// neighbours: 2 at the corners, 1 on the edges, 0 in the middle; solving
// A u = A·1 gives 1 back.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/driver/load.h"

namespace adgraph {
namespace {

using testing::expect_refused;
using testing::load;

const char* kStencil = R"({"nx": 3, "ny": 3, "px": 1, "py": 1})";

std::string laplacian(const std::string& stencil = kStencil) {
  return R"({"adgraph": 1, "nodes": [
      {"name": "center", "op": "fill", "attrs": {"shape": [3, 3], "value": 4}},
      {"name": "side", "op": "fill", "attrs": {"shape": [3, 3], "value": -1}},
      {"name": "values", "op": "five_point_values",
       "inputs": ["side", "side", "side", "side", "center"],
       "stencil": )" +
         stencil + R"(},
      {"name": "ones", "op": "fill", "attrs": {"shape": [3, 3], "value": 1}},
      {"name": "y", "op": "sparse_matvec", "inputs": ["values", "ones"],
       "stencil": )" +
         stencil + R"(},
      {"name": "u", "op": "sparse_solve", "inputs": ["values", "y"],
       "attrs": {"ksp": "cg", "pc": "none", "rtol": 1e-14, "symmetric": true},
       "stencil": )" +
         stencil + R"(}],
    "fetch": ["y", "u"]})";
}

TEST(Stencils, TheFivePointMatrixOfTheGrid) {
  ASSERT_EQ(Communicator::world()->size(), 1);  // registered on one rank
  auto loaded = load(laplacian());
  const std::vector<Tensor> out = loaded->fetched();
  EXPECT_EQ(out[0].to_vector(),
            (std::vector<double>{2, 1, 2, 1, 0, 1, 2, 1, 2}));
  for (int64_t k = 0; k < 9; ++k) EXPECT_NEAR(out[1][k], 1.0, 1e-12) << k;
  // One matrix for the document's stencil, shared by its sparse nodes.
  EXPECT_EQ(loaded->doc.values.at("y").node().resource,
            loaded->doc.values.at("u").node().resource);
  // five_point_values got the grid and the rank as attributes.
  const auto& attrs = loaded->doc.values.at("values").node().attrs;
  EXPECT_EQ(attrs.at("nx"), 3);
  EXPECT_EQ(attrs.at("py"), 1);
  EXPECT_EQ(attrs.at("rank"), 0);
}

TEST(Stencils, RefusalsNameTheField) {
  const int size = Communicator::world()->size();
  expect_refused(laplacian(R"({"nx": 3, "ny": 3, "px": 1, "py": 0})"),
                 "node \"values\" (five_point_values): stencil.py: expected an "
                 "integer in [1, 2^20]");
  expect_refused(laplacian(R"({"nx": 3, "ny": 3, "px": 1})"),
                 "node \"values\": stencil.py: required field is missing");
  expect_refused(
      laplacian("[3, 3, 1, 1]"),
      "stencil: expected an object {\"nx\", \"ny\", \"px\", \"py\"}");
  expect_refused(laplacian(R"({"nx": 4, "ny": 4, "px": 2, "py": 3})"),
                 "stencil: px x py = 2 x 3 = 6 patches need as many ranks, but "
                 "there are " +
                     std::to_string(size));
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "fill", "attrs": {"shape": [3, 3], "value": 1}},
      {"name": "y", "op": "square", "inputs": ["x"],
       "stencil": {"nx": 3, "ny": 3, "px": 1, "py": 1}}]})",
                 "node \"y\" (square): stencil: only the sparse ops and "
                 "five_point_values take a stencil");
}

}  // namespace
}  // namespace adgraph
