// A hand-written implementation of the heat problem's loss and gradient:
// ghost-layer arrays, explicit MPI halo exchanges, loops. The baseline that
// bench/heat_bench compares adgraph with.
#pragma once

#include <mpi.h>

#include <vector>

#include "solvers/heat_solver.h"

namespace adgraph::bench {

class HeatBaseline {
 public:
  HeatBaseline(const solvers::HeatConfig& c, int rank)
      : c_(c), p_(solvers::patch_of(c, rank)), n_(p_.n), m_(p_.m) {
    neighbour_[0] = p_.J > 0 ? rank - 1 : -1;
    neighbour_[1] = p_.J + 1 < c.py ? rank + 1 : -1;
    neighbour_[2] = p_.I > 0 ? rank - c.py : -1;
    neighbour_[3] = p_.I + 1 < c.px ? rank + c.py : -1;
    dt_ = solvers::heat_dt(c);
    coef_ = dt_ / (c.h() * c.h());
    u0_ = solvers::heat_initial(c, p_).to_vector();
    f_ = solvers::heat_source(c, p_).to_vector();
  }

  // Observations u^NT(kappa).
  void set_observations(const std::vector<double>& kappa) {
    obs_ = final_state(kappa);
  }

  // This rank's part of L = Σ (u^NT − obs)²; with `grad`, also ∂L/∂κ.
  double run(const std::vector<double>& kappa, std::vector<double>* grad) {
    const bool keep = grad != nullptr;
    states_.assign(keep ? c_.nt + 1 : 2, std::vector<double>(ghosted(), 0.0));
    load(u0_, states_[0]);
    for (int n = 0; n < c_.nt; ++n) {
      auto& cur = states_[keep ? n : n % 2];
      auto& next = states_[keep ? n + 1 : (n + 1) % 2];
      step(cur, kappa, next);
    }
    const auto& last = states_[keep ? c_.nt : c_.nt % 2];
    if (obs_.empty()) return 0.0;  // computing the observations themselves
    double loss = 0;
    std::vector<double> ubar(ghosted(), 0.0);
    for (int64_t i = 0; i < n_; ++i) {
      for (int64_t j = 0; j < m_; ++j) {
        const double d = last[at(i, j)] - obs_[i * m_ + j];
        loss += d * d;
        ubar[at(i, j)] = 2 * d;
      }
    }
    if (!keep) return loss;
    grad->assign(n_ * m_, 0.0);
    std::vector<double> z(ghosted(), 0.0), prev(ghosted(), 0.0);
    for (int n = c_.nt - 1; n >= 0; --n) {
      const auto& u =
          states_[n];  // its ghost layer still holds the halos of step n
      for (int64_t i = 0; i < n_; ++i) {
        for (int64_t j = 0; j < m_; ++j) {
          z[at(i, j)] = kappa[i * m_ + j] * ubar[at(i, j)];
          (*grad)[i * m_ + j] += coef_ * ubar[at(i, j)] * lap(u, i, j);
        }
      }
      // The ghost layer of z receives the neighbours' edge values: their
      // contribution to this patch's edge cotangents.
      exchange(z, true);
      for (int64_t i = 0; i < n_; ++i) {
        for (int64_t j = 0; j < m_; ++j) {
          prev[at(i, j)] = ubar[at(i, j)] + coef_ * lap(z, i, j);
        }
      }
      std::swap(ubar, prev);
    }
    return loss;
  }

  // The least a store-all gradient moves, with no adjoint arithmetic: the
  // forward writing each state into a tape (kept across calls, so a repeat
  // faults in no pages), then every taped state read once, last first, as
  // an adjoint reads them. Returns the sum of the states read, so that no
  // read can be dropped. Its time over run(kappa, nullptr)'s is the floor
  // of a store-all gradient / forward on this machine.
  double tape_floor(const std::vector<double>& kappa) {
    tape_.resize(c_.nt + 1, std::vector<double>(ghosted(), 0.0));
    load(u0_, tape_[0]);
    for (int n = 0; n < c_.nt; ++n) step(tape_[n], kappa, tape_[n + 1]);
    double sum = 0;
    for (int n = c_.nt; n >= 0; --n) {
      const std::vector<double>& u = tape_[n];
      for (int64_t i = 0; i < n_; ++i) {
        for (int64_t j = 0; j < m_; ++j) sum += u[at(i, j)];
      }
    }
    return sum;
  }

