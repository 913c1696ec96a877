// The loader's "gradients" and "tangents" (driver/derivatives.cc) on
// L = Σ x³ + a·Σ x, whose derivatives are written out by hand: ∂L/∂x =
// 3x² + a, ∂L/∂a = Σ x, the tangent along v is Σ (3x² + a)·v, and the
// gradient of that tangent (a Hessian-vector product) is 6x ⊙ v.
#include <gtest/gtest.h>

#include "tests/driver/load.h"

namespace adgraph {
namespace {

using testing::expect_refused;
using testing::load;

// `derivatives` holds the "gradients" and "tangents" fields.
std::string cubic_document(const std::string& derivatives,
                           const std::string& fetch) {
  return R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": [3]},
      {"name": "a", "op": "placeholder", "shape": []},
      {"name": "v", "op": "constant", "attrs": {"value": [1, 0, 2]}},
      {"name": "two", "op": "fill", "attrs": {"shape": [], "value": 2}},
      {"name": "x3", "op": "pow_scalar", "inputs": ["x"],
       "attrs": {"exponent": 3}},
      {"name": "ax", "op": "mul", "inputs": ["x", "a"]},
      {"name": "s", "op": "add", "inputs": ["x3", "ax"]},
      {"name": "L", "op": "sum", "inputs": ["s"]}],)" +
         derivatives + R"(,
    "feeds": {"x": [1, -2, 0.5], "a": 4},
    "fetch": )" +
         fetch + "}";
}

TEST(Derivatives, GradientsOfOneAndOfAListOfVariables) {
  auto loaded = load(cubic_document(
      R"("gradients": {"g": {"of": "L", "wrt": "x"},
                       "both": {"of": "L", "wrt": ["x", "a"]}})",
      R"(["L", "g", "both:0", "both:1"])"));
  const std::vector<Tensor> out = loaded->fetched();
  // 1 − 8 + 0.125 + 4·(1 − 2 + 0.5) = −8.875.
  EXPECT_EQ(out[0].item(), -8.875);
  // 3x² + a = (7, 16, 4.75).
  EXPECT_EQ(out[1].to_vector(), (std::vector<double>{7, 16, 4.75}));
  EXPECT_EQ(out[2].to_vector(), out[1].to_vector());
  EXPECT_EQ(out[3].item(), -0.5);
}

TEST(Derivatives, ATangentAndTheGradientOfATangent) {
  // Listed gradient first: it reads the tangent, which is built before it.
  auto loaded = load(cubic_document(
      R"("gradients": {"hv": {"of": "dL", "wrt": "x"}},
         "tangents": {"dL": {"of": "L", "wrt": "x", "along": "v"}})",
      R"(["dL", "hv"])"));
  const std::vector<Tensor> out = loaded->fetched();
  // 7·1 + 16·0 + 4.75·2 = 16.5; 6x ⊙ v = (6, 0, 6).
  EXPECT_EQ(out[0].item(), 16.5);
  EXPECT_EQ(out[1].to_vector(), (std::vector<double>{6, 0, 6}));
}

TEST(Derivatives, TangentsAlongSeveralVariables) {
  // Along (v, 2) for (x, a): Σ (3x² + a)·v + 2·Σ x = 16.5 − 1.
  auto loaded = load(cubic_document(
      R"("tangents": {"dL": {"of": "L", "wrt": ["x", "a"],
                             "along": ["v", "two"]}})",
      R"(["dL"])"));
  EXPECT_EQ(loaded->fetched()[0].item(), 15.5);
}

TEST(Derivatives, RefusalsNameTheEntry) {
  expect_refused(
      cubic_document(R"("gradients": {"g": {"of": "L"}})", R"(["g"])"),
      "t.json: node \"g\": gradients.g.wrt: required field is missing");
  expect_refused(
      cubic_document(R"("gradients": {"x": {"of": "L", "wrt": "x"}})",
                     R"(["x"])"),
      "node \"x\": gradients.x: a node of this name exists already");
  expect_refused(
      cubic_document(R"("tangents": {"d": {"of": "L", "wrt": ["x", "a"],
                                           "along": ["v"]}})",
                     R"(["d"])"),
      "node \"d\": tangents.d.along: expected one tangent per \"wrt\" entry");
  expect_refused(cubic_document(R"("gradients": {"p": {"of": "q", "wrt": "x"}},
                        "tangents": {"q": {"of": "p", "wrt": "x",
                                           "along": "v"}})",
                                R"(["p"])"),
                 "gradients and tangents that read each other form a cycle");
}

}  // namespace
}  // namespace adgraph
