// Implicit heat (backward Euler, Crank–Nicolson) against an independent
// implementation of the same discrete problem: dense Eigen matrices on the
// whole grid, stepped with LU, and a hand-written adjoint for dL/dκ. On
// every patch grid of the run's ranks; checkpoint schedules bitwise equal.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>

#include "solvers/heat_solver.h"
#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;
using solvers::HeatConfig;
using solvers::HeatScheme;
using solvers::Patch;

constexpr int kN = 12;  // divisible by every patch count up to 4

std::vector<HeatConfig> configs(HeatScheme scheme) {
  std::vector<HeatConfig> out;
  const int size = world_size();
  for (int px = 1; px <= size; ++px) {
    if (size % px != 0) continue;
    HeatConfig c;
    c.nx = c.ny = kN;
    c.px = px;
    c.py = size / px;
    c.nt = 5;
    c.scheme = scheme;
    c.dt = 10 * solvers::heat_default_dt(c);  // beyond the explicit limit
    c.implicit_solver.rtol = 1e-13;
    out.push_back(c);
  }
  return out;
}

double weight_at(int64_t i, int64_t j) { return std::sin(1.0 * i + 2.0 * j); }

struct Oracle {
  double loss = 0;
  Eigen::VectorXd gradient;  // dL/dκ, row-major over the grid
};

// Whole-grid vectors, row-major.
Eigen::VectorXd whole(const HeatConfig& c,
                      Tensor (*make)(const HeatConfig&, const Patch&)) {
  HeatConfig one = c;
  one.px = one.py = 1;
  Tensor t = make(one, solvers::patch_of(one, 0));
  return Eigen::Map<const Eigen::VectorXd>(t.data(), t.size());
}

Oracle oracle(const HeatConfig& c) {
  const int n = kN * kN;
  const double h2 = c.h() * c.h(), dt = solvers::heat_dt(c);
  Eigen::MatrixXd lap = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) {
      const int p = i * kN + j;
      lap(p, p) = -4.0 / h2;
      if (i > 0) lap(p, p - kN) = 1.0 / h2;
      if (i + 1 < kN) lap(p, p + kN) = 1.0 / h2;
      if (j > 0) lap(p, p - 1) = 1.0 / h2;
      if (j + 1 < kN) lap(p, p + 1) = 1.0 / h2;
    }
  }
  const Eigen::VectorXd kappa = whole(c, solvers::heat_kappa_true);
  const Eigen::VectorXd f = whole(c, solvers::heat_source);
  const double theta = c.scheme == HeatScheme::kCrankNicolson ? 0.5 : 1.0;
  const Eigen::MatrixXd kd = kappa.asDiagonal() * lap;
  const Eigen::MatrixXd a = Eigen::MatrixXd::Identity(n, n) - theta * dt * kd;
  const Eigen::MatrixXd b =
      Eigen::MatrixXd::Identity(n, n) + (1 - theta) * dt * kd;
  const Eigen::PartialPivLU<Eigen::MatrixXd> lu(a);
  std::vector<Eigen::VectorXd> u = {whole(c, solvers::heat_initial)};
  for (int t = 0; t < c.nt; ++t) u.push_back(lu.solve(b * u[t] + dt * f));
  Eigen::VectorXd w(n);
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j) w[i * kN + j] = weight_at(i, j);
  Oracle o;
  o.loss = w.dot(u[c.nt]);
  o.gradient = Eigen::VectorXd::Zero(n);
  Eigen::VectorXd bar = w;
  const Eigen::PartialPivLU<Eigen::MatrixXd> lu_t(a.transpose());
  for (int t = c.nt - 1; t >= 0; --t) {
    const Eigen::VectorXd lambda = lu_t.solve(bar);
    o.gradient += (theta * dt * lambda.array() * (lap * u[t + 1]).array() +
                   (1 - theta) * dt * lambda.array() * (lap * u[t]).array())
                      .matrix();
    bar = b.transpose() * lambda;
  }
  return o;
}

