// What the two files of collective ops share: the `root` attribute (its
// reading and its check against the communicator) and the OpDef of a
// collective over the graph's communicator. mpi_ops/collectives.cc (sum,
// reduce, broadcast, gather, scatter) and mpi_ops/exact_totals.cc
// (mpi_total, mpi_dot, mpi_total_rows) both build their ops with it, so
// it is a header of its own rather than part of either. Internal to
// mpi_ops/.
#pragma once

#include <string>
#include <utility>

#include "core/op.h"
#include "mpi_ops/communicator.h"

namespace adgraph::detail {

inline int root_of(const Node& n) {
  return static_cast<int>(n.attr_int("root"));
}

// Checks `root` against the communicator size.
inline void check_root(const ShapeContext& c) {
  const int size = c.comm()->size();
  if (c.attr_int("root") >= size) {
    c.fail("attribute \"root\"",
           "root " + std::to_string(c.attr_int("root")) +
               " is not a rank of a " + std::to_string(size) +
               "-rank communicator");
  }
}

// The OpDef of a collective over the graph's communicator, with a `root`
// attribute when `with_root`.
inline OpDef collective(std::string name, std::string doc, bool with_root) {
  OpDef def = every_rank_op(std::move(name), std::move(doc));
  def.inputs = {"x"};
  if (with_root) def.attrs = {{"root", AttrType::kInt, 0, "root rank", 0}};
  return def;
}

inline Value with_root(const char* op, Value x, int root) {
  return x.graph().add_node(op, {x}, {{"root", root}});
}

}  // namespace adgraph::detail
