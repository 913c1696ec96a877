#include "core/tensor.h"

#include <cstdint>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/check.h"
#include "core/error.h"

namespace adgraph {

int64_t num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t checked_num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0) return 0;
    if (n > kMaxElements / d) return -1;
    n *= d;
  }
  return n;
}

std::string shape_string(const Shape& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

namespace {

// Marks the whole 2 MiB pages inside [data, data + bytes) for transparent
// huge pages. Pages the allocator already touched (a recycled heap block,
// the page holding its header) stay small; a fresh mapping's others are
// faulted in whole when THP is "madvise" or "always". Advice only: a
// kernel without THP refuses it and nothing changes.
void advise_huge_pages(double* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + bytes) & ~(kHuge - 1);
  if (last > first) {
    madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace

void Tensor::allocate(int64_t n) {
  if (size() == n) return;
  borrowed_ = nullptr;
  borrowed_size_ = 0;
  data_.resize(n);
  advise_huge_pages(data_.data(), bytes());
}

Tensor Tensor::borrow(Shape shape, double* data) {
  const int64_t n = checked_num_elements(shape);
  for (int64_t d : shape) {
    if (d < 0)
      throw ShapeError("negative extent in shape " + shape_string(shape));
  }
  if (n < 0) {
    throw ShapeError("shape " + shape_string(shape) + " has more than " +
                     std::to_string(kMaxElements) + " elements");
  }
  ADGRAPH_CHECK(data != nullptr || n == 0) << "borrow of null data";
  Tensor t{Empty{}};
  t.shape_ = std::move(shape);
  if (n > 0) {
    t.borrowed_ = data;
    t.borrowed_size_ = n;
  }
  return t;
}

Tensor::Tensor() : data_(1) { data_[0] = 0.0; }

Tensor::Tensor(Shape shape) : shape_(std::move(shape)) {
  for (int64_t d : shape_) {
    if (d < 0)
      throw ShapeError("negative extent in shape " + shape_string(shape_));
  }
  allocate(num_elements(shape_));
}

Tensor::Tensor(const Tensor& other) : shape_(other.shape_) {
  allocate(other.size());
  array() = other.array();
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this == &other) return *this;
  Shape shape = other.shape_;  // what may throw comes first
  allocate(other.size());
  array() = other.array();
  shape_ = std::move(shape);
  return *this;
}

Tensor::Tensor(Shape shape, double value) : Tensor(std::move(shape)) {
  data_.setConstant(value);
}

Tensor::Tensor(Shape shape, std::vector<double> values)
    : Tensor(std::move(shape)) {
  if (static_cast<int64_t>(values.size()) != size()) {
    throw ShapeError(std::to_string(values.size()) +
                     " values do not fill shape " + shape_string(shape_));
  }
  data_ = Eigen::Map<const Eigen::ArrayXd>(values.data(), data_.size());
}

Tensor::Tensor(std::initializer_list<double> values)
    : Tensor(Shape{static_cast<int64_t>(values.size())},
             std::vector<double>(values)) {}

Tensor Tensor::adopt(Shape shape, Eigen::ArrayXd&& storage) {
  ADGRAPH_CHECK(num_elements(shape) == storage.size())
      << shape_string(shape) << " with " << storage.size() << " values";
  Tensor t{Empty{}};
  t.shape_ = std::move(shape);
  t.data_ = std::move(storage);
  return t;
}

Eigen::ArrayXd Tensor::take_storage() && {
  Eigen::ArrayXd out = std::move(data_);
  data_ = Eigen::ArrayXd();
  borrowed_ = nullptr;
  borrowed_size_ = 0;
  shape_.assign(1, 0);  // [0], in the vector's own memory when it has some
  return out;
}

void Tensor::swap_storage(Eigen::ArrayXd& other) {
  ADGRAPH_CHECK(!borrowed() && other.size() == data_.size())
      << "swap_storage of " << (borrowed() ? "a borrowed view" : "a tensor")
      << " of " << size() << " values with " << other.size();
  data_.swap(other);
}

double sum_in_index_order(ConstArrayMap x) {
  // A product with 1 is exact, and as an expression it has no address for
  // Eigen to align its packets to: they start at element 0, as they do for
  // an owned (64-byte aligned) array, wherever x lies.
  return (x * 1.0).sum();
}

Tensor Tensor::scalar(double value) { return Tensor(Shape{}, value); }

double Tensor::item() const {
  if (size() != 1) {
    throw ShapeError("item() needs one element, tensor has shape " +
                     shape_string(shape_));
  }
  return data()[0];
}

Eigen::Map<RowMajorMatrix> Tensor::matrix() {
  ADGRAPH_CHECK(rank() == 2) << "matrix() of shape " << shape_string(shape_);
  return {data(), shape_[0], shape_[1]};
}

Eigen::Map<const RowMajorMatrix> Tensor::matrix() const {
  ADGRAPH_CHECK(rank() == 2) << "matrix() of shape " << shape_string(shape_);
  return {data(), shape_[0], shape_[1]};
}

std::vector<double> Tensor::to_vector() const {
  return {data(), data() + size()};
}

Tensor Tensor::reshaped(Shape shape) const& {
  Tensor copy = *this;
  return std::move(copy).reshaped(std::move(shape));
}

void Tensor::set_shape(const Shape& shape) {
  ADGRAPH_CHECK(num_elements(shape) == size())
      << shape_string(shape_) << " -> " << shape_string(shape);
  shape_ = shape;
}

Tensor Tensor::reshaped(Shape shape) && {
  ADGRAPH_CHECK(num_elements(shape) == size())
      << shape_string(shape_) << " -> " << shape_string(shape);
  shape_ = std::move(shape);
  return std::move(*this);
}

}  // namespace adgraph
