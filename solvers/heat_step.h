// One explicit Euler step of the 2-D heat equation on a patch, as a custom op
// written with the public op API (core/op.h), exactly as a user would.
//
//   u⁺_ij = u_ij + dt·(κ_ij·(u_{i+1,j} + u_{i−1,j} + u_{i,j+1} + u_{i,j−1} −
//   4u_ij)/h² + f_ij)
//
// u, κ and f are the patch's n × m values (rows i, columns j). Neighbours
// outside the patch come from the halos: from_up[j] = u_{−1,j},
// from_down[j] = u_{n,j}, from_left[i] = u_{i,−1}, from_right[i] = u_{i,m}
// (zeros on the domain boundary, as data_exchange gives them).
//
// The op also outputs the four edges of u⁺. Adjoint (G = ū⁺ with the edge
// cotangents added onto its edges, z = κ ⊙ G, zero outside the patch,
// c = dt/h²):
//   ū = G + c·(z_{i+1,j} + z_{i−1,j} + z_{i,j+1} + z_{i,j−1} − 4z_ij)
//   κ̄ = c·G ⊙ (stencil of u)          f̄ = dt·G (skipped when not needed)
//   from_up̄ = c·z_{0,:}, from_down̄ = c·z_{n−1,:}, from_left̄ = c·z_{:,0},
//   from_right̄ = c·z_{:,m−1}
// computed by the op heat_step_adjoint, which declares no adjoint of its own
// (second derivatives through the heat step are not supported). κ is shared
// by all steps, so its cotangent is a sum over steps: heat_step_adjoint
// takes the sum of the later steps' κ̄ as an optional last input and adds
// its own in the same pass (GradientContext::absorb), instead of an `add`
// node over the patch per step.
// Both kernels make one pass over the patch (the adjoint with rolling row
// buffers and branch-free, vectorised inner loops) and use OpenMP threads
// over rows for large patches.
#pragma once

#include <array>

#include "core/graph.h"

namespace adgraph::solvers {

// The new state and its four edges (left, right, up, down), which the next
// step's data_exchange sends: producing them here lets the adjoint take the
// edges' cotangents in the same pass as the state's.
struct HeatStep {
  Value u;
  std::array<Value, 4> edges;
};

// Halos from data_exchange: {from_left, from_right, from_up, from_down}.
HeatStep heat_step(Value u,
                   Value kappa,
                   Value f,
                   const std::array<Value, 4>& halos,
                   double dt,
                   double h);

// The four edges of an n × m patch, as data_exchange sends them:
// {left column, right column, top row, bottom row} (shapes [n], [n], [m],
// [m]). Its adjoint, patch_edges_adjoint, adds each strip's cotangent back
// onto its edge of a zero patch; each is the other's transpose.
std::array<Value, 4> patch_edges(Value u);

// heat_step with its halo exchange overlapped: `edges` are u's edges (what
// data_exchange would send; patch_edges(u), or the previous step's), sent
// by data_exchange_start on a rows x cols patch grid; heat_step_interior
// updates the points that need no halo while they travel;
// data_exchange_finish brings the halos and heat_step_boundary completes
// the outer ring (in the interior's buffer) and the edges. The adjoint is
// heat_step's gather form for the whole step (the halos come from
// data_exchange_finish), whose exchange is not overlapped. (With halos
// from elsewhere, heat_step_boundary's adjoint is split the scatter way:
// heat_step_boundary_adjoint yields the halos' cotangents first, and
// heat_step_interior_adjoint runs while they travel.) States and
// cotangents are bitwise those of data_exchange + heat_step (every point
// is computed by the same expression). heat_step_interior is only meant as
// heat_step_boundary's input: its adjoint assumes so.
HeatStep heat_step_overlapped(Value u,
                              Value kappa,
                              Value f,
                              const std::array<Value, 4>& edges,
                              int rows,
                              int cols,
                              double dt,
                              double h);

// Registers heat_step, heat_step_adjoint, heat_step_adjoint_gather,
// heat_step_adjoint_edges, patch_edges, patch_edges_adjoint and the split
// ops of heat_step_overlapped (once only: call register_solvers_layer()).
void register_heat_ops();

// The solvers layer's package initialiser: registers its families (the
// heat step, the patch operators, the regularization terms) and the layers
// below that it uses (sparse and under), once per process, thread-safe,
// returning at once after the first call. Every node builder of the layer
// calls it.
void register_solvers_layer();

}  // namespace adgraph::solvers
