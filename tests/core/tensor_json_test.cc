// Tensors to and from JSON: nested lists of the tensor's shape both ways,
// numbers for scalars, clear refusals (ragged, not numbers, not finite,
// too deep), and the strings JSON needs for what it has no number for,
// counted.
#include "core/tensor_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"

namespace adgraph {
namespace {

using nlohmann::json;

// The message of the adgraph::Error that reading `value` throws.
std::string refusal(const json& value) {
  try {
    tensor_from_json(value);
  } catch (const Error& e) {
    return e.what();
  }
  return "no Error";
}
std::string refusal(const char* text) { return refusal(json::parse(text)); }

TEST(TensorJson, NestedListsRoundTrip) {
  const json j = json::parse("[[1, 2, 3], [4, 5, 6]]");
  Tensor t = tensor_from_json(j);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.to_vector(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(tensor_to_json(t), j);
  const Tensor scalar = tensor_from_json(7.0);
  EXPECT_EQ(scalar.shape(), Shape{});
  EXPECT_EQ(tensor_to_json(scalar), json(7.0));
  const Tensor cube = tensor_from_json(json::parse("[[[0.5], [-2]]]"));
  EXPECT_EQ(cube.shape(), (Shape{1, 2, 1}));
  EXPECT_EQ(tensor_to_json(cube), json::parse("[[[0.5], [-2]]]"));
  // An empty list is a tensor of no elements.
  EXPECT_EQ(tensor_from_json(json::array()).shape(), (Shape{0}));
}

TEST(TensorJson, RefusesWhatIsNotAListOfFiniteNumbers) {
  EXPECT_EQ(refusal("[[1, 2], [3]]"),
            "ragged nested list: expected 2 entries at depth 1");
  EXPECT_EQ(refusal("[[1, 2], 3]"),
            "ragged nested list: expected 2 entries at depth 1");
  EXPECT_EQ(refusal("[1, \"a\"]"), "expected a number, found string");
  EXPECT_EQ(refusal("[true]"), "expected a number, found boolean");
  const json infinite = std::numeric_limits<double>::infinity();
  EXPECT_EQ(refusal(infinite), "non-finite number");
  EXPECT_EQ(refusal(json::array({1.0, infinite})), "non-finite number");
  std::string deep(40, '[');
  deep.push_back('1');
  deep.append(40, ']');
  EXPECT_EQ(refusal(deep.c_str()), "lists nested deeper than 32 levels");
}

TEST(TensorJson, WritesWhatJsonHasNoNumberForAsCountedStrings) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Tensor t(Shape{2, 2});
  t[0] = 1.5, t[1] = kInf, t[2] = -kInf, t[3] = std::nan("");
  int64_t count = 0;
  EXPECT_EQ(tensor_to_json(t, &count),
            json::parse(R"([[1.5, "Infinity"], ["-Infinity", "NaN"]])"));
  EXPECT_EQ(count, 3);
  EXPECT_EQ(number_to_json(kInf, &count), json("Infinity"));
  EXPECT_EQ(count, 4);
  EXPECT_EQ(number_to_json(-0.25), json(-0.25));
  EXPECT_EQ(tensor_to_json(Tensor(Shape{}, std::nan(""))), json("NaN"));
}

}  // namespace
}  // namespace adgraph
