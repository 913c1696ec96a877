// The problems of bench/stencil_bench, made from its options (fields defined
// on global indices, so every decomposition solves the same one), and its
// hand-written baselines:
// the 2-D leapfrog wave step and the 3-D 7-point diffusion step as plain loops
// over ghost-layer arrays, with halos exchanged by MPI_Sendrecv, and their
// discrete adjoints written by hand (store every state in the forward, then one
// reverse pass per step). Built with the same flags as the library (-O3
// -ffp-contract=off, -march=native when the library has it), not tuned: no
// blocking, no prefetch, no threads; the row pointers are __restrict, as the
// generated kernels' are (without it GCC 12 leaves the adjoint's two-store
// loop scalar: too many alias checks to version it).
//
// Layout. A patch is [batch][n0 + 2g0][n1 + 2g1][n2 + 2g2] with one ghost
// layer (g = 1) on each spatial axis of the grid; a 2-D grid uses the last
// two slots and slot 0 has extent 1 and no ghosts. The decomposition is
// grid::GridLayout's (only its arithmetic: patch extents, offsets and
// neighbours), so both sides solve the same problem on the same patches.
// Ghosts past a non-periodic edge stay 0: reads there give 0, as the
// stencil op's do.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <numbers>
#include <string>
#include <vector>

#include "core/checkpoint_schedule.h"
#include "grid/grid.h"
#include "solvers/heat_solver.h"

namespace adgraph::bench {

// ---- The problems both sides solve ----------------------------------------

// One case's problem on this rank: the decomposition and the patches of
// the initial state u0 and the data d ([batch, patch…]) and of the
// coefficient whose gradient is taken ([patch…]), all row-major.
struct Problem {
  std::string name;
  grid::GridLayout layout;
  int rank = 0;
  int64_t batch = 1;  // 1 and no batch axis unless wave2d
  int steps = 0;
  double dt = 0.0;    // diffusion3d, heat2d
  double coef = 0.0;  // heat2d: dt / h²
  CheckpointSchedule schedule;
  std::vector<double> u0, d, x, f;  // f: heat2d's source
  solvers::HeatConfig heat;         // heat2d
};

// value(b, global index) over this rank's patch, for every batch entry.
template <class F>
std::vector<double> patch_values(const Problem& p, int64_t batch, F value) {
  const Shape local = p.layout.local_shape(p.rank);
  const Shape start = p.layout.offset(p.rank);
  const int nd = p.layout.ndim();
  int64_t points = 1;
  for (int64_t e : local) points *= e;
  std::vector<double> out;
  out.reserve(batch * points);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t k = 0; k < points; ++k) {
      Shape g(nd);
      int64_t r = k;
      for (int a = nd - 1; a >= 0; --a) {
        g[a] = start[a] + r % local[a];
        r /= local[a];
      }
      out.push_back(value(b, g));
    }
  }
  return out;
}

inline double bump(const Shape& g,
                   const std::vector<double>& centre,
                   double sigma) {
  double r2 = 0.0;
  for (std::size_t a = 0; a < g.size(); ++a)
    r2 += (g[a] - centre[a]) * (g[a] - centre[a]);
  return std::exp(-r2 / (2 * sigma * sigma));
}

inline void make_wave(Problem& p, int n) {
  const double pi = std::numbers::pi, shots = static_cast<double>(p.batch);
  p.u0 = patch_values(p, p.batch, [&](int64_t b, const Shape& g) {
    return bump(g,
                {n * (b + 1) / (shots + 1), n * (shots - b) / (shots + 1)},
                std::max(1.0, n / 16.0));
  });
  p.d = patch_values(p, p.batch, [&](int64_t, const Shape& g) {
    return 0.05 * std::sin(pi * (g[0] + 1) / (n + 1)) *
           std::sin(pi * (g[1] + 1) / (n + 1));
  });
  p.x = patch_values(p, 1, [&](int64_t, const Shape& g) {
    return 0.1 +
           0.04 * std::sin(2 * pi * g[0] / n) * std::cos(2 * pi * g[1] / n);
  });
}

inline void make_diffusion(Problem& p, int n) {
  const double pi = std::numbers::pi;
  p.dt = 0.1;
  p.u0 = patch_values(p, 1, [&](int64_t, const Shape& g) {
    return bump(g, {n / 2.0, n / 2.0, n / 2.0}, std::max(1.0, n / 8.0));
  });
  p.d = patch_values(p, 1, [&](int64_t, const Shape& g) {
    return 0.1 * std::sin(pi * (g[0] + 1) / (n + 1));
  });
  p.x = patch_values(p, 1, [&](int64_t, const Shape& g) {
    return 0.75 + 0.2 * std::sin(2 * pi * g[0] / n) *
                      std::cos(2 * pi * g[1] / n) * std::sin(2 * pi * g[2] / n);
  });
}

