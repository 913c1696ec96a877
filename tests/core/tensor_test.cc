#include "core/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

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

TEST(Tensor, CopiesOwnTheirStorage) {
  Tensor a({2, 2}, {1, 2, 3, 4});
  Tensor b = a;
  b[0] = 9;
  EXPECT_EQ(a.to_vector(), (std::vector<double>{1, 2, 3, 4}));
  Tensor c({3}, {7, 8, 9});
  c = a;  // a different size: fresh storage
  EXPECT_EQ(c.shape(), (Shape{2, 2}));
  EXPECT_EQ(c.to_vector(), a.to_vector());
  EXPECT_NE(c.data(), a.data());
  c = b;  // the same size: values only
  EXPECT_EQ(c.to_vector(), (std::vector<double>{9, 2, 3, 4}));
}

// The VmFlags line of the mapping in /proc/self/smaps that holds `address`
// ("" when none does).
std::string vm_flags_at(std::uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= address && address < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

TEST(Tensor, LargeStorageIsAdvisedForHugePages) {
  // 16 MiB: at least seven whole 2 MiB pages lie inside, wherever it starts.
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto inner_page = [&](const Tensor& t) {
    const auto begin = reinterpret_cast<std::uintptr_t>(t.data());
    return (begin + kHuge - 1) & ~(kHuge - 1);
  };
  Tensor big(Shape{int64_t{1} << 21}, 1.0);
  Tensor copy = big;
  Tensor assigned;
  assigned = big;
  for (const Tensor* t : {&big, &copy, &assigned}) {
    const std::string flags = vm_flags_at(inner_page(*t));
    ASSERT_NE(flags, "") << "no mapping holds the tensor's storage";
    EXPECT_NE(flags.find(" hg"), std::string::npos)
        << "the storage's mapping is not advised for huge pages: " << flags;
  }
  EXPECT_EQ(copy[(int64_t{1} << 21) - 1], 1.0);
  EXPECT_EQ(assigned[0], 1.0);
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
