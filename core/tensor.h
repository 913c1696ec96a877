// Tensor: a dense, row-major array of doubles with a shape.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace adgraph {

// Extents of a tensor, outermost first. `{}` is a scalar (one element).
using Shape = std::vector<int64_t>;

// Number of elements of `shape` (1 for a scalar).
int64_t num_elements(const Shape& shape);

// The most elements any one tensor of a graph may have (2^30, 8 GiB of
// doubles). Shape rules, attributes and feeds are checked against it, so a
// typo'd extent is an error naming the node rather than an allocation that
// fails or swamps the machine.
constexpr int64_t kMaxElements = int64_t{1} << 30;

// num_elements(shape), or -1 when it exceeds kMaxElements (computed without
// overflow, whatever the extents). Negative extents count as 0 elements;
// callers reject them separately.
int64_t checked_num_elements(const Shape& shape);

// "[3, 2]" (and "[]" for a scalar), as used in every error message.
std::string shape_string(const Shape& shape);

// Row-major matrix type used for views of rank-2 tensors.
using RowMajorMatrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// A dense row-major tensor of doubles. Owns its storage (an Eigen array);
// copying copies the data, moving is cheap. The whole 2 MiB pages inside a
// new storage are offered to the kernel for transparent huge pages (Linux):
// kernels that stream states of several MiB run faster on them
// (docs/PERFORMANCE.md, session 19).
class Tensor final {
 public:
  // A scalar holding 0.
  Tensor();
  // A tensor of `shape` whose elements are left uninitialised.
  explicit Tensor(Shape shape);
  // A tensor of `shape` with every element equal to `value`.
  Tensor(Shape shape, double value);
  // A tensor of `shape` holding `values` in row-major order. Throws
  // adgraph::ShapeError when the number of values does not match.
  Tensor(Shape shape, std::vector<double> values);
  // A 1-D tensor holding `values`: Tensor({1.0, 2.0}) has shape [2].
  // Note that Tensor({3}) is therefore the 1-D tensor [3.0]; write
  // Tensor(Shape{3}) for an uninitialised tensor of shape [3].
  Tensor(std::initializer_list<double> values);

  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  ~Tensor() = default;

  static Tensor scalar(double value);
  static Tensor zeros(Shape shape) { return Tensor(std::move(shape), 0.0); }

  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t size() const { return data_.size(); }
  std::size_t bytes() const { return sizeof(double) * data_.size(); }

  double* data() { return data_.data(); }
  const double* data() const { return data_.data(); }
  double& operator[](int64_t i) { return data_[i]; }
  double operator[](int64_t i) const { return data_[i]; }

  // The single element of a one-element tensor (throws ShapeError otherwise).
  double item() const;

  // Element-wise view of all elements.
  Eigen::ArrayXd& array() { return data_; }
  const Eigen::ArrayXd& array() const { return data_; }

  // Row-major matrix view; rank-2 tensors only (ADGRAPH_CHECK).
  Eigen::Map<RowMajorMatrix> matrix();
  Eigen::Map<const RowMajorMatrix> matrix() const;

  // Values in row-major order.
  std::vector<double> to_vector() const;

  // A tensor of `shape` that adopts `storage` (whose size must match);
  // contents are left as they are. Used to recycle buffers.
  static Tensor adopt(Shape shape, Eigen::ArrayXd&& storage);
  // Gives up the storage (the tensor becomes empty, shape [0]).
  Eigen::ArrayXd take_storage() &&;

  // Same data under a new shape with the same number of elements.
  Tensor reshaped(Shape shape) const&;
  Tensor reshaped(Shape shape) &&;
  // Gives this tensor's data `shape` (same number of elements), in place.
  void set_shape(const Shape& shape);

 private:
  struct Empty {};
  explicit Tensor(Empty) {}

  // Resizes the storage to `n` elements (contents undefined after a
  // change of size) and advises huge pages for a new allocation.
  void allocate(int64_t n);

  Shape shape_;
  Eigen::ArrayXd data_;
};

}  // namespace adgraph
