// The heat inversion is bitwise the same on every patch grid (issue #36):
// for each px × py that the test's ranks allow, the problem is built on a
// sub-communicator of the first px·py ranks, and its loss, its whole
// gathered gradient, 20 L-BFGS iterations' loss and gradient-norm
// histories and the final κ must equal the 1 × 1 run's, compared with ==
// (memcmp for the fields). Also with bounds (L-BFGS-B), across checkpoint
// schedules, with the overlapped step, with the replicated κ layout, and
// on 1 or 2 threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph::solvers {
namespace {

struct Result {
  double loss = 0;
  std::vector<double> gradient;  // the whole grid, row-major
  std::vector<double> f_history, gradient_norm_history;
  std::vector<double> kappa;  // the whole grid after the fit
  double kappa_error = 0;
};

// The patch field `part` placed in the whole grid, on every rank of
// `comm` (the other patches are zeros there, so the sum is exact).
std::vector<double> whole_grid(Communicator& comm,
                               const HeatConfig& c,
                               const Tensor& part) {
  const Patch p = patch_of(c, comm.rank());
  std::vector<double> all(static_cast<std::size_t>(c.nx) * c.ny, 0.0);
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t j = 0; j < p.m; ++j)
      all[(p.row0 + i) * c.ny + p.col0 + j] = part[i * p.m + j];
  comm.allreduce(all.data(), all.data(), all.size(), ReduceOp::kSum);
  return all;
}

Result solve_on(HeatInverseOptions o,
                int px,
                int py,
                std::shared_ptr<Communicator> comm) {
  Result r;
  o.config.px = px;
  o.config.py = py;
  HeatInverse problem(o, comm);
  // Replicated: rank 0 holds the whole grid.
  auto field = [&](const Tensor& t) {
    return o.replicated ? t.to_vector() : whole_grid(*comm, o.config, t);
  };
  Tensor kappa = problem.kappa_start();
  auto [loss, gradient] = problem.loss_and_gradient(kappa);
  r.loss = loss;
  r.gradient = field(gradient);
  optim::LbfgsOptions options;
  options.max_iterations = 20;
  options.tolerance_gradient = 0;
  const optim::LbfgsSummary summary = problem.fit(kappa, options);
  r.f_history = summary.f_history;
  r.gradient_norm_history = summary.gradient_norm_history;
  r.kappa = field(kappa);
  r.kappa_error = problem.relative_kappa_error(kappa);
  return r;
}

