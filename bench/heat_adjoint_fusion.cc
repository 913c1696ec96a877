// Would a two-step heat adjoint pay? Hand-written only, no adgraph: the
// heat adjoint of NT steps on one n × n patch (zero halos) as NT one-step
// passes, the way heat_step_adjoint runs it, against NT / 2 fused passes
// that each take the cotangent back over two steps while reading κ and κ̄
// once (the middle cotangent lives in a few rolling rows). By bytes the
// fused pass moves 4 arrays per step against 7, so if the adjoint were
// bound by DRAM bandwidth it would take ~0.6 of the time. Both compute each
// point by the same expression in the same order: the cotangents must be
// bitwise equal (exit 1 otherwise). See docs/performance-history.md,
// session 17. Run: build/bench/heat_adjoint_fusion [n, default 2048] [NT, even,
// default 10] [reps, default 5]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using Rows = std::vector<double>;

struct Problem {
  int64_t n;
  double coef;  // dt / h²
  double dt;
  Rows zero;  // a row of n + 2 zeros: the halos and rows −1 and n of Z
};

// Row i of an n × n array, or zeros outside it.
const double* row_or_zero(const Problem& p, const double* a, int64_t i) {
  return i < 0 || i >= p.n ? p.zero.data() : a + i * p.n;
}

// u⁺ = u + c·κ ⊙ stencil(u) + dt·f, zero halos.
void forward(const Problem& p,
             const double* u,
             const double* kappa,
             const double* f,
             double* out) {
  const int64_t n = p.n;
  for (int64_t i = 0; i < n; ++i) {
    const double* row = u + i * n;
    const double* north = row_or_zero(p, u, i - 1);
    const double* south = row_or_zero(p, u, i + 1);
    const double* k = kappa + i * n;
    const double* src = f + i * n;
    double* y = out + i * n;
    auto point = [&](int64_t j, double west, double east) {
      const double lap = north[j] + south[j] + west + east - 4 * row[j];
      y[j] = row[j] + p.coef * k[j] * lap + p.dt * src[j];
    };
    for (int64_t j = 1; j + 1 < n; ++j) point(j, row[j - 1], row[j + 1]);
    point(0, 0.0, row[1]);
    point(n - 1, row[n - 2], 0.0);
  }
}

// Z row = κ ⊙ G, padded with a zero on either side (index j + 1 is point j).
void z_row(const Problem& p, const double* kappa, const double* g, double* z) {
  z[0] = z[p.n + 1] = 0;
  for (int64_t j = 0; j < p.n; ++j) z[j + 1] = kappa[j] * g[j];
}

// One row of one adjoint step: ū = G + c·stencil(Z), κ̄ += c·G ⊙ stencil(u).
void adjoint_row(const Problem& p,
                 const double* __restrict g,
                 const double* __restrict zn,
                 const double* __restrict zc,
                 const double* __restrict zs,
                 const double* __restrict un,
                 const double* __restrict uc,
                 const double* __restrict us,
                 double* __restrict out,
                 double* __restrict kappa_bar) {
  const int64_t n = p.n;
  const double c = p.coef;
  auto point = [&](int64_t j, double west, double east) {
    out[j] =
        g[j] + c * (zn[j + 1] + zs[j + 1] + zc[j] + zc[j + 2] - 4 * zc[j + 1]);
    kappa_bar[j] += c * g[j] * (un[j] + us[j] + west + east - 4 * uc[j]);
  };
  for (int64_t j = 1; j + 1 < n; ++j) point(j, uc[j - 1], uc[j + 1]);
  point(0, 0.0, uc[1]);
  point(n - 1, uc[n - 2], 0.0);
}

// Three rolling padded rows, indexed by row number.
struct Ring {
  explicit Ring(int64_t width) : width(width), rows(3 * width) {}
  double* operator[](int64_t i) { return rows.data() + (i + 3) % 3 * width; }
  int64_t width;
  Rows rows;
};

// One step back: ū from g = ū⁺ and the taped u.
void adjoint_step(const Problem& p,
                  const double* g,
                  const double* u,
                  const double* kappa,
                  double* kappa_bar,
                  double* out) {
  const int64_t n = p.n;
  Ring z(n + 2);
  auto fill = [&](int64_t i) {
    if (i < 0 || i >= n)
      std::fill(z[i], z[i] + n + 2, 0.0);
    else
      z_row(p, kappa + i * n, g + i * n, z[i]);
  };
  fill(-1);
  fill(0);
  for (int64_t i = 0; i < n; ++i) {
    fill(i + 1);
    adjoint_row(p,
                g + i * n,
                z[i - 1],
                z[i],
                z[i + 1],
                row_or_zero(p, u, i - 1),
                u + i * n,
                row_or_zero(p, u, i + 1),
                out + i * n,
                kappa_bar + i * n);
  }
}

