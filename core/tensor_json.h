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
// JSON has no numbers for infinities and NaN: they are written as the
// strings "Infinity", "-Infinity" and "NaN" (never as null), and counted
// into *non_finite when given.
nlohmann::json tensor_to_json(const Tensor& tensor,
                              int64_t* non_finite = nullptr);

// One number, written as tensor_to_json writes an entry.
nlohmann::json number_to_json(double value, int64_t* non_finite = nullptr);

}  // namespace adgraph
