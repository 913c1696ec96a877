#include "core/tensor.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/tensor_json.h"

namespace adgraph {
namespace {

TEST(Tensor, ScalarHasEmptyShapeAndOneElement) {
  Tensor s = Tensor::scalar(2.5);
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.size(), 1);
  EXPECT_EQ(s.item(), 2.5);
  EXPECT_EQ(Tensor().item(), 0.0);
}

TEST(Tensor, RowMajorMatrixView) {
  Tensor t({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(t.matrix()(0, 2), 3.0);
  EXPECT_EQ(t.matrix()(1, 0), 4.0);
  EXPECT_EQ(t.bytes(), 6 * sizeof(double));
}

TEST(Tensor, WrongValueCountThrowsShapeError) {
  EXPECT_THROW(Tensor({2, 2}, std::vector<double>{1, 2, 3}), ShapeError);
  EXPECT_THROW(Tensor({2}, {1.0, 2.0}).item(), ShapeError);
}

TEST(Tensor, ShapeString) {
  EXPECT_EQ(shape_string({}), "[]");
  EXPECT_EQ(shape_string({3, 2}), "[3, 2]");
}

TEST(TensorJson, NestedListsRoundTrip) {
  auto j = nlohmann::json::parse("[[1, 2, 3], [4, 5, 6]]");
  Tensor t = tensor_from_json(j);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t[4], 5.0);
  EXPECT_EQ(tensor_to_json(t), j);
  EXPECT_EQ(tensor_to_json(tensor_from_json(7.0)), nlohmann::json(7.0));
}

TEST(TensorJson, RaggedAndNonNumericListsThrow) {
  EXPECT_THROW(tensor_from_json(nlohmann::json::parse("[[1, 2], [3]]")), Error);
  EXPECT_THROW(tensor_from_json(nlohmann::json::parse("[1, \"a\"]")), Error);
}

}  // namespace
}  // namespace adgraph
