// Points anywhere in a grid: sample a field there (interpolate) and inject
// amplitudes there (spread), with bilinear weights in 2-D and trilinear in
// 3-D (linear in 1-D). What a seismic source and its receivers need.
//
//   grid::Points receivers = {{2.0, 10.5}, {2.0, 11.5}};   // (z, x) indices
//   Value d = grid::sample(g, u, receivers);          // [batch…, 2]
//   Value u1 = grid::inject(g, u, {{3.0, 20.25}}, a);  // a: [batch…, 1]
//
// A point is given in global index coordinates, one number per axis, within
// [0, N_a − 1] on every axis a. Its cell's corners are floor(x_a) and
// floor(x_a) + 1; corner c (bit a of c: the upper one on axis a) weighs
// Π_a (1 − f_a or f_a), f_a = x_a − floor(x_a). Corners of weight 0 are not
// read, so a point on a grid point reads that point alone: sample gives
// u there exactly, inject adds a there exactly.
//
// Ranks. Each rank reads and writes the corners it owns, so a cell on a
// patch edge is shared by the ranks owning its corners; nothing depends on
// where the patch edges are:
// - corners(x): [batch…, P, 2^d], x at the corners this rank owns, 0 at
//   the others. Local; its transpose adds such an array into a field at
//   the corners this rank owns, point by point in order (so corners shared
//   by two points add in point order on every decomposition).
// - sample = Σ_c w_c·(mpi_allreduce of corners) over c in order: the same
//   values on every rank of the grid, bitwise the same on every
//   decomposition (each corner has one owner: the allreduce adds zeros to
//   it). Its adjoint is mpi_allreduce's, the sum over ranks of ȳ (the loss
//   is the sum of the per-rank losses: compute a misfit of the samples on
//   one rank, or divide it by the ranks).
// - inject = u + corners_transpose(w ⊙ a): amplitudes [batch…, P], the same
//   on every rank; ā on a rank is the part of Σ_c w_c·ū_c it owns. When
//   the amplitudes have u's batch axes it is one node, grid_inject, which
//   adds w ⊙ a into u at the owned corners point by point in order (in
//   place when u is not used again), so a step's source costs O(P), not a
//   pass over the field.
#pragma once

#include <vector>

#include "core/graph.h"
#include "core/tensor.h"
#include "grid/grid.h"

namespace adgraph::grid {

// One entry per point, one coordinate per axis of the grid.
using Points = std::vector<std::vector<double>>;

// The weights [P, 2^d] of each point's corners (corner c's bit a: upper
// on axis a). Throws OptionsError naming the point when one is outside the
// grid or has the wrong number of coordinates.
Tensor corner_weights(const GridLayout& layout, const Points& points);

// The ops grid_corners and grid_corners_transpose (above), on the grid's
// communicator.
Value corners(const Grid& grid, Value x, const Points& points);
Value corners_transpose(const Grid& grid, Value c, const Points& points);

// u at the points: [batch…, P], on every rank of the grid.
Value sample(const Grid& grid, Value u, const Points& points);
// u with amplitudes [batch…, P] spread onto the points' corners.
Value inject(const Grid& grid, Value u, const Points& points, Value amplitudes);

void register_point_ops();

}  // namespace adgraph::grid
