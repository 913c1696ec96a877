// 5-point sparse operators on the heat problem's patch grid, assembled as
// graph functions of κ so that ∂/∂κ flows through the assembly.
//
// Rows are numbered patch by patch: rank r's points come after those of
// ranks 0..r−1, row-major within the patch (the order of its n × m
// tensors). Each row holds the point and those of its four neighbours
// (left, right, up, down, as data_exchange names them) that lie inside the
// domain; the boundary values outside are 0 (Dirichlet), as in the
// explicit heat step.
#pragma once

#include <array>

#include "core/graph.h"
#include "solvers/heat_solver.h"
#include "sparse/sparse_matrix.h"

namespace adgraph::solvers {

// This rank's rows of the 5-point pattern.
sparse::CsrPattern five_point_pattern(const HeatConfig& config, int rank);

// The values of that pattern from per-point coefficients (n × m patches):
// the diagonal entry of row P is center[P], the entry of P's left
// neighbour is sides[0][P] (right, up, down likewise); coefficients of
// neighbours outside the domain are dropped. Linear; its adjoint gathers
// the cotangents back (op five_point_values / five_point_values_adjoint).
Value five_point_values(const HeatConfig& config,
                        int rank,
                        Value center,
                        const std::array<Value, 4>& sides);

// I + s·diag(κ)·Δ_h, with Δ_h u = (Σ_neighbours u − 4u)/h² as the explicit
// heat step has it: s = −θ·dt gives the implicit matrix I − θ·dt·diag(κ)Δ_h,
// s = (1 − θ)·dt the explicit half of Crank–Nicolson.
Value heat_matrix_values(const HeatConfig& config,
                         int rank,
                         Value kappa,
                         double s);

// diag(1/κ) + s·Δ_h from inv_kappa = 1/κ: I + s·diag(κ)Δ_h with row P
// divided by κ_P. Symmetric, and positive definite for s ≤ 0: the form of
// an implicit heat step that CG solves.
Value scaled_heat_matrix_values(const HeatConfig& config,
                                int rank,
                                Value inv_kappa,
                                double s);

// The conservative operator (A u)_P = Σ_Q c_PQ (u_P − u_Q)/h² over P's four
// neighbours, c_PQ = (κ_P + κ_Q)/2 between interior points and c = κ_P
// across the boundary. κ of the neighbouring patches comes through one
// data_exchange (on every rank). Symmetric positive definite for κ > 0.
Value conservative_values(const HeatConfig& config, int rank, Value kappa);

// The levels of a geometric multigrid on the patch grid, finest first
// (sparse::SparseMatrix's `multigrid`, for pc "mg"): each coarsens by two
// in both directions, coarse point (I, J) sitting at fine point
// (2I + 1, 2J + 1), and prolongs by bilinear interpolation (0 beyond the
// boundary). Coarsening goes on while every patch has an even number of
// rows and columns, the coarse grid keeps at least `min_points` points in
// each direction and there are fewer than `max_levels` levels in all; the
// result is empty when the first coarsening is impossible.
std::vector<sparse::Prolongation> patch_prolongations(const HeatConfig& config,
                                                      int rank,
                                                      int max_levels = 6,
                                                      int min_points = 8);

void register_patch_operator_ops();

}  // namespace adgraph::solvers
