// One generated stencil kernel against another and against a hand-written
// pass, in one process: the 2-D heat adjoint's kernel with its term c·κ·ȳ
// shared through the ring, ū written over ȳ (the stencil op's kernel for
// heat2d's gradient from session 45 to 48), with its middle written with
// vectors and shuffles, the same with the scalar loop
// (StencilSource::vectors false), the kernel without shared terms writing
// ū apart (the op's kernel in 2-D since session 49, and before session
// 45: detail::shares_terms), and the built-in heat adjoint's row pass
// (solvers/heat_adjoint_row_impl.h: rolling rows of Z = κ·ȳ, vectors and
// shuffles, ū over ȳ as heat_step's adjoint writes it). Kernels only: no
// graph, no halo exchange, no allocation in the timed loop. Each round
// runs every kernel over `steps` steps of an n × n patch, interleaved, its
// state read from a tape of `steps` arrays (out of the caches, as an
// adjoint reads its loop's tape); ū written over ȳ, or ū and ȳ swapping
// buffers. Prints each kernel's median and fastest round; the three
// generated kernels' results must be bitwise equal, the built-in's within
// 1e-12 (it factors c out: other rounding), else exit 1. On a machine
// shared with others, differences between kernels within one run are what
// to read, not the seconds.
//   build/bench/stencil_kernel_ab [--n 256] [--steps 500] [--rounds 31]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "grid/stencil_codegen.h"
#include "solvers/heat_adjoint_row_impl.h"

