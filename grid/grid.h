// A 1-, 2- or 3-D global grid decomposed into patches over a process grid.
//
//   auto world = Communicator::world();
//   grid::Grid g({120, 120}, {2, 2}, {false, false}, world);
//   g.local_shape();   // this rank's patch, e.g. [60, 60]
//   g.offset();        // its first global index, e.g. [0, 60]
//   g.owner({70, 10}); // the rank owning global point (70, 10): 2
//
// Layout. Rank r has process coordinates c = unravel(r, procs) in row-major
// order (the last axis fastest, as data_exchange's rank = I·M + J). Axis a
// of extent N over p processes gives process c the points
// [c·q + min(c, N mod p), …) with q = N div p, one more for the first
// N mod p processes: patches differ by at most one point. Each axis is
// periodic or not; at a non-periodic edge a patch has no neighbour there.
//
// Tensors on a grid. A field on the grid is a tensor of shape
// [batch…, local_shape()…] on every rank: leading batch axes (shots,
// components) ride along undecomposed, the last ndim() axes are the patch.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace adgraph {
class Communicator;
}

namespace adgraph::grid {

// The decomposition alone, without a communicator: what a node's
// attributes hold ("grid_shape", "procs", "periodic") and what shape rules
// and kernels compute with. Plain data; every function is local.
struct GridLayout {
  Shape shape;                 // global extents, 1 to 3 axes, each >= 1
  std::vector<int> procs;      // processes per axis, each >= 1
  std::vector<bool> periodic;  // per axis

  int ndim() const { return static_cast<int>(shape.size()); }
  int num_ranks() const;
  // Empty when valid, else why not (naming the field).
  std::string invalid_reason() const;

  std::vector<int> coords_of(int rank) const;
  // -1 when coords fall off a non-periodic edge; periodic axes wrap.
  int rank_at(std::vector<int> coords) const;
  // Patch extent and first global index of process coordinate c on axis a.
  int64_t extent(int axis, int c) const;
  int64_t start(int axis, int c) const;
  Shape local_shape(int rank) const;
  Shape offset(int rank) const;
  // The smallest patch extent on each axis.
  Shape min_extent() const;
  // The rank owning a global index (each entry in [0, shape[a])).
  int owner(const Shape& index) const;
  // The neighbour of `rank` one patch away in direction `dir` (each entry
  // -1, 0 or 1); -1 when there is none (non-periodic edge).
  int neighbour(int rank, const std::vector<int>& dir) const;

  // The patch of `rank` of a global array [batch…, shape…] that every
  // rank holds (no message: what scatter() does from a root). Throws
  // ShapeError when `global` does not end in the grid's shape.
  Tensor patch(const Tensor& global, int rank) const;

  // {"grid_shape": [...], "procs": [...], "periodic": [0/1...]}.
  nlohmann::json attrs() const;
  // Reads the three attributes back (as written by attrs()).
  static GridLayout from_attrs(const nlohmann::json& attrs);
};

// A layout bound to a communicator of layout.num_ranks() ranks.
class Grid final {
 public:
  // Throws OptionsError naming the argument when the layout is invalid
  // (no axes or more than 3, an extent or process count < 1, a process
  // count above the extent, sizes that disagree) or when procs' product is
  // not comm's size. `periodic` may be empty (no axis periodic). comm must
  // not be null.
  Grid(Shape shape,
       std::vector<int> procs,
       std::vector<bool> periodic,
       std::shared_ptr<Communicator> comm);

  const GridLayout& layout() const { return layout_; }
  const std::shared_ptr<Communicator>& comm() const { return comm_; }
  int ndim() const { return layout_.ndim(); }
  const Shape& shape() const { return layout_.shape; }
  int rank() const;

  // This rank's patch extents and first global index.
  Shape local_shape() const;
  Shape offset() const;
  // The rank that owns a global index; throws OptionsError out of range.
  int owner(const Shape& index) const;

  // Collective. `global` is a [batch…, shape()…] tensor on `root` (ignored
  // elsewhere, where only its shape must be [batch…, shape()…] too, or
  // empty: the root's shape is broadcast); every rank gets its patch
  // [batch…, local_shape()…].
  Tensor scatter(const Tensor& global, int root = 0) const;
  // Collective. Each rank gives its patch [batch…, local_shape()…] (the
  // same batch everywhere); `root` gets the global tensor, the other ranks
  // an empty one (shape [0]).
  Tensor gather(const Tensor& local, int root = 0) const;

 private:
  GridLayout layout_;
  std::shared_ptr<Communicator> comm_;
};

}  // namespace adgraph::grid