struct Result {
  double loss;
  Tensor gradient;
};

Result run(const HeatConfig& c) {
  const Patch p = solvers::patch_of(c, world_rank());
  Graph g;
  Value kappa = g.placeholder("kappa", {p.n, p.m});
  Value u0 = g.constant(solvers::heat_initial(c, p));
  Value f = g.constant(solvers::heat_source(c, p));
  Tensor w(Shape{p.n, p.m});
  for (int64_t a = 0; a < p.n; ++a)
    for (int64_t b = 0; b < p.m; ++b)
      w[a * p.m + b] = weight_at(p.row0 + a, p.col0 + b);
  Value loss = sum(g.constant(w) * solvers::heat_solve(u0, kappa, f, c));
  Value grad = gradient(loss, kappa);
  Session s(g);
  auto out = s.run({loss, grad}, {{kappa, solvers::heat_kappa_true(c, p)}});
  return {Communicator::world()->allreduce_sum(out[0].item()), out[1]};
}

void expect_matches_oracle(HeatScheme scheme) {
  for (const HeatConfig& c : configs(scheme)) {
    const Oracle o = oracle(c);
    const Result r = run(c);
    const std::string where = std::to_string(c.px) + "x" + std::to_string(c.py);
    EXPECT_NEAR(r.loss, o.loss, 1e-10 * std::fabs(o.loss)) << where;
    const Patch p = solvers::patch_of(c, world_rank());
    const double scale = o.gradient.cwiseAbs().maxCoeff();
    for (int64_t a = 0; a < p.n; ++a) {
      for (int64_t b = 0; b < p.m; ++b) {
        const double want = o.gradient[(p.row0 + a) * kN + p.col0 + b];
        EXPECT_NEAR(r.gradient[a * p.m + b], want, 1e-8 * scale)
            << where << " at " << p.row0 + a << "," << p.col0 + b;
      }
    }
  }
}

TEST(ImplicitHeat, BackwardEulerMatchesADenseImplementation) {
  expect_matches_oracle(HeatScheme::kBackwardEuler);
}

TEST(ImplicitHeat, CrankNicolsonMatchesADenseImplementation) {
  expect_matches_oracle(HeatScheme::kCrankNicolson);
}

TEST(ImplicitHeat, EveryCheckpointScheduleGivesTheSameBits) {
  for (HeatScheme scheme :
       {HeatScheme::kBackwardEuler, HeatScheme::kCrankNicolson}) {
    HeatConfig c = configs(scheme).back();
    c.checkpoints = CheckpointSchedule::store_all();
    const Result all = run(c);
    for (CheckpointSchedule s : {CheckpointSchedule::binomial(1),
                                 CheckpointSchedule::binomial(2),
                                 CheckpointSchedule::every(2)}) {
      c.checkpoints = s;
      const Result other = run(c);
      EXPECT_EQ(other.loss, all.loss) << s.describe();
      EXPECT_EQ(other.gradient.to_vector(), all.gradient.to_vector())
          << s.describe();
    }
  }
}

TEST(ImplicitHeat, ConfigRefusesOverlapAndBadSolverOptions) {
  HeatConfig c;
  c.scheme = HeatScheme::kBackwardEuler;
  c.overlap = true;
  std::string error;
  EXPECT_FALSE(c.is_valid(1, &error));
  EXPECT_EQ(error, "overlap applies to the explicit scheme only");
  c.overlap = false;
  c.implicit_solver.ksp = "minres";
  EXPECT_FALSE(c.is_valid(1, &error));
  EXPECT_EQ(error,
            "implicit_solver.ksp: must be cg, gmres, bcgs or preonly, got "
            "\"minres\"");
  solvers::HeatScheme parsed;
  EXPECT_TRUE(solvers::parse_heat_scheme("crank_nicolson", &parsed));
  EXPECT_EQ(parsed, HeatScheme::kCrankNicolson);
  EXPECT_FALSE(solvers::parse_heat_scheme("implicit", &parsed));
}

}  // namespace
}  // namespace adgraph