inline void make_heat(Problem& p, int n) {
  solvers::HeatConfig& c = p.heat;
  c.nx = c.ny = n;
  c.px = p.layout.procs[0];
  c.py = p.layout.procs[1];
  c.nt = p.steps;
  c.checkpoints = p.schedule;
  const solvers::Patch patch = solvers::patch_of(c, p.rank);
  p.dt = solvers::heat_dt(c);
  p.coef = p.dt / (c.h() * c.h());  // as heat_step's bind computes it
  p.u0 = solvers::heat_initial(c, patch).to_vector();
  p.d = p.u0;
  for (double& v : p.d) v *= 0.5;
  p.x = solvers::heat_kappa_true(c, patch).to_vector();
  p.f = solvers::heat_source(c, patch).to_vector();
}

// bench/stencil_bench's options (its --help says the same).
struct BenchOptions {
  std::string which = "all";        // all, wave2d, diffusion3d, heat2d
  int reps = 5;                     // timed rounds, >= 1
  int n = 0;                        // points per axis; 0: the case's default
  int steps = 0;                    // time steps; 0: the case's default
  int shots = 3;                    // wave2d's batch, >= 1
  std::string procs;                // "PZxPX[xPY]"; empty: P×1[×1]
  std::string checkpoints = "all";  // all | binomial:K
  bool cold = false;
};

