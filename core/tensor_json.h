// Conversions between tensors and JSON values.
#pragma once

#include <nlohmann/json.hpp>

#include "core/tensor.h"

namespace adgraph {

// A number gives a scalar; a (nested) list of numbers gives a tensor of the
// nesting's shape. Throws adgraph::Error (detail only; callers add the file,
// node and field) for ragged lists, non-numbers and non-finite values.
Tensor tensor_from_json(const nlohmann::json& value);

// A scalar gives a number, other tensors nested lists in row-major order.
nlohmann::json tensor_to_json(const Tensor& tensor);

}  // namespace adgraph
