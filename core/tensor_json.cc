#include "core/tensor_json.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"

namespace adgraph {
namespace {

constexpr int kMaxNesting = 32;

void infer_shape(const nlohmann::json& value, Shape& shape, int depth) {
  if (depth > kMaxNesting) throw Error("lists nested deeper than 32 levels");
  if (!value.is_array()) return;
  shape.push_back(static_cast<int64_t>(value.size()));
  if (!value.empty()) infer_shape(value[0], shape, depth + 1);
}

void flatten(const nlohmann::json& value,
             const Shape& shape,
             std::size_t depth,
             std::vector<double>& out) {
  if (depth == shape.size()) {
    if (!value.is_number()) {
      throw Error("expected a number, found " + std::string(value.type_name()));
    }
    double v = value.get<double>();
    if (!std::isfinite(v)) throw Error("non-finite number");
    out.push_back(v);
    return;
  }
  if (!value.is_array() || static_cast<int64_t>(value.size()) != shape[depth]) {
    throw Error("ragged nested list: expected " + std::to_string(shape[depth]) +
                " entries at depth " + std::to_string(depth));
  }
  for (const auto& item : value) flatten(item, shape, depth + 1, out);
}

nlohmann::json nest(const Tensor& t,
                    std::size_t depth,
                    int64_t& offset,
                    int64_t* non_finite) {
  nlohmann::json out = nlohmann::json::array();
  for (int64_t i = 0; i < t.shape()[depth]; ++i) {
    if (depth + 1 == t.shape().size()) {
      out.push_back(number_to_json(t[offset++], non_finite));
    } else {
      out.push_back(nest(t, depth + 1, offset, non_finite));
    }
  }
  return out;
}

}  // namespace

Tensor tensor_from_json(const nlohmann::json& value) {
  Shape shape;
  infer_shape(value, shape, 0);
  std::vector<double> data;
  data.reserve(num_elements(shape));
  flatten(value, shape, 0, data);
  return Tensor(std::move(shape), std::move(data));
}

nlohmann::json number_to_json(double value, int64_t* non_finite) {
  if (std::isfinite(value)) return value;
  if (non_finite != nullptr) ++*non_finite;
  return std::isnan(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity";
}

nlohmann::json tensor_to_json(const Tensor& tensor, int64_t* non_finite) {
  if (tensor.rank() == 0) return number_to_json(tensor[0], non_finite);
  int64_t offset = 0;
  return nest(tensor, 0, offset, non_finite);
}

}  // namespace adgraph
