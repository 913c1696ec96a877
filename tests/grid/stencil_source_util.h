// The kernel source the codegen and compile suites start from: one output
// of `text` on a 2-D grid periodic along axis 1, input 0 a field and
// input 1 a scalar.
#pragma once

#include <string>

#include "grid/stencil_codegen.h"

namespace adgraph::grid {

inline StencilSource source_of(const std::string& text) {
  StencilSource s;
  s.outputs = {parse(text)};
  s.summed = {false};
  s.init = {-1};
  s.ndim = 2;
  s.num_inputs = 2;
  s.scalar = {false, true};
  s.periodic = {false, true};
  return s;
}

}  // namespace adgraph::grid
