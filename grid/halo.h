// The halo op: one node pads a grid field with ghost layers from its face,
// edge and corner neighbours.
//
//   grid::Grid g({64, 64}, {2, 2}, {false, true}, world);
//   Value uh = grid::halo(g, u, {1, 1});   // [..., n0 + 2, n1 + 2]
//
// Cotangent convention: the loss is the sum of the per-rank losses. The
// adjoint is the reverse exchange: each ghost's cotangent goes back to the
// rank (or, at a non-periodic edge, to the layer a boundary rule copied)
// it came from and is added there, in a fixed order (grid/exchange.h).
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"
#include "grid/grid.h"

namespace adgraph::grid {

struct HaloOptions {
  // Fill edge and corner ghosts too (a stencil that reads diagonal
  // neighbours needs them). Default true; false leaves them zero and saves
  // no messages but ndim - 1 rounds of waiting.
  bool corners = true;
  // What ghosts beyond a non-periodic edge of the domain hold: "zero"
  // (default), "mirror" (u[-k] = u[k], numpy.pad's "reflect") or "copy"
  // (u[-k] = u[0], Neumann; numpy.pad's "edge"). Periodic axes wrap.
  std::string boundary = "zero";
};

// x: a field [batch…, local_shape()…] of `grid`. width: ghost layers per
// spatial axis (>= 0; one entry for every axis, or one for all). Returns
// [batch…, local_shape()[a] + 2·width[a]…]. Collective over the grid's
// communicator (a communication node on it). Throws ShapeError naming the
// node when x's shape does not end in the patch's, when a patch is
// narrower than the halo, or for an unknown boundary rule.
Value halo(const Grid& grid,
           Value x,
           std::vector<int64_t> width,
           const HaloOptions& options = {});

// grid_halo in two nodes, so that work that does not need the ghosts runs
// while the messages travel (as data_exchange_start/_finish):
//   Value r = halo_start(grid, u, {1, 1}, {.corners = false});
//   Value inner = ...;               // anything not reading the ghosts
//   Value padded = halo_finish(r);   // == halo(grid, u, {1, 1}, ...)
// Exactly one halo_finish must complete each request (Session refuses a
// plan that runs a start without it). Without corners every axis's
// messages leave at the start; with corners only the first axis's. The
// adjoint is the transpose exchange split the same way; values are bit for
// bit those of halo().
Value halo_start(const Grid& grid,
                 Value x,
                 std::vector<int64_t> width,
                 const HaloOptions& options = {});
Value halo_finish(Value request);

// Registers this family's ops; once only: call register_grid_layer().
void register_halo_ops();

// The grid layer's package initialiser: registers its families (halos,
// points, stencils) and the layers below, once per process, thread-safe,
// returning at once after the first call. Every node builder of the layer
// calls it.
void register_grid_layer();

}  // namespace adgraph::grid
