// L-BFGS across ranks: replicated (ADCME) and sharded layouts, lockstep, and
// checkpoint/restart.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph::optim {
namespace {

using adgraph::testing::world_rank;
using adgraph::testing::world_size;

// Root of Σ_{r<P} θ^r = 2 in (0, 1], by bisection (independent of L-BFGS).
double polynomial_root(int size) {
  if (size == 1) return 1.0;  // f ≡ 1: every θ is a minimiser; θ stays at 1
  double lo = 0, hi = 1;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    double s = 0;
    for (int r = 0; r < size; ++r) s += std::pow(mid, r);
    (s < 2 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

TEST(LbfgsMpi, AdcmePolynomial) {
  // min (sum(mpi_sum(fθ^rank)) − 2)² with fθ = mpi_bcast(θ), from θ = 1.
  const int size = world_size();
  Graph g;
  Value theta = g.placeholder("theta", {1});
  Value l = pow(mpi_bcast(theta), mpi_rank(g));
  Value loss = square(sum(mpi_sum(l)) - 2.0);
  std::vector<Tensor> values = {Tensor({1.0})};
  LbfgsOptions options;
  options.tolerance_gradient = 1e-12;
  LbfgsSummary s = minimize(loss, {theta}, values, {}, options);
  EXPECT_NEAR(values[0][0], polynomial_root(size), 1e-10) << s.message;
  EXPECT_LE(s.iterations, 10) << s.message;
  if (size == 4) {
    EXPECT_NEAR(values[0][0], 0.5436890126920764, 1e-10);
  }
  if (size == 3) {
    EXPECT_NEAR(values[0][0], (std::sqrt(5.0) - 1) / 2, 1e-10);
  }
  // Rank 0's loss is the reported f: 0 at the root, 1 on one rank (f ≡ 1).
  EXPECT_NEAR(s.final_f, size == 1 ? 1.0 : 0.0, 1e-18);
  if (world_rank() == 0)
    std::printf("polynomial on %d ranks: %s\n", size, s.message.c_str());
}

// f = Σ_i a_i (x_i − t_i)² + x_i⁴/4 + (Σ_i x_i)²/2 over a global vector of
// 24 entries; a rank owns a contiguous slice. `sum_all` gives Σ_i x_i.
double sharded_objective(const Eigen::VectorXd& x,
                         Eigen::VectorXd& g,
                         int64_t offset,
                         const std::function<double(double)>& sum_all,
                         int size) {
  double f = 0, local_sum = 0;
  for (int64_t k = 0; k < x.size(); ++k) {
    const double i = static_cast<double>(offset + k);
    const double a = 1.0 + 0.5 * std::sin(i), t = std::cos(0.7 * i);
    f += a * (x[k] - t) * (x[k] - t) + 0.25 * std::pow(x[k], 4);
    g[k] = 2 * a * (x[k] - t) + std::pow(x[k], 3);
    local_sum += x[k];
  }
  const double s = sum_all(local_sum);
  g.array() += s;
  return f + 0.5 * s * s / size;  // every rank adds its share of the coupling
}

TEST(LbfgsMpi, ShardedIteratesMatchASingleProcessRun) {
  constexpr int64_t kN = 24;
  const int rank = world_rank(), size = world_size();
  auto comm = Communicator::world();
  // Slices of uneven length when P does not divide 24.
  const int64_t begin = kN * rank / size, end = kN * (rank + 1) / size;
  // Stop while f still decreases by far more than round-off, so the
  // different summation orders of P ranks cannot change the path.
  LbfgsOptions options;
  options.tolerance_gradient = 1e-8;
  options.max_iterations = 200;

  Eigen::VectorXd serial = Eigen::VectorXd::Zero(kN);
  LbfgsSummary ref = lbfgs(
      [&](const Eigen::VectorXd& x, Eigen::VectorXd& g) {
        return sharded_objective(
            x, g, 0, [](double v) { return v; }, 1);
      },
      serial,
      options);
  EXPECT_EQ(ref.termination, Termination::kGradientNorm) << ref.message;

  Eigen::VectorXd mine = Eigen::VectorXd::Zero(end - begin);
  LbfgsSummary dist = lbfgs(
      [&](const Eigen::VectorXd& x, Eigen::VectorXd& g) {
        return sharded_objective(
            x,
            g,
            begin,
            [&](double v) { return comm->allreduce_sum(v); },
            size);
      },
      mine,
      options,
      comm.get(),
      Layout::kSharded);
  EXPECT_EQ(dist.termination, Termination::kGradientNorm) << dist.message;
  EXPECT_EQ(dist.iterations, ref.iterations);
  // The sharded dot products sum in another order than the serial ones
  // (per rank, then across ranks; Eigen's reductions also change order with
  // the vector width), and 200 iterations amplify that: up to 2.7e-12 was
  // measured with AVX2 (ADGRAPH_NATIVE), 9e-13 with SSE2.
  constexpr double kIterateTolerance = 1e-11;
  for (int64_t k = 0; k < mine.size(); ++k) {
    EXPECT_NEAR(mine[k], serial[begin + k], kIterateTolerance);
  }
  ASSERT_EQ(dist.f_history.size(), ref.f_history.size());
  for (std::size_t i = 0; i < ref.f_history.size(); ++i) {
    EXPECT_NEAR(dist.f_history[i],
                ref.f_history[i],
                1e-12 * (1 + std::fabs(ref.f_history[i])));
  }
}

std::string temporary_prefix(const std::string& name) {
  // One directory per rank count, agreed on by every rank.
  auto dir = std::filesystem::temp_directory_path() /
             ("adgraph_ckpt_np" + std::to_string(world_size()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

TEST(LbfgsMpi, ResumedRunEndsBitIdenticalToTheUninterruptedOne) {
  const int rank = world_rank(), size = world_size();
  auto comm = Communicator::world();
  const int64_t n = 6;
  auto f = [&](const Eigen::VectorXd& x, Eigen::VectorXd& g) {
    return sharded_objective(
        x, g, rank * n, [&](double v) { return comm->allreduce_sum(v); }, size);
  };
  LbfgsOptions options;
  options.tolerance_gradient = 1e-12;
  options.history = 4;

  Eigen::VectorXd whole = Eigen::VectorXd::Constant(n, 2.0);
  LbfgsSummary uninterrupted =
      lbfgs(f, whole, options, comm.get(), Layout::kSharded);
  ASSERT_GT(uninterrupted.iterations, 6);

  const std::string prefix = temporary_prefix("resume");
  LbfgsOptions first = options;
  first.max_iterations = 5;
  first.checkpoint_every = 2;
  first.checkpoint_path = prefix;
  Eigen::VectorXd part = Eigen::VectorXd::Constant(n, 2.0);
  lbfgs(f,
        part,
        first,
        comm.get(),
        Layout::kSharded);  // checkpoints after 2 and 4

  LbfgsOptions second = options;
  second.resume = true;
  second.checkpoint_path = prefix;
  Eigen::VectorXd resumed = Eigen::VectorXd::Constant(n, -7.0);  // ignored
  LbfgsSummary after = lbfgs(f, resumed, second, comm.get(), Layout::kSharded);
  EXPECT_EQ(after.resumed_at, 4);
  EXPECT_EQ(after.iterations, uninterrupted.iterations);
  EXPECT_EQ(after.evaluations, uninterrupted.evaluations);
  EXPECT_EQ(after.final_f, uninterrupted.final_f);
  for (int64_t k = 0; k < n; ++k) EXPECT_EQ(resumed[k], whole[k]);

  // A writer killed mid-write leaves only a partial temporary file; the
  // previous checkpoint still loads.
  const std::string file = optim::detail::checkpoint_file(prefix, rank, size);
  { std::ofstream(file + ".tmp", std::ios::binary) << "partial"; }
  Eigen::VectorXd again(n);
  LbfgsSummary reloaded = lbfgs(f, again, second, comm.get(), Layout::kSharded);
  EXPECT_EQ(reloaded.resumed_at, 4);
  EXPECT_EQ(again, whole);
}

// The Error every rank gets when resuming from `prefix` with n variables.
std::string resume_error(const std::string& prefix, int64_t n) {
  auto comm = Communicator::world();
  LbfgsOptions o;
  o.resume = true;
  o.checkpoint_path = prefix;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  try {
    lbfgs(
        [](const Eigen::VectorXd& v, Eigen::VectorXd& g) {
          g = v;
          return 0.5 * v.squaredNorm();
        },
        x,
        o,
        comm.get(),
        Layout::kSharded);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// f = Σ (x² + x⁴/4) over every rank's part; one L-BFGS run of it.
LbfgsSummary quartic_run(Eigen::VectorXd& x, const LbfgsOptions& options) {
  auto comm = Communicator::world();
  return lbfgs(
      [](const Eigen::VectorXd& v, Eigen::VectorXd& g) {
        g = 2 * v + v.array().cube().matrix();
        return v.squaredNorm() + 0.25 * v.array().pow(4).sum();
      },
      x,
      options,
      comm.get(),
      Layout::kSharded);
}

TEST(LbfgsMpi, BadCheckpointsAreClearErrorsOnEveryRank) {
  const int rank = world_rank(), size = world_size();
  auto comm = Communicator::world();
  const std::string prefix = temporary_prefix("bad");
  LbfgsOptions write;
  write.max_iterations = 2;
  write.checkpoint_every = 1;
  write.checkpoint_path = prefix;
  Eigen::VectorXd x = Eigen::VectorXd::Constant(3, 1.0);
  quartic_run(x, write);

  // Wrong number of variables.
  std::string msg = resume_error(prefix, 4);
  EXPECT_NE(msg.find("holds 3 variables, this run has 4"), std::string::npos)
      << msg;
  // A checkpoint of another rank count does not exist under this name.
  msg = resume_error(temporary_prefix("never_written"), 3);
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
  // Truncated file on the last rank only: every rank reports it.
  comm->allreduce_sum(0.0);  // all ranks done reading before the damage
  if (rank == size - 1) {
    const std::string file = optim::detail::checkpoint_file(prefix, rank, size);
    std::filesystem::resize_file(file, std::filesystem::file_size(file) - 5);
  }
  comm->allreduce_sum(0.0);
  msg = resume_error(prefix, 3);
  EXPECT_NE(msg.find("corrupted checkpoint (checksum mismatch"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find(".rank" + std::to_string(size - 1) + "of"),
            std::string::npos)
      << msg;
}

// The Error text of `run`, the same on every rank, or "" without one.
template <class Run>
std::string error_of(Run run) {
  try {
    run();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LbfgsMpi, DamagedOrForeignCheckpointsAreRefusedOnEveryRank) {
  const int rank = world_rank(), size = world_size();
  auto comm = Communicator::world();
  const std::string prefix = temporary_prefix("faults");
  LbfgsOptions write;
  write.max_iterations = 3;
  write.checkpoint_every = 1;
  write.checkpoint_path = prefix;
  write.checkpoint_problem = R"({"nx": 64, "px": 2, "py": 1})";
  Eigen::VectorXd x = Eigen::VectorXd::Constant(3, 1.0);
  quartic_run(x, write);
  LbfgsOptions resume = write;
  resume.checkpoint_every = 0;
  resume.resume = true;
  const std::string last =
      optim::detail::checkpoint_file(prefix, size - 1, size);
  auto on_last_rank = [&](auto damage) {
    comm->allreduce_sum(0.0);
    if (rank == size - 1) damage();
    comm->allreduce_sum(0.0);
  };

  // Another problem: every differing field is named, on every rank.
  LbfgsOptions other = resume;
  other.checkpoint_problem = R"({"nx": 64, "px": 1, "py": 2})";
  std::string msg = error_of([&] { quartic_run(x, other); });
  EXPECT_NE(msg.find("written for another problem: px = 2 there, 1 in this "
                     "run; py = 1 there, 2 in this run"),
            std::string::npos)
      << msg;

  // One bit flipped in the last rank's file.
  const std::string saved = last + ".saved";
  on_last_rank([&] {
    std::filesystem::copy_file(last, saved);
    std::fstream f(last, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(40);
    const char c = static_cast<char>(f.get());
    f.seekp(40);
    f.put(static_cast<char>(c ^ 0x04));
  });
  msg = error_of([&] { quartic_run(x, resume); });
  EXPECT_NE(msg.find(last + ": corrupted checkpoint (checksum mismatch"),
            std::string::npos)
      << msg;

  // The last rank's file missing (a host whose disk lost it).
  on_last_rank([&] { std::filesystem::remove(last); });
  msg = error_of([&] { quartic_run(x, resume); });
  EXPECT_NE(msg.find(last + ": cannot open"), std::string::npos) << msg;

  // The last rank's file from an earlier iteration than the others'.
  if (size > 1) {
    LbfgsOptions shorter = write;
    shorter.max_iterations = 2;
    const std::string old_prefix = temporary_prefix("faults_old");
    shorter.checkpoint_path = old_prefix;
    Eigen::VectorXd y = Eigen::VectorXd::Constant(3, 1.0);
    quartic_run(y, shorter);
    on_last_rank([&] {
      std::filesystem::copy_file(
          optim::detail::checkpoint_file(old_prefix, rank, size), last);
    });
    msg = error_of([&] { quartic_run(x, resume); });
    EXPECT_NE(msg.find("the ranks' files are from different iterations (2 to "
                       "3): not one checkpoint; rank " +
                       std::to_string(size - 1) + " has no staged file (" +
                       last + ".tmp) to complete it from"),
              std::string::npos)
        << msg;
    // A staged file beside it, but not the newer iteration's: refused too.
    on_last_rank([&] {
      std::filesystem::copy_file(
          optim::detail::checkpoint_file(old_prefix, rank, size),
          last + ".tmp");
    });
    msg = error_of([&] { quartic_run(x, resume); });
    EXPECT_NE(msg.find("not one checkpoint; " + last +
                       ".tmp: staged at iteration 2, not 3"),
              std::string::npos)
        << msg;
    on_last_rank([&] { std::filesystem::remove(last + ".tmp"); });
  }
  on_last_rank([&] {
    std::filesystem::remove(last);
    std::filesystem::rename(saved, last);
  });
  EXPECT_EQ(error_of([&] { quartic_run(x, resume); }), "");
}

TEST(LbfgsMpi, AFailedCheckpointWriteLeavesThePreviousOneUsable) {
  const int rank = world_rank(), size = world_size();
  auto comm = Communicator::world();
  LbfgsOptions options;
  options.max_iterations = 6;
  Eigen::VectorXd whole = Eigen::VectorXd::Constant(3, 1.0);
  const LbfgsSummary uninterrupted = quartic_run(whole, options);

  // The last rank cannot stage its file at iteration 3 (a folder is in the
  // way, as a full disk would refuse it): the run stops on every rank.
  const std::string prefix = temporary_prefix("write_fault");
  const std::string staged =
      optim::detail::checkpoint_file(prefix, size - 1, size) + ".tmp";
  LbfgsOptions write = options;
  write.checkpoint_every = 1;
  write.checkpoint_path = prefix;
  Eigen::VectorXd x = Eigen::VectorXd::Constant(3, 1.0);
  int calls = 0;
  const std::string msg = error_of([&] {
    lbfgs(
        [&](const Eigen::VectorXd& v, Eigen::VectorXd& g) {
          // After iteration 2's checkpoint, before iteration 3's.
          if (++calls == 4 && rank == size - 1)
            std::filesystem::create_directory(staged);
          g = 2 * v + v.array().cube().matrix();
          return v.squaredNorm() + 0.25 * v.array().pow(4).sum();
        },
        x,
        write,
        comm.get(),
        Layout::kSharded);
  });
  EXPECT_NE(msg.find("cannot create checkpoint " + staged), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("(the previous checkpoint is unchanged)"),
            std::string::npos)
      << msg;
  comm->allreduce_sum(0.0);
  if (rank == size - 1) std::filesystem::remove(staged);
  comm->allreduce_sum(0.0);
  EXPECT_FALSE(std::filesystem::exists(
      optim::detail::checkpoint_file(prefix, rank, size) + ".tmp"));

  LbfgsOptions resume = options;
  resume.resume = true;
  resume.checkpoint_path = prefix;
  Eigen::VectorXd resumed = Eigen::VectorXd::Zero(3);
  const LbfgsSummary after = quartic_run(resumed, resume);
  EXPECT_EQ(after.resumed_at, 2);
  EXPECT_EQ(after.f_history, uninterrupted.f_history);
  EXPECT_EQ(resumed, whole);
}

// A host lost while the commit agreement's result is on its way: the ranks
// that got it renamed iteration 3's staged file over their checkpoint, the
// last rank still holds iteration 2's with iteration 3's staged beside it.
TEST(LbfgsMpi, ARunStoppedWhileCommittingResumesFromTheNewerIteration) {
  const int rank = world_rank(), size = world_size();
  auto comm = Communicator::world();
  LbfgsOptions options;
  options.max_iterations = 6;
  Eigen::VectorXd whole = Eigen::VectorXd::Constant(3, 1.0);
  const LbfgsSummary uninterrupted = quartic_run(whole, options);

  const std::string prefix = temporary_prefix("commit_stopped");
  const std::string older = temporary_prefix("commit_stopped_older");
  LbfgsOptions write = options;
  write.checkpoint_every = 1;
  write.max_iterations = 3;
  write.checkpoint_path = prefix;
  Eigen::VectorXd x = Eigen::VectorXd::Constant(3, 1.0);
  quartic_run(x, write);
  write.max_iterations = 2;
  write.checkpoint_path = older;
  x = Eigen::VectorXd::Constant(3, 1.0);
  quartic_run(x, write);
  const std::string file = optim::detail::checkpoint_file(prefix, rank, size);
  comm->allreduce_sum(0.0);
  if (rank == size - 1) {
    std::filesystem::rename(file, file + ".tmp");
    std::filesystem::copy_file(
        optim::detail::checkpoint_file(older, rank, size), file);
  }
  comm->allreduce_sum(0.0);

  LbfgsOptions resume = options;
  resume.resume = true;
  resume.checkpoint_path = prefix;
  Eigen::VectorXd resumed = Eigen::VectorXd::Zero(3);
  const LbfgsSummary after = quartic_run(resumed, resume);
  // One rank: its staged file cannot be known to be agreed, so iteration 2.
  EXPECT_EQ(after.resumed_at, size > 1 ? 3 : 2);
  EXPECT_EQ(after.f_history, uninterrupted.f_history);
  EXPECT_EQ(resumed, whole);
  if (size > 1) {
    EXPECT_FALSE(std::filesystem::exists(file + ".tmp"));
  }
}

}  // namespace
}  // namespace adgraph::optim
