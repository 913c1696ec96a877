// The 2-D heat equation on an N × M patch decomposition of [0,1]².
//
// Nx × Ny interior points, h = 1/(Nx + 1) in both directions, zero values
// outside; point (i, j) sits at x = (i+1)h, y = (j+1)h. P = N·M ranks; rank r
// owns patch (I, J) = (r / M, r % M) of n × m points: the Nx rows split
// into N runs as even as can be, the first Nx % N one row longer (50 rows
// on 3 → 17, 17, 16), and the Ny columns likewise. An explicit time step
// is one data_exchange and one heat_step (solvers/heat_step.h); an implicit
// one (backward Euler, Crank–Nicolson) a distributed sparse solve
// (sparse/, solvers/patch_operators.h).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/checkpoint_schedule.h"
#include "core/enum_names.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "sparse/sparse_matrix.h"

namespace adgraph::solvers {

// How a time step advances u (Δ_h: the 5-point Laplacian, diag(κ) = K):
//   explicit        u⁺ = u + dt·(KΔ_h u + f)
//   backward Euler  (I − dt·KΔ_h) u⁺ = u + dt·f
//   Crank–Nicolson  (I − dt/2·KΔ_h) u⁺ = (I + dt/2·KΔ_h) u + dt·f
enum class HeatScheme { kExplicit, kBackwardEuler, kCrankNicolson };

constexpr auto enum_names(HeatScheme) {
  return std::array{EnumName{HeatScheme::kExplicit, "explicit"},
                    EnumName{HeatScheme::kBackwardEuler, "backward_euler"},
                    EnumName{HeatScheme::kCrankNicolson, "crank_nicolson"}};
}

// "explicit", "backward_euler", "crank_nicolson" (name_of, as a C string).
const char* heat_scheme_name(HeatScheme scheme);
// False for an unknown name.
bool parse_heat_scheme(const std::string& name, HeatScheme* scheme);

struct HeatConfig {
  // Interior grid points per direction. Range >= px (py); need not be
  // divisible by it (patch_of).
  int nx = 32, ny = 32;
  // Patch grid: px rows (N) × py columns (M) of patches; px·py ranks.
  int px = 1, py = 1;
  // Time steps. Range >= 1.
  int nt = 100;
  // Time step; 0 selects 0.2·h²/max κ_true over the grid (the demo rule).
  // Range >= 0.
  double dt = 0.0;
  // Checkpoint schedule of the time loop's adjoint
  // (core/checkpoint_schedule.h); automatic() is resolved with nt. Default:
  // the graph's default (store_all() unless changed).
  CheckpointSchedule checkpoints;
  // Overlap each step's halo exchange with the update of the points that
  // need no halo, forward and adjoint (heat_step_overlapped); false runs
  // data_exchange, then heat_step. Both give bitwise the same results.
  // Default false: on one host the exchange takes ~1 µs a step and the
  // split kernels cost more than the overlap saves (docs/PERFORMANCE.md);
  // turn it on where messages are slow (across hosts).
  bool overlap = false;
  // The time scheme. Implicit schemes are stable for any dt, which is then
  // free (dt = 0 still selects the explicit rule).
  HeatScheme scheme = HeatScheme::kExplicit;
  // The sparse solve of an implicit step. Its rows are divided by κ, which
  // makes the matrix diag(1/κ) − θ·dt·Δ_h symmetric positive definite
  // (solved as symmetric whatever the flag says): the default is CG with
  // BoomerAMG (hypre), rtol 1e-10.
  // (Set field by field: a designated initialiser here would warn under
  // -Wextra's -Wmissing-field-initializers in every file including it.)
  sparse::SolverOptions implicit_solver = [] {
    sparse::SolverOptions o;
    o.ksp = "cg";
    o.pc = "hypre";
    o.symmetric = true;
    return o;
  }();

  double h() const { return 1.0 / (nx + 1); }
  // Checks the fields and that px·py equals `ranks`; returns false and
  // names the first bad field in `error`.
  bool is_valid(int ranks, std::string* error) const;
};

// Rank r's patch: its position in the patch grid, its size and its first
// global row and column.
struct Patch {
  int I = 0, J = 0;            // patch row and column
  int64_t n = 0, m = 0;        // patch rows and columns
  int64_t row0 = 0, col0 = 0;  // first global row and column
};

Patch patch_of(const HeatConfig& config, int rank);

// The demo problem's fields on a patch, from global coordinates.
Tensor heat_initial(const HeatConfig& config,
                    const Patch& patch);  // sin(πx)·sin(πy)
Tensor heat_kappa_true(const HeatConfig& config,
                       const Patch& patch);  // 1 + 0.5·exp(−r²/0.05)
Tensor heat_source(const HeatConfig& config, const Patch& patch);  // 1
// 0.2·h² / max over all grid points of κ_true (the same on every rank).
double heat_default_dt(const HeatConfig& config);
// config.dt, or the default rule when it is 0.
double heat_dt(const HeatConfig& config);

// The time loop and what it returns.
struct HeatSolution {
  // u^NT (n × m).
  Value u;
  // u at the observed steps, stacked: [K, n, m] (invalid without any).
  Value observed;
  // The loop node (for loop_stats()).
  Value loop;
};

// Adds the time loop to u0's graph: one loop node of NT steps whose body is
// one data_exchange and one heat_step (core/loops/loop.h), so the graph does
// not grow with NT. u0, kappa, f: n × m patches. `observe_steps` lists time
// levels t in [1, NT], strictly increasing, whose states u^t the solution
// stacks in `observed`. The adjoint keeps what config.checkpoints says.
// Throws GraphError for observation steps out of range.
HeatSolution heat_solve(Value u0,
                        Value kappa,
                        Value f,
                        const HeatConfig& config,
                        const std::vector<int64_t>& observe_steps);
// u^NT only.
Value heat_solve(Value u0, Value kappa, Value f, const HeatConfig& config);

}  // namespace adgraph::solvers