  // This rank's part of the directional derivative L̇ of L along κ̇ (forward
  // mode): u̇⁺ = u̇ + c·(κ·lap(u̇) + κ̇·lap(u)), L̇ = Σ 2(u^NT − obs)·u̇^NT.
  // Two states and two tangents, whatever NT.
  double tangent(const std::vector<double>& kappa,
                 const std::vector<double>& kappa_dot) {
    std::vector<double> u(ghosted(), 0.0), next(ghosted(), 0.0);
    std::vector<double> ud(ghosted(), 0.0), ud_next(ghosted(), 0.0);
    load(u0_, u);
    for (int n = 0; n < c_.nt; ++n) {
      exchange(u, false);
      exchange(ud, false);
      for (int64_t i = 0; i < n_; ++i) {
        for (int64_t j = 0; j < m_; ++j) {
          const int64_t k = i * m_ + j;
          const double lap_u = lap(u, i, j);
          next[at(i, j)] = u[at(i, j)] + coef_ * kappa[k] * lap_u + dt_ * f_[k];
          ud_next[at(i, j)] = ud[at(i, j)] + coef_ * (kappa[k] * lap(ud, i, j) +
                                                      kappa_dot[k] * lap_u);
        }
      }
      std::swap(u, next);
      std::swap(ud, ud_next);
    }
    double derivative = 0;
    for (int64_t i = 0; i < n_; ++i) {
      for (int64_t j = 0; j < m_; ++j) {
        derivative += 2 * (u[at(i, j)] - obs_[i * m_ + j]) * ud[at(i, j)];
      }
    }
    return derivative;
  }

 private:
  int64_t ghosted() const { return (n_ + 2) * (m_ + 2); }
  int64_t at(int64_t i, int64_t j) const { return (i + 1) * (m_ + 2) + j + 1; }
  double lap(const std::vector<double>& u, int64_t i, int64_t j) const {
    return u[at(i - 1, j)] + u[at(i + 1, j)] + u[at(i, j - 1)] +
           u[at(i, j + 1)] - 4 * u[at(i, j)];
  }
  // next = u + c·κ·lap(u) + dt·f, after filling u's ghost layer.
  void step(std::vector<double>& u,
            const std::vector<double>& kappa,
            std::vector<double>& next) {
    exchange(u, false);
    for (int64_t i = 0; i < n_; ++i) {
      for (int64_t j = 0; j < m_; ++j) {
        const int64_t k = i * m_ + j;
        next[at(i, j)] =
            u[at(i, j)] + coef_ * kappa[k] * lap(u, i, j) + dt_ * f_[k];
      }
    }
  }
  void load(const std::vector<double>& patch, std::vector<double>& g) const {
    for (int64_t i = 0; i < n_; ++i) {
      for (int64_t j = 0; j < m_; ++j) g[at(i, j)] = patch[i * m_ + j];
    }
  }
  std::vector<double> final_state(const std::vector<double>& kappa) {
    run(kappa, nullptr);
    const auto& last = states_[c_.nt % 2];
    std::vector<double> out(n_ * m_);
    for (int64_t i = 0; i < n_; ++i) {
      for (int64_t j = 0; j < m_; ++j) out[i * m_ + j] = last[at(i, j)];
    }
    return out;
  }
  // Fills the ghost layer of `u` from the neighbours' edges (zeros where
  // there is none). `zero_first` clears it before (the adjoint's z).
  void exchange(std::vector<double>& u, bool zero_first) {
    if (zero_first) {
      for (int64_t i = -1; i <= n_; ++i) u[at(i, -1)] = u[at(i, m_)] = 0;
      for (int64_t j = 0; j < m_; ++j) u[at(-1, j)] = u[at(n_, j)] = 0;
    }
    for (int k = 0; k < 4; ++k) {
      const int64_t len = k < 2 ? n_ : m_;
      send_[k].resize(len);
      recv_[k].assign(len, 0.0);
      for (int64_t t = 0; t < len; ++t) {
        send_[k][t] = k == 0   ? u[at(t, 0)]
                      : k == 1 ? u[at(t, m_ - 1)]
                      : k == 2 ? u[at(0, t)]
                               : u[at(n_ - 1, t)];
      }
    }
    MPI_Request req[8];
    int nreq = 0;
    const int opposite[4] = {1, 0, 3, 2};
    for (int k = 0; k < 4; ++k) {
      if (neighbour_[k] < 0) continue;
      MPI_Irecv(recv_[k].data(),
                static_cast<int>(recv_[k].size()),
                MPI_DOUBLE,
                neighbour_[k],
                500 + k,
                MPI_COMM_WORLD,
                &req[nreq++]);
    }
    for (int k = 0; k < 4; ++k) {
      if (neighbour_[k] < 0) continue;
      MPI_Isend(send_[k].data(),
                static_cast<int>(send_[k].size()),
                MPI_DOUBLE,
                neighbour_[k],
                500 + opposite[k],
                MPI_COMM_WORLD,
                &req[nreq++]);
    }
    MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    for (int64_t t = 0; t < n_; ++t)
      u[at(t, -1)] = recv_[0][t], u[at(t, m_)] = recv_[1][t];
    for (int64_t t = 0; t < m_; ++t)
      u[at(-1, t)] = recv_[2][t], u[at(n_, t)] = recv_[3][t];
  }

  solvers::HeatConfig c_;
  solvers::Patch p_;
  int64_t n_, m_;
  int neighbour_[4];
  double dt_, coef_;
  std::vector<double> u0_, f_, obs_;
  std::vector<std::vector<double>> states_, tape_;
  std::vector<double> send_[4], recv_[4];
};

}  // namespace adgraph::bench
