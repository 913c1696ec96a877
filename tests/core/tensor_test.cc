#include "core/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

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

TEST(Tensor, BorrowedViewReadsAndWritesTheCallersMemory) {
  std::vector<double> memory = {1, 2, 3, 4, 5, 6};
  Tensor view = Tensor::borrow({2, 3}, memory.data());
  EXPECT_TRUE(view.borrowed());
  EXPECT_EQ(view.data(), memory.data());
  EXPECT_EQ(view.size(), 6);
  EXPECT_EQ(view.matrix()(1, 2), 6.0);
  view.array() *= 2.0;
  EXPECT_EQ(memory, (std::vector<double>{2, 4, 6, 8, 10, 12}));
  // Copying values of the same size in writes through the view.
  const Tensor values({2, 3}, {6, 5, 4, 3, 2, 1});
  view = values;
  EXPECT_TRUE(view.borrowed());
  EXPECT_EQ(view.data(), memory.data());
  EXPECT_EQ(memory, (std::vector<double>{6, 5, 4, 3, 2, 1}));
}

TEST(Tensor, CopiesOfAViewOwnTheirStorageAndMovesStayViews) {
  std::vector<double> memory = {1, 2, 3};
  Tensor view = Tensor::borrow({3}, memory.data());
  Tensor copy = view;
  EXPECT_FALSE(copy.borrowed());
  EXPECT_NE(copy.data(), memory.data());
  copy[0] = 9;
  EXPECT_EQ(memory[0], 1.0);
  Tensor moved = std::move(view);
  EXPECT_TRUE(moved.borrowed());
  EXPECT_EQ(moved.data(), memory.data());
  EXPECT_FALSE(view.borrowed());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(view.size(), 0);      // NOLINT(bugprone-use-after-move)
  // Assigning another size gives the tensor storage of its own; the
  // caller's memory is left as it was.
  moved = Tensor({2}, {7, 8});
  EXPECT_FALSE(moved.borrowed());
  EXPECT_EQ(memory, (std::vector<double>{1, 2, 3}));
  // Giving up storage drops a view without touching its memory.
  Tensor again = Tensor::borrow({3}, memory.data());
  EXPECT_EQ(std::move(again).take_storage().size(), 0);
  EXPECT_EQ(memory, (std::vector<double>{1, 2, 3}));
}

TEST(Tensor, BorrowRefusesBadShapes) {
  double x = 0;
  EXPECT_THROW(Tensor::borrow({-1}, &x), ShapeError);
  EXPECT_THROW(Tensor::borrow({int64_t{1} << 31}, &x), ShapeError);
  EXPECT_EQ(Tensor::borrow({0}, nullptr).size(), 0);
}

TEST(Tensor, IndexOrderSumDoesNotDependOnTheAddress) {
  // The same values at every offset from a 64-byte boundary: Eigen's own
  // sum of a mapped array starts its packets at the first aligned element,
  // which moves with the offset; sum_in_index_order must not.
  constexpr int64_t kSize = 1001;
  Tensor owned(Shape{kSize});
  for (int64_t i = 0; i < kSize; ++i)
    owned[i] = std::ldexp(1.0 + 0.37 * i, static_cast<int>(i % 60) - 30) *
               (i % 3 == 0 ? -1.0 : 1.0);
  const double reference = owned.array().sum();  // owned: 64-byte aligned
  EXPECT_EQ(sum_in_index_order(std::as_const(owned).array()), reference);
  std::vector<double> memory(kSize + 8);
  for (int offset = 0; offset < 8; ++offset) {
    std::copy(owned.data(), owned.data() + kSize, memory.data() + offset);
    Tensor view = Tensor::borrow({kSize}, memory.data() + offset);
    EXPECT_EQ(sum_in_index_order(std::as_const(view).array()), reference)
        << offset;
  }
}

}  // namespace
}  // namespace adgraph