// "all" or "binomial:K" (K >= 1); false for anything else.
inline bool parse_schedule(const std::string& text, CheckpointSchedule* s) {
  if (text == "all") {
    *s = CheckpointSchedule::store_all();
    return true;
  }
  const std::string prefix = "binomial:";
  if (text.rfind(prefix, 0) != 0) return false;
  try {
    std::size_t used = 0;
    const long k = std::stol(text.substr(prefix.size()), &used);
    if (used + prefix.size() != text.size() || k < 1) return false;
    *s = CheckpointSchedule::binomial(k);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// "AxB[xC]" padded with 1 to `ndim` entries; empty text: size×1….
inline bool parse_procs(const std::string& text,
                        int ndim,
                        int size,
                        std::vector<int>* procs) {
  procs->clear();
  if (text.empty()) {
    procs->push_back(size);
  } else {
    std::size_t at = 0;
    while (at <= text.size()) {
      const std::size_t x = std::min(text.find('x', at), text.size());
      try {
        procs->push_back(std::stoi(text.substr(at, x - at)));
      } catch (const std::exception&) {
        return false;
      }
      at = x + 1;
    }
  }
  if (static_cast<int>(procs->size()) > ndim) return false;
  procs->resize(ndim, 1);
  return true;
}

inline std::string procs_text(const std::vector<int>& procs) {
  std::string s;
  for (int p : procs) s += (s.empty() ? "" : "x") + std::to_string(p);
  return s;
}

// The problem of case `name`, or an error message (the same on every rank).
inline std::string make_problem(const std::string& name,
                                const BenchOptions& o,
                                int rank,
                                int size,
                                Problem* p) {
  const int nd = name == "diffusion3d" ? 3 : 2;
  const int n = o.n > 0 ? o.n : (name == "diffusion3d" ? 96 : 256);
  p->name = name;
  p->rank = rank;
  p->steps = o.steps > 0 ? o.steps : (name == "diffusion3d" ? 50 : 500);
  p->batch = name == "wave2d" ? o.shots : 1;
  if (!parse_schedule(o.checkpoints, &p->schedule))
    return "--checkpoints: expected all or binomial:K (K >= 1), got \"" +
           o.checkpoints + "\"";
  p->layout.shape.assign(nd, n);
  p->layout.periodic.assign(nd, false);
  if (!parse_procs(o.procs, nd, size, &p->layout.procs))
    return "--procs: expected at most " + std::to_string(nd) +
           " counts PZxPX…, got \"" + o.procs + "\"";
  if (std::string why = p->layout.invalid_reason(); !why.empty())
    return name + ": " + why;
  if (p->layout.num_ranks() != size)
    return name + ": --procs " + procs_text(p->layout.procs) + " needs " +
           std::to_string(p->layout.num_ranks()) + " ranks, there are " +
           std::to_string(size);
  if (name == "wave2d") make_wave(*p, n);
  if (name == "diffusion3d") make_diffusion(*p, n);
  if (name == "heat2d") make_heat(*p, n);
  return {};
}

// ---- Hand-written loops ----------------------------------------------------

// A ghosted patch's geometry and its neighbours (MPI_PROC_NULL: none).
struct GhostedPatch {
  int64_t batch = 1;
  int64_t n[3] = {1, 1, 1};   // owned extents per slot
  int64_t g[3] = {0, 0, 0};   // ghost layers per side (0 or 1)
  int64_t st[3] = {0, 0, 1};  // element strides per slot
  int64_t bs = 0;             // batch stride
  int nb[3][2] = {{MPI_PROC_NULL, MPI_PROC_NULL},
                  {MPI_PROC_NULL, MPI_PROC_NULL},
                  {MPI_PROC_NULL, MPI_PROC_NULL}};

  int64_t size() const { return batch * bs; }
  // The element of owned point (i, j, k) of batch entry b; -1 and n[s] are
  // the ghosts.
  int64_t at(int64_t b, int64_t i, int64_t j, int64_t k) const {
    return b * bs + (i + g[0]) * st[0] + (j + g[1]) * st[1] + k + g[2];
  }
  int64_t owned() const { return batch * n[0] * n[1] * n[2]; }
};

inline GhostedPatch ghosted_patch(const grid::GridLayout& grid,
                                  int rank,
                                  int64_t batch) {
  GhostedPatch p;
  p.batch = batch;
  const int nd = grid.ndim(), first = 3 - nd;
  const Shape local = grid.local_shape(rank);
  for (int a = 0; a < nd; ++a) {
    const int s = first + a;
    p.n[s] = local[a];
    p.g[s] = 1;
    for (int side = 0; side < 2; ++side) {
      std::vector<int> dir(nd, 0);
      dir[a] = side == 0 ? -1 : 1;
      const int r = grid.neighbour(rank, dir);
      p.nb[s][side] = r < 0 ? MPI_PROC_NULL : r;
    }
  }
  p.st[2] = 1;
  p.st[1] = p.n[2] + 2 * p.g[2];
  p.st[0] = p.st[1] * (p.n[1] + 2 * p.g[1]);
  p.bs = p.st[0] * (p.n[0] + 2 * p.g[0]);
  return p;
}

// Calls f(element) for every point of the face at `index` (-1 … n[s]) of
// slot s, over the batch and the owned range of the other slots.
template <class F>
void for_face(const GhostedPatch& p, int s, int64_t index, F f) {
  int64_t lo[3] = {0, 0, 0}, hi[3] = {p.n[0], p.n[1], p.n[2]};
  lo[s] = index;
  hi[s] = index + 1;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = lo[0]; i < hi[0]; ++i)
      for (int64_t j = lo[1]; j < hi[1]; ++j)
        for (int64_t k = lo[2]; k < hi[2]; ++k) f(p.at(b, i, j, k));
}

// Fills the face ghosts of `u` from the neighbours' owned edges (zeros
// where there is none): per axis, the low face goes down while the high
// ghost comes up, then the other way. Faces only: the 5- and 7-point
// stencils read no corner. Collective over the patch's neighbours.
inline void exchange_halos(const GhostedPatch& p,
                           double* u,
                           std::vector<double>& send,
                           std::vector<double>& recv) {
  for (int s = 0; s < 3; ++s) {
    if (p.g[s] == 0) continue;
    for (int side = 0; side < 2; ++side) {
      const int64_t from = side == 0 ? 0 : p.n[s] - 1;
      const int64_t into = side == 0 ? p.n[s] : -1;
      send.clear();
      for_face(p, s, from, [&](int64_t e) { send.push_back(u[e]); });
      recv.assign(send.size(), 0.0);
      MPI_Sendrecv(send.data(),
                   static_cast<int>(send.size()),
                   MPI_DOUBLE,
                   p.nb[s][side],
                   700 + side,
                   recv.data(),
                   static_cast<int>(recv.size()),
                   MPI_DOUBLE,
                   p.nb[s][1 - side],
                   700 + side,
                   MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
      std::size_t t = 0;
      for_face(p, s, into, [&](int64_t e) { u[e] = recv[t++]; });
    }
  }
}

// Calls row(offset of owned point (b, i, j, 0)) for every owned row, in
// memory order.
template <class Row>
void for_rows(const GhostedPatch& p, Row row) {
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.n[0]; ++i)
      for (int64_t j = 0; j < p.n[1]; ++j) row(p.at(b, i, j, 0));
}

// Σ of the 2·kDim neighbours of u[e], axis by axis, low side first, then
// − 2·kDim·u[e]: the order the adgraph expressions are written in.
template <int kDim>
inline double laplacian(const double* u, int64_t e, const GhostedPatch& p) {
  const int64_t s0 = p.st[0], s1 = p.st[1];
  if constexpr (kDim == 3) {
    return u[e - s0] + u[e + s0] + u[e - s1] + u[e + s1] + u[e - 1] + u[e + 1] -
           6.0 * u[e];
  } else {
    return u[e - s1] + u[e + s1] + u[e - 1] + u[e + 1] - 4.0 * u[e];
  }
}

// Σ_nb (w·v)[nb] − 2·kDim·(w·v)[e] for a coefficient w without batch axes
// (element e − boff in w): the transpose of w ⊙ laplacian applied to v.
template <int kDim>
inline double laplacian_transpose(const double* v,
                                  const double* w,
                                  int64_t e,
                                  int64_t boff,
                                  const GhostedPatch& p) {
  const int64_t s0 = p.st[0], s1 = p.st[1], c = e - boff;
  double sum = 0.0;
  if constexpr (kDim == 3) sum = w[c - s0] * v[e - s0] + w[c + s0] * v[e + s0];
  sum = sum + w[c - s1] * v[e - s1] + w[c + s1] * v[e + s1] +
        w[c - 1] * v[e - 1] + w[c + 1] * v[e + 1];
  return sum - 2.0 * kDim * (w[c] * v[e]);
}

// The time loop of one case, hand-written. kWave: leapfrog
//   u⁺ = 2u − u⁻ + c²·lap(u)   (u⁻ = 0 at the first step), gradient wrt c²;
// otherwise explicit diffusion
//   u⁺ = u + (dt·κ)·lap(u),  gradient wrt κ.
// Loss ½Σ(u_T − d)² over every rank. u0 and d are [batch, patch…] and the
// coefficient [patch…], each row-major without ghosts.
template <int kDim, bool kWave>
class HandStencilLoop {
 public:
  HandStencilLoop(const grid::GridLayout& grid,
                  int rank,
                  int64_t batch,
                  int steps,
                  double dt,
                  const std::vector<double>& u0,
                  const std::vector<double>& d)
      : p_(ghosted_patch(grid, rank, batch)),
        c_(ghosted_patch(grid, rank, 1)),
        steps_(steps),
        dt_(dt),
        u0_(ghosted(p_, u0)),
        d_(d) {}

  // The global loss (every rank). Two or three states, whatever the steps.
  double forward(const std::vector<double>& coef) {
    set_coefficient(coef);
    std::vector<double>* s[3] = {&work_[0], &work_[1], &work_[2]};
    for (auto* w : s) w->assign(p_.size(), 0.0);
    *s[1] = u0_;
    for (int t = 0; t < steps_; ++t) {
      step(*s[0], *s[1], *s[2]);
      std::rotate(s, s + 1, s + 3);  // (u⁻, u, u⁺) ← (u, u⁺, u⁻)
    }
    return loss(s[1]->data(), nullptr);
  }

  // The global loss, and this rank's gradient wrt the coefficient in
  // `grad` (patch, row-major). Keeps all steps + 1 states in one block,
  // kept across calls (release() frees it).
  double gradient(const std::vector<double>& coef, std::vector<double>* grad) {
    set_coefficient(coef);
    const int64_t size = p_.size();
    tape_.resize((steps_ + 1) * size);
    zero_.assign(size, 0.0);
    std::copy(u0_.begin(), u0_.end(), tape_.begin());
    for (int t = 0; t < steps_; ++t) {
      const double* prev = t > 0 ? state(t - 1) : zero_.data();
      step(prev, state(t), state(t + 1));
    }
    for (auto& w : work_) w.assign(size, 0.0);
    const double l = loss(state(steps_), work_[1].data());
    reverse(grad);
    return l;
  }

  void release() { std::vector<double>().swap(tape_); }

 private:
  static std::vector<double> ghosted(const GhostedPatch& p,
                                     const std::vector<double>& owned) {
    std::vector<double> out(p.size(), 0.0);
    std::size_t t = 0;
    for_rows(p, [&](int64_t e) {
      for (int64_t k = 0; k < p.n[2]; ++k) out[e + k] = owned[t++];
    });
    return out;
  }

  double* state(int t) { return tape_.data() + int64_t{t} * p_.size(); }

  // The coefficient with its halos (wave: c²; diffusion: w = dt·κ).
  void set_coefficient(const std::vector<double>& coef) {
    coef_ = ghosted(c_, coef);
    if (!kWave) {
      for (double& v : coef_) v = dt_ * v;
    }
    exchange_halos(c_, coef_.data(), send_, recv_);
  }

  void step(const std::vector<double>& prev,
            std::vector<double>& u,
            std::vector<double>& next) {
    step(prev.data(), u.data(), next.data());
  }

  // next = one step from (prev, u), after filling u's ghosts (kept: the
  // adjoint reads them).
  void step(const double* prev, double* u, double* next) {
    exchange_halos(p_, u, send_, recv_);
    for_rows(p_, [&](int64_t e0) {
      const int64_t boff = (e0 / p_.bs) * p_.bs;
      step_row(p_, prev + e0, u + e0, coef_.data() + (e0 - boff), next + e0);
    });
  }

  // One row of a step, from pointers at its first point (w: the
  // coefficient's row).
  static void step_row(const GhostedPatch& p,
                       const double* __restrict prev,
                       const double* __restrict u,
                       const double* __restrict w,
                       double* __restrict next) {
    for (int64_t k = 0; k < p.n[2]; ++k) {
      const double lap = laplacian<kDim>(u, k, p);
      if constexpr (kWave) {
        next[k] = 2.0 * u[k] - prev[k] + w[k] * lap;
      } else {
        next[k] = u[k] + w[k] * lap;
      }
    }
  }

  // ½Σ(u − d)² over every rank; with `seed`, writes u − d into it.
  double loss(const double* u, double* seed) {
    double sum = 0.0;
    std::size_t t = 0;
    const int64_t m = p_.n[2];
    for_rows(p_, [&](int64_t e0) {
      for (int64_t k = 0; k < m; ++k) {
        const double r = u[e0 + k] - d_[t++];
        sum += r * r;
        if (seed != nullptr) seed[e0 + k] = r;
      }
    });
    sum *= 0.5;
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum;
  }

  // P_t = ∂L/∂u_t from P_T = u_T − d, t = T−1 … 0, one pass each:
  //   wave:      P_t = 2P_{t+1} − P_{t+2} + lapᵀ(c²P_{t+1}),
  //              c̄ += Σ_batch P_{t+1}·lap(u_t)
  //   diffusion: P_t = P_{t+1} + lapᵀ(wP_{t+1}),  κ̄ += dt·P_{t+1}·lap(u_t)
  // (P_{T+1} = 0). work_[1] holds P_T on entry.
  void reverse(std::vector<double>* grad) {
    std::vector<double> cbar(c_.size(), 0.0);
    double* P[3] = {work_[0].data(), work_[1].data(), work_[2].data()};
    // P[1] = P_{t+1}, P[2] = P_{t+2}, P[0] ← P_t.
    for (int t = steps_ - 1; t >= 0; --t) {
      exchange_halos(p_, P[1], send_, recv_);
      const double* u = state(t);
      for_rows(p_, [&](int64_t e0) {
        const int64_t c = e0 - (e0 / p_.bs) * p_.bs;
        reverse_row(p_,
                    dt_,
                    u + e0,
                    P[1] + e0,
                    P[2] + e0,
                    coef_.data() + c,
                    P[0] + e0,
                    cbar.data() + c);
      });
      std::rotate(P, P + 2, P + 3);  // (P_t, P_{t+1}, P_{t+2}) ← (.., P0, P1)
    }
    grad->clear();
    for_rows(c_, [&](int64_t e0) {
      for (int64_t k = 0; k < c_.n[2]; ++k) grad->push_back(cbar[e0 + k]);
    });
  }

  // One row of the reverse pass, from pointers at its first point (w, cb:
  // the coefficient's and its cotangent's rows). Not inlined: inlined into
  // the row loop, GCC 12 no longer vectorises it.
  [[gnu::noinline]] static void reverse_row(const GhostedPatch& p,
                                            double dt,
                                            const double* __restrict u,
                                            const double* __restrict p1,
                                            const double* __restrict p2,
                                            const double* __restrict w,
                                            double* __restrict p0,
                                            double* __restrict cb) {
    for (int64_t k = 0; k < p.n[2]; ++k) {
      const double back = laplacian_transpose<kDim>(p1, w, k, 0, p);
      if constexpr (kWave) {
        cb[k] += p1[k] * laplacian<kDim>(u, k, p);
        p0[k] = 2.0 * p1[k] - p2[k] + back;
      } else {
        cb[k] += dt * p1[k] * laplacian<kDim>(u, k, p);
        p0[k] = p1[k] + back;
      }
    }
  }

  GhostedPatch p_, c_;
  int steps_;
  double dt_;
  std::vector<double> u0_, d_, coef_, zero_, tape_;
  std::vector<double> work_[3];
  std::vector<double> send_, recv_;
};

}  // namespace adgraph::bench