namespace {

using adgraph::grid::CompiledStencil;
using adgraph::grid::KernelArgs;
using adgraph::grid::StencilSource;

constexpr double kCoef = 0.2;  // c = dt / h²

// heat2d's step y = u + c·κ·lap(u) (+ dt·f, which has no cotangent here)
// differentiated as the stencil op does (grid/stencil.cc): ū by the gather
// form, κ̄ summed onto its input 3 (in0 u, in1 κ, in2 ȳ, in3 κ̄).
StencilSource heat_adjoint() {
  auto term = [](const char* at) {
    return std::string("where(inside[") + at + "],mul(in2[" + at +
           "],mul(0.2,in1[" + at + "])),0)";
  };
  const std::string u_bar = "add(add(add(add(" + term("1,0") + "," +
                            term("0,1") +
                            "),mul(in2,add(1,mul(mul(0.2,in1),-4)))),"
                            "" +
                            term("0,-1") + ")," + term("-1,0") + ")";
  const std::string k_bar =
      "mul(in2,mul(sub(add(add(add(in0[-1,0],in0[1,0]),in0[0,-1]),in0[0,1]),"
      "mul(4,in0)),0.2))";
  StencilSource s;
  s.outputs = {adgraph::grid::parse(u_bar), adgraph::grid::parse(k_bar)};
  s.summed = {false, false};
  s.init = {-1, 3};
  s.ndim = 2;
  s.num_inputs = 4;
  s.scalar = {false, false, false, false};
  s.prefetch = {true, false, false, false};
  s.periodic = {false, false};
  return s;
}

struct Patch {
  int64_t n;
  std::vector<std::vector<double>> tape;  // u at every step
  std::vector<double> kappa, ybar0;
  std::vector<double> zero_pad;  // the padded copies: zero ghosts
};

// One adjoint sweep with a generated kernel of source `src`: ū written
// over ȳ (in_place, as the loop adjoint donates ȳ), or into the other
// buffer, which is then the next step's ȳ; κ̄ summed in place.
void run_generated(const StencilSource& src,
                   const CompiledStencil& k,
                   const std::vector<double>& constants,
                   const Patch& p,
                   bool in_place,
                   std::vector<double>& ybar,
                   std::vector<double>& ubar,
                   std::vector<double>& kbar) {
  const int64_t n = p.n, pn = n + 2;
  const int64_t st[12] = {0, n, 1, 0, n, 1, 0, n, 1, 0, n, 1};
  const int64_t pst[12] = {0, pn, 1, 0, pn, 1, 0, pn, 1, 0, pn, 1};
  const int64_t ost[6] = {0, n, 1, 0, n, 1};
  const int64_t lo[3] = {0, 0, 0}, hi[3] = {1, n, n}, mid[2] = {1, n - 1};
  const int64_t ext[2] = {n, n}, gpos[2] = {0, 0};
  const int64_t size[4] = {n * n, n * n, n * n, n * n};
  const double* pad = p.zero_pad.data() + pn + 1;
  const double* pin[4] = {pad, pad, pad, pad};
  std::vector<double> ring(adgraph::grid::ring_doubles(src, {n, n}));
  double *yb = ybar.data(), *ub = ubar.data();
  for (auto s = static_cast<int64_t>(p.tape.size()) - 1; s >= 0; --s) {
    if (in_place) ub = yb;
    const double* in[4] = {p.tape[s].data(), p.kappa.data(), yb, kbar.data()};
    double* out[2] = {ub, kbar.data()};
    const KernelArgs args{in,
                          st,
                          pin,
                          pst,
                          out,
                          ost,
                          lo,
                          hi,
                          mid,
                          ext,
                          gpos,
                          ext,
                          constants.data(),
                          size,
                          ring.data()};
    k.run(&args);
    if (!in_place) std::swap(yb, ub);
  }
  if (yb != ybar.data()) std::swap(ybar, ubar);
}

// The built-in heat adjoint's pass (solvers/heat_step_adjoint.cc, one rank,
// zero halos): per row, the next row of Z = κ·ȳ into three rolling rows,
// then adjoint_row; the tape row five ahead prefetched.
void run_builtin(const Patch& p,
                 std::vector<double>& ybar,
                 std::vector<double>& ubar,
                 std::vector<double>& kbar) {
  namespace d = adgraph::solvers::detail;
  const int64_t n = p.n, m = p.n;
  const int64_t w = (m + 2 + 7) / 8 * 8;
  std::vector<double> buffers(4 * w + 8, 0.0), zero_row(m, 0.0);
  double* base = buffers.data();
  while ((reinterpret_cast<std::uintptr_t>(base + 1) & 63) != 0) ++base;
  double* yb = ybar.data();
  for (auto s = static_cast<int64_t>(p.tape.size()) - 1; s >= 0; --s) {
    double* ub = yb;  // ū over ȳ, as heat_step's adjoint writes it
    const double *u = p.tape[s].data(), *kappa = p.kappa.data(), *g = yb;
    double *zero = base, *zp = zero + w, *zc = zp + w, *zn = zc + w;
    auto z_row = [&](int64_t i, double* z) {
      for (int64_t j = 0; j < m; ++j)
        z[j + 1] = kappa[i * m + j] * g[i * m + j];
    };
    z_row(0, zc);
    for (int64_t i = 0; i < n; ++i) {
      const bool south = i + 1 < n;
      if (south) z_row(i + 1, zn);
      if (i + 5 < n)
        for (int64_t j = 0; j < m; j += 8)
          __builtin_prefetch(u + (i + 5) * m + j, 0, 3);
      const double* ur = u + i * m;
      const double *zno = i > 0 ? zp : zero, *zso = south ? zn : zero;
      const double* un = i > 0 ? ur - m : zero_row.data();
      const double* us = south ? ur + m : zero_row.data();
      // The row's two ends, point by point as adjoint_of_row does them
      // (zero halos); the middle by adjoint_row.
      for (const int64_t j : {int64_t{0}, m - 1}) {
        const double gj = g[i * m + j];
        ub[i * m + j] = gj + kCoef * (zno[j + 1] + zso[j + 1] + zc[j] +
                                      zc[j + 2] - 4 * zc[j + 1]);
        kbar[i * m + j] += kCoef * gj *
                           (un[j] + us[j] + (j > 0 ? ur[j - 1] : 0.0) +
                            (j + 1 < m ? ur[j + 1] : 0.0) - 4 * ur[j]);
      }
      d::adjoint_row<false>(1,
                            m - 1,
                            kCoef,
                            g + i * m,
                            zno,
                            zc,
                            zso,
                            un,
                            ur,
                            us,
                            ub + i * m,
                            kbar.data() + i * m);
      std::swap(zp, zc);
      std::swap(zc, zn);
    }
  }
  (void)ubar;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "the 2-D heat adjoint's generated kernel (vectors, scalar loop) "
      "against the built-in's row pass, kernels only, interleaved"};
  int64_t n = 256, steps = 500;
  int rounds = 31;
  app.add_option("--n", n, "points per axis")
      ->check(CLI::Range(int64_t{16}, int64_t{1} << 14));
  app.add_option("--steps", steps, "steps a round (the tape's length)")
      ->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "timed rounds")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  Patch p;
  p.n = n;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  p.tape.assign(steps, std::vector<double>(n * n));
  for (auto& t : p.tape)
    for (double& v : t) v = unit(rng);
  p.kappa.resize(n * n);
  for (double& v : p.kappa) v = 0.5 + unit(rng);
  p.ybar0.resize(n * n);
  for (double& v : p.ybar0) v = 1e-3 * unit(rng);
  p.zero_pad.assign((n + 2) * (n + 2), 0.0);

  StencilSource vec = heat_adjoint(), scalar = heat_adjoint(),
                unshared = heat_adjoint();
  scalar.vectors = false;
  unshared.shared = false;
  const std::vector<double> constants =
      adgraph::grid::kernel_constants(vec.outputs);
  const CompiledStencil k_vec = adgraph::grid::compile_stencil(vec);
  const CompiledStencil k_scalar = adgraph::grid::compile_stencil(scalar);
  const CompiledStencil k_unshared = adgraph::grid::compile_stencil(unshared);

  struct Impl {
    std::string name;
    std::function<void(
        std::vector<double>&, std::vector<double>&, std::vector<double>&)>
        run;
    std::vector<double> times, kbar, ubar;  // κ̄ and the last ū
  };
  std::vector<Impl> impls = {
      {"generated_vectors",
       [&](auto& y, auto& u, auto& k) {
         run_generated(vec, k_vec, constants, p, true, y, u, k);
       }},
      {"generated_scalar",
       [&](auto& y, auto& u, auto& k) {
         run_generated(scalar, k_scalar, constants, p, true, y, u, k);
       }},
      {"unshared_apart",
       [&](auto& y, auto& u, auto& k) {
         run_generated(unshared, k_unshared, constants, p, false, y, u, k);
       }},
      {"builtin_rows",
       [&](auto& y, auto& u, auto& k) { run_builtin(p, y, u, k); }}};
  std::vector<double> ybar(n * n), ubar(n * n), kbar(n * n);
  for (int r = -1; r < rounds; ++r) {  // round −1 warms up
    for (Impl& im : impls) {
      ybar = p.ybar0;
      std::fill(kbar.begin(), kbar.end(), 0.0);
      const auto t0 = std::chrono::steady_clock::now();
      im.run(ybar, ubar, kbar);
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count();
      if (r >= 0) im.times.push_back(s);
      im.kbar = kbar;
      im.ubar = ybar;  // ū of step 0: over ȳ, or swapped back there
    }
  }
  for (Impl& im : impls) std::sort(im.times.begin(), im.times.end());
  for (const Impl& im : impls) {
    std::printf(
        "RESULT kernel=%s n=%lld steps=%lld rounds=%d median_s=%.5f "
        "min_s=%.5f ratio_to_builtin=%.3f\n",
        im.name.c_str(),
        static_cast<long long>(n),
        static_cast<long long>(steps),
        rounds,
        im.times[im.times.size() / 2],
        im.times[0],
        im.times[im.times.size() / 2] /
            impls[3].times[impls[3].times.size() / 2]);
  }
  bool ok = true;
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = i * n + j;
      for (int g = 1; g < 3; ++g) {
        ok = ok && impls[0].kbar[at] == impls[g].kbar[at] &&
             impls[0].ubar[at] == impls[g].ubar[at];
      }
      for (std::vector<double> Impl::*v : {&Impl::kbar, &Impl::ubar}) {
        const double b = (impls[3].*v)[at], a = (impls[0].*v)[at];
        worst = std::max(worst, std::abs(a - b) / std::max(1.0, std::abs(b)));
      }
    }
  }
  std::printf("CHECK generated_bitwise=%s builtin_max_rel_diff=%.3g\n",
              ok ? "yes" : "no",
              worst);
  return ok && worst <= 1e-12 ? 0 : 1;
}