// Two steps back in one pass: ū_t from g = ū_{t+2} and the taped u_{t+1}
// (`later`) and u_t (`earlier`). Row i of the middle cotangent is made one
// row ahead of row i − 1 of ū_t, which reads it.
void adjoint_two_steps(const Problem& p,
                       const double* g,
                       const double* later,
                       const double* earlier,
                       const double* kappa,
                       double* kappa_bar,
                       double* out) {
  const int64_t n = p.n;
  Ring z_later(n + 2), z_earlier(n + 2), middle(n);
  auto fill_later = [&](int64_t i) {
    if (i < 0 || i >= n)
      std::fill(z_later[i], z_later[i] + n + 2, 0.0);
    else
      z_row(p, kappa + i * n, g + i * n, z_later[i]);
  };
  auto fill_earlier = [&](int64_t i) {
    if (i < 0 || i >= n)
      std::fill(z_earlier[i], z_earlier[i] + n + 2, 0.0);
    else
      z_row(p, kappa + i * n, middle[i], z_earlier[i]);
  };
  fill_later(-1);
  fill_later(0);
  fill_earlier(-1);
  for (int64_t i = 0; i <= n; ++i) {
    if (i < n) {
      fill_later(i + 1);
      adjoint_row(p,
                  g + i * n,
                  z_later[i - 1],
                  z_later[i],
                  z_later[i + 1],
                  row_or_zero(p, later, i - 1),
                  later + i * n,
                  row_or_zero(p, later, i + 1),
                  middle[i],
                  kappa_bar + i * n);
    }
    fill_earlier(i);
    if (i == 0) continue;
    const int64_t r = i - 1;
    adjoint_row(p,
                middle[r],
                z_earlier[r - 1],
                z_earlier[r],
                z_earlier[r + 1],
                row_or_zero(p, earlier, r - 1),
                earlier + r * n,
                row_or_zero(p, earlier, r + 1),
                out + r * n,
                kappa_bar + r * n);
  }
}

double milliseconds(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atol(argv[1]) : 2048;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 5;
  if (n < 2 || steps < 2 || steps % 2 != 0 || reps < 1) {
    std::fprintf(stderr,
                 "usage: heat_adjoint_fusion [n >= 2] [NT even] [reps]\n");
    return 2;
  }
  const int64_t points = n * n;
  const double h = 1.0 / static_cast<double>(n + 1);
  Problem p{n, 0.2, 0.2 * h * h, Rows(n + 2, 0.0)};
  Rows kappa(points), f(points, 1.0), seed(points);
  std::vector<Rows> tape(steps + 1, Rows(points));
  for (int64_t q = 0; q < points; ++q) {
    kappa[q] = 1 + 0.5 * static_cast<double>(q * 7919 % 1000) / 1000;
    tape[0][q] = static_cast<double>(q * 104729 % 997) / 997;
    seed[q] = static_cast<double>(q * 31 % 101) / 101;
  }
  // ū alternates between two buffers; κ̄ accumulates in place.
  Rows one_a(points), one_b(points), one_kappa(points);
  Rows two_a(points), two_b(points), two_kappa(points);
  std::vector<double> forward_ms, one_ms, two_ms;
  bool same = true;
  for (int rep = 0; rep < reps; ++rep) {
    auto t0 = Clock::now();
    for (int t = 0; t < steps; ++t)
      forward(p, tape[t].data(), kappa.data(), f.data(), tape[t + 1].data());
    auto t1 = Clock::now();
    forward_ms.push_back(milliseconds(t0, t1) / steps);

    one_a = seed;
    std::fill(one_kappa.begin(), one_kappa.end(), 0.0);
    Rows *from = &one_a, *to = &one_b;
    t0 = Clock::now();
    for (int t = steps - 1; t >= 0; --t) {
      adjoint_step(p,
                   from->data(),
                   tape[t].data(),
                   kappa.data(),
                   one_kappa.data(),
                   to->data());
      std::swap(from, to);
    }
    t1 = Clock::now();
    one_ms.push_back(milliseconds(t0, t1) / steps);
    const Rows* one_result = from;

    two_a = seed;
    std::fill(two_kappa.begin(), two_kappa.end(), 0.0);
    from = &two_a, to = &two_b;
    t0 = Clock::now();
    for (int t = steps - 1; t >= 1; t -= 2) {
      adjoint_two_steps(p,
                        from->data(),
                        tape[t].data(),
                        tape[t - 1].data(),
                        kappa.data(),
                        two_kappa.data(),
                        to->data());
      std::swap(from, to);
    }
    t1 = Clock::now();
    two_ms.push_back(milliseconds(t0, t1) / steps);
    same = same && *from == *one_result && two_kappa == one_kappa;
  }
  const double fwd = median(forward_ms), one = median(one_ms),
               two = median(two_ms);
  std::printf(
      "RESULT bench=heat_adjoint_fusion n=%ld NT=%d reps=%d "
      "forward_ms_per_step=%.3f one_step_adjoint_ms_per_step=%.3f "
      "two_step_adjoint_ms_per_step=%.3f one_over_forward=%.2f "
      "two_over_forward=%.2f two_over_one=%.3f bitwise_equal=%d\n",
      static_cast<long>(n),
      steps,
      reps,
      fwd,
      one,
      two,
      one / fwd,
      two / fwd,
      two / one,
      same ? 1 : 0);
  return same ? 0 : 1;
}