// Runs `o` on px × py patches on world ranks [0, px·py); the result is
// valid on world rank 0 (every world rank takes part in the split). An
// error (the same on every member) fails the test without leaving the
// other ranks waiting in the next split.
Result run_on(const HeatInverseOptions& o, int px, int py) {
  auto world = Communicator::world();
  const bool member = world->rank() < px * py;
  auto comm = world->split(member ? 0 : 1, world->rank());
  if (!member) return {};
  try {
    return solve_on(o, px, py, comm);
  } catch (const std::exception& e) {
    ADD_FAILURE() << px << " x " << py << ": " << e.what();
    return {};
  }
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

void expect_same(const Result& got, const Result& want, const std::string& at) {
  if (testing::world_rank() != 0) return;
  EXPECT_EQ(got.loss, want.loss) << at;
  EXPECT_TRUE(same_bits(got.gradient, want.gradient)) << at << ": gradient";
  EXPECT_EQ(got.f_history.size(), 21u) << at;
  EXPECT_TRUE(same_bits(got.f_history, want.f_history)) << at << ": f";
  EXPECT_TRUE(same_bits(got.gradient_norm_history, want.gradient_norm_history))
      << at << ": gradient norms";
  EXPECT_TRUE(same_bits(got.kappa, want.kappa)) << at << ": kappa";
  EXPECT_EQ(got.kappa_error, want.kappa_error) << at;
}

// Every px × py with px·py <= the world's ranks, 1 × 1 first.
std::vector<std::pair<int, int>> layouts() {
  std::vector<std::pair<int, int>> out;
  const int size = testing::world_size();
  for (int px = 1; px <= size; ++px)
    for (int py = 1; px * py <= size; ++py) out.emplace_back(px, py);
  return out;
}

// 24² (divisible by 1 to 4), NT = 60: small enough for the sanitizer
// suites, large enough that every patch has interior points.
HeatInverseOptions small_problem() {
  HeatInverseOptions o;
  o.config.nx = o.config.ny = 24;
  o.config.nt = 60;
  return o;
}

void expect_layout_independent(const HeatInverseOptions& o,
                               const std::string& what) {
  const Result reference = run_on(o, 1, 1);
  if (testing::world_rank() == 0) {
    ASSERT_EQ(reference.gradient.size(),
              static_cast<std::size_t>(o.config.nx) * o.config.ny);
    EXPECT_LT(reference.f_history.back(), reference.f_history.front());
  }
  for (const auto& [px, py] : layouts()) {
    if (px * py == 1) continue;
    expect_same(run_on(o, px, py),
                reference,
                what + ", " + std::to_string(px) + " x " + std::to_string(py));
  }
}

TEST(HeatLayout, ThePlainProblemIsTheSameOnEveryPatchGrid) {
  expect_layout_independent(small_problem(), "plain");
}

TEST(HeatLayout, SensorsNoiseAndRegularizationAreTheSameOnEveryPatchGrid) {
  HeatInverseOptions o = small_problem();
  o.sensors_every = 3;
  o.observe_steps = {20, 40, 60};
  o.noise = 0.01;
  o.reg_tikhonov = 1e-6;
  o.reg_smooth = 1e-4;
  expect_layout_independent(o, "sensors, noise, regularization");
}

TEST(HeatLayout, BoundsAreTheSameOnEveryPatchGrid) {
  // L-BFGS-B: κ starts at 1, on its lower bound, and the bump's top
  // (κ to 1.5) is cut at 1.2, so the held set changes from most of the
  // grid to a few points along the run (both ways of summing Wᵀ·Z·Zᵀ·W,
  // optim/compact_bfgs.cc).
  HeatInverseOptions o = small_problem();
  o.sensors_every = 3;
  o.reg_smooth = 1e-4;
  o.kappa_min = 1.0;
  o.kappa_max = 1.2;
  expect_layout_independent(o, "bounds");
}

TEST(HeatLayout, UnevenPatchesAreTheSameOnEveryPatchGrid) {
  // 25 x 23: 13 + 12, 9 + 8 + 8, 7 + 6 + 6 + 6 rows; likewise columns.
  HeatInverseOptions o = small_problem();
  o.config.nx = 25;
  o.config.ny = 23;
  o.sensors_every = 4;
  o.reg_smooth = 1e-4;
  expect_layout_independent(o, "25 x 23");
}

TEST(HeatLayout, CheckpointSchedulesAndOverlapChangeNoBit) {
  const Result reference = run_on(small_problem(), 1, 1);
  for (const auto& [px, py] : layouts()) {
    for (int variant = 0; variant < 2; ++variant) {
      HeatInverseOptions o = small_problem();
      if (variant == 0) o.config.checkpoints = CheckpointSchedule::binomial(4);
      if (variant == 1) o.config.overlap = true;
      expect_same(run_on(o, px, py),
                  reference,
                  std::string(variant == 0 ? "binomial(4)" : "overlap") + ", " +
                      std::to_string(px) + " x " + std::to_string(py));
    }
  }
}

TEST(HeatLayout, OneOrTwoThreadsChangeNoBit) {
  // 128² = 16384 points: the step kernels split their rows between OpenMP
  // threads from this size on (solvers/heat_step_impl.h).
  HeatInverseOptions o = small_problem();
  o.config.nx = o.config.ny = 128;
  o.config.nt = 10;
  o.sensors_every = 5;
  o.reg_smooth = 1e-4;
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const Result one = run_on(o, 1, 1);
  omp_set_num_threads(2);
  const Result two = run_on(o, 1, 1);
  omp_set_num_threads(threads);
  expect_same(two, one, "2 threads against 1");
}

TEST(HeatLayout, TheReplicatedLayoutIsTheSameOnEveryPatchGrid) {
  HeatInverseOptions o = small_problem();
  o.replicated = true;
  expect_layout_independent(o, "replicated");
}

}  // namespace
}  // namespace adgraph::solvers
