// The attributes point-to-point nodes share (blocking and nonblocking):
// peer ranks and the message tag. Internal to mpi_ops/.
#pragma once

#include <string>

#include "core/comm_context.h"
#include "core/op.h"
#include "mpi_ops/tags.h"

namespace adgraph::mpi_detail {

inline int attr(const Node& n, const char* name) {
  return static_cast<int>(n.attr_int(name));
}

// A required rank attribute (>= 0; checked against the node's communicator
// by check_peer).
inline AttrSpec peer_attr(const char* name, const char* doc) {
  return {name, AttrType::kInt, nlohmann::json(), doc, 0};
}

inline AttrSpec tag_attr() {
  return {"tag", AttrType::kInt, 0, "message tag", 0, kMaxUserTag};
}

// Fails the shape rule unless attribute `name` is a rank of the node's
// communicator.
inline void check_peer(const ShapeContext& c, const char* name) {
  const int size = c.comm()->size();
  if (c.attr_int(name) >= size) {
    c.fail(std::string("attribute \"") + name + "\"",
           "rank " + std::to_string(c.attr_int(name)) + " is not a rank of a " +
               std::to_string(size) + "-rank communicator");
  }
}

}  // namespace adgraph::mpi_detail
