// Dense linear algebra on rank-2 tensors (Eigen).
#pragma once

#include "core/graph.h"

namespace adgraph {

// [m, k] × [k, n] → [m, n].
Value matmul(Value a, Value b);
// [m, n] × [n] → [m].
Value matvec(Value a, Value x);
// [m, n] → [n, m].
Value transpose(Value a);

void register_linalg_ops();

}  // namespace adgraph
