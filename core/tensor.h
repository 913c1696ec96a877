// Tensor: a dense, row-major array of doubles with a shape.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
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

// Element-wise views of a tensor's elements (Tensor::array()).
using ArrayMap = Eigen::Map<Eigen::ArrayXd>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXd>;

// A dense row-major tensor of doubles. It owns its storage (an Eigen
// array), or borrows memory someone else owns (Tensor::borrow: a NumPy
// array fed or written in place). Copying copies the data into storage of
// the copy's own; moving is cheap and never copies, a borrowed view moving
// as a view. The whole 2 MiB pages inside a new storage are offered to the
// kernel for transparent huge pages (Linux): kernels that stream states of
// several MiB run faster on them (docs/PERFORMANCE.md, session 19).
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

  // A copy owns its storage, whether `other` owns or borrows.
  Tensor(const Tensor& other);
  // With as many elements as `other`, the values are written into this
  // tensor's storage, borrowed or owned (a borrowed view stays one);
  // otherwise the tensor gets storage of its own.
  Tensor& operator=(const Tensor& other);
  // The moved-from tensor is empty (no elements, no view). Inline, as the
  // executor moves tensors between slots at every node.
  Tensor(Tensor&& other) noexcept
      : shape_(std::move(other.shape_)),
        data_(std::move(other.data_)),
        borrowed_(std::exchange(other.borrowed_, nullptr)),
        borrowed_size_(std::exchange(other.borrowed_size_, 0)) {}
  // Swaps: `other` gets this tensor's storage (or view).
  Tensor& operator=(Tensor&& other) noexcept {
    swap(other);
    return *this;
  }
  // Trades everything with `other` (shape, storage or view), copying and
  // freeing nothing: what the executor does to move values between slots,
  // cheaper than std::swap's three moves.
  void swap(Tensor& other) noexcept {
    shape_.swap(other.shape_);
    data_.swap(other.data_);
    std::swap(borrowed_, other.borrowed_);
    std::swap(borrowed_size_, other.borrowed_size_);
  }
  ~Tensor() = default;

  static Tensor scalar(double value);
  static Tensor zeros(Shape shape) { return Tensor(std::move(shape), 0.0); }

  // A tensor of `shape` viewing num_elements(shape) doubles at `data`,
  // which the caller owns and keeps alive while the view (or any tensor
  // it is moved into) exists; nothing here frees it. Reads and writes go
  // there, no copy is made. A view given as a feed is only read; given to
  // Session::run_into it is written. `data` may be null only for an empty
  // shape. Throws ShapeError for a negative extent or more than
  // kMaxElements elements.
  static Tensor borrow(Shape shape, double* data);
  // True for a view made by borrow() (and what it was moved into).
  bool borrowed() const { return borrowed_ != nullptr; }

  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t size() const { return borrowed_ ? borrowed_size_ : data_.size(); }
  std::size_t bytes() const { return sizeof(double) * size(); }

  double* data() { return borrowed_ ? borrowed_ : data_.data(); }
  const double* data() const { return borrowed_ ? borrowed_ : data_.data(); }
  double& operator[](int64_t i) { return data()[i]; }
  double operator[](int64_t i) const { return data()[i]; }

  // The single element of a one-element tensor (throws ShapeError otherwise).
  double item() const;

  // Element-wise view of all elements (owned or borrowed). Reductions of
  // the view itself (array().sum()) start Eigen's packets at the first
  // aligned element, so the same values at another address may round
  // differently: sum_in_index_order() does not depend on the address.
  ArrayMap array() { return {data(), size()}; }
  ConstArrayMap array() const { return {data(), size()}; }

  // Row-major matrix view; rank-2 tensors only (ADGRAPH_CHECK).
  Eigen::Map<RowMajorMatrix> matrix();
  Eigen::Map<const RowMajorMatrix> matrix() const;

  // Values in row-major order.
  std::vector<double> to_vector() const;

  // A tensor of `shape` that adopts `storage` (whose size must match);
  // contents are left as they are. Used to recycle buffers.
  static Tensor adopt(Shape shape, Eigen::ArrayXd&& storage);
  // Gives up the storage (the tensor becomes empty, shape [0]). A borrowed
  // view has none to give: it is dropped and an empty array returned.
  Eigen::ArrayXd take_storage() &&;
  // Trades this tensor's owned storage with `other` (same size), the
  // message buffers' way of moving data without a copy. Owned tensors only
  // (ADGRAPH_CHECK): a borrowed view's memory is not the runtime's to give.
  void swap_storage(Eigen::ArrayXd& other);

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
  Eigen::ArrayXd data_;  // the elements, unless borrowed_ is set
  double* borrowed_ = nullptr;
  int64_t borrowed_size_ = 0;
};

// Σ x, adding in an order set by the indices alone, so that the same values
// give the same sum wherever they lie in memory (an owned buffer, or a
// borrowed NumPy array with another alignment). Rounds as x.sum() of an
// owned tensor does.
double sum_in_index_order(ConstArrayMap x);

// For `using std::swap; swap(a, b)`: Tensor::swap.
inline void swap(Tensor& a, Tensor& b) noexcept { a.swap(b); }

}  // namespace adgraph
