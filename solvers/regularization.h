// Regularization terms for inverse problems on a patch decomposition
// (solvers/heat_solver.h).
//
// Each returns this rank's part, a scalar; the global term is the sum over
// ranks (adgraph's cotangent convention), as for the heat misfit. Both sum
// their terms over every rank's points exactly, rounded once, onto rank 0
// (mpi_total; the other ranks' part is 0), so the term is bitwise the same
// for every decomposition; the smoothness term's gradient is formed point
// by point in the gather form (smoothness_terms_adjoint), so it is too.
#pragma once

#include "core/graph.h"
#include "solvers/heat_solver.h"

namespace adgraph::solvers {

// α·‖κ − κ₀‖² over every rank's entries, the sum exact (mpi_dot), on rank
// 0 (0 elsewhere). kappa and kappa0 have one shape;
// alpha >= 0. Throws ShapeError (naming the nodes) when the shapes differ.
Value regularization_tikhonov(Value kappa, Value kappa0, double alpha);

// α·Σ (κ_p − κ_q)² over every pair of grid points p, q that are neighbours
// along a row or a column: the discrete ∫|∇κ|² (the h² of the area element
// cancels the 1/h² of the difference quotient in 2-D). kappa is this rank's
// n × m patch of `config`'s decomposition; a rank counts the pairs whose
// first point it owns (the right and down neighbours), taking the points
// across its right and lower edges from one data_exchange (op
// smoothness_terms; its adjoint exchanges the terms' cotangents). Collective
// (every rank calls it in the same order, as for any communication node); the
// term always consumes the exchange, so fetching it runs the exchange on every
// rank.
Value regularization_smoothness(Value kappa,
                                const HeatConfig& config,
                                const Patch& patch,
                                double alpha);

// Registers smoothness_terms and smoothness_terms_adjoint.
void register_regularization_ops();

}  // namespace adgraph::solvers
