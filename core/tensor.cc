#include "core/tensor.h"

#include <utility>

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

Tensor::Tensor() : data_(1) { data_[0] = 0.0; }

Tensor::Tensor(Shape shape) : shape_(std::move(shape)) {
  for (int64_t d : shape_) {
    if (d < 0)
      throw ShapeError("negative extent in shape " + shape_string(shape_));
  }
  data_.resize(num_elements(shape_));
}

Tensor::Tensor(Shape shape, double value) : Tensor(std::move(shape)) {
  data_.setConstant(value);
}

Tensor::Tensor(Shape shape, std::vector<double> values)
    : Tensor(std::move(shape)) {
  if (static_cast<int64_t>(values.size()) != data_.size()) {
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
  shape_.assign(1, 0);  // [0], in the vector's own memory when it has some
  return out;
}

Tensor Tensor::scalar(double value) { return Tensor(Shape{}, value); }

double Tensor::item() const {
  if (data_.size() != 1) {
    throw ShapeError("item() needs one element, tensor has shape " +
                     shape_string(shape_));
  }
  return data_[0];
}

Eigen::Map<RowMajorMatrix> Tensor::matrix() {
  ADGRAPH_CHECK(rank() == 2) << "matrix() of shape " << shape_string(shape_);
  return {data_.data(), shape_[0], shape_[1]};
}

Eigen::Map<const RowMajorMatrix> Tensor::matrix() const {
  ADGRAPH_CHECK(rank() == 2) << "matrix() of shape " << shape_string(shape_);
  return {data_.data(), shape_[0], shape_[1]};
}

std::vector<double> Tensor::to_vector() const {
  return {data_.data(), data_.data() + data_.size()};
}

Tensor Tensor::reshaped(Shape shape) const& {
  Tensor copy = *this;
  return std::move(copy).reshaped(std::move(shape));
}

void Tensor::set_shape(const Shape& shape) {
  ADGRAPH_CHECK(num_elements(shape) == data_.size())
      << shape_string(shape_) << " -> " << shape_string(shape);
  shape_ = shape;
}

Tensor Tensor::reshaped(Shape shape) && {
  ADGRAPH_CHECK(num_elements(shape) == data_.size())
      << shape_string(shape_) << " -> " << shape_string(shape);
  shape_ = std::move(shape);
  return std::move(*this);
}

}  // namespace adgraph
