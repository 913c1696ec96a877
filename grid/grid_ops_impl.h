// What the grid's ops share (internal to grid/): the three attributes that
// name a decomposition, read and checked once per node.
#pragma once

#include <string>
#include <vector>

#include "core/comm_context.h"
#include "core/op.h"
#include "grid/grid.h"

namespace adgraph::grid::detail {

inline std::vector<AttrSpec> grid_attr_specs() {
  return {{"grid_shape",
           AttrType::kInts,
           nlohmann::json(),
           "global extents per axis"},
          {"procs", AttrType::kInts, nlohmann::json(), "processes per axis"},
          {"periodic",
           AttrType::kInts,
           nlohmann::json::array(),
           "1 for a periodic axis, 0 otherwise (empty: none)"}};
}

// The node's layout, checked against its communicator; fails naming the
// attribute. An empty "periodic" means no periodic axis.
inline GridLayout checked_layout(const ShapeContext& c) {
  nlohmann::json attrs = c.node().attrs;
  if (attrs["periodic"].empty())
    attrs["periodic"] = std::vector<int64_t>(attrs["grid_shape"].size(), 0);
  const GridLayout g = GridLayout::from_attrs(attrs);
  const std::string why = g.invalid_reason();
  if (!why.empty()) {
    const std::string field = why.substr(0, why.find(':'));
    c.fail("attribute \"" +
               (field == "shape" ? std::string("grid_shape") : field) + "\"",
           why.substr(why.find(':') + 2));
  }
  const int size = c.comm() != nullptr ? c.comm()->size() : 1;
  if (g.num_ranks() != size) {
    c.fail("attribute \"procs\"",
           "a process grid of " + std::to_string(g.num_ranks()) +
               " ranks on a communicator of " + std::to_string(size));
  }
  return g;
}

inline GridLayout layout_of(const Node& n) {
  nlohmann::json attrs = n.attrs;
  if (attrs["periodic"].empty())
    attrs["periodic"] = std::vector<int64_t>(attrs["grid_shape"].size(), 0);
  return GridLayout::from_attrs(attrs);
}

// Fails unless `shape` is [batch…, patch…] for this rank's patch.
inline void check_field(const ShapeContext& c,
                        const GridLayout& g,
                        const Shape& shape,
                        const std::string& field) {
  const Shape patch = g.local_shape(c.comm() != nullptr ? c.comm()->rank() : 0);
  const int nd = g.ndim();
  if (static_cast<int>(shape.size()) < nd ||
      Shape(shape.end() - nd, shape.end()) != patch) {
    c.fail(field,
           "shape " + shape_string(shape) +
               " does not end in this rank's patch " + shape_string(patch) +
               " of the grid " + shape_string(g.shape));
  }
}

}  // namespace adgraph::grid::detail
