// L-BFGS against an in-process communicator: "ranks" are threads that meet
// at a barrier, so the distributed code paths (replicated and sharded
// layouts, the agreement on checkpoint errors) run without MPI. The
// expected results come from the same problem solved by one process.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/comm_context.h"
#include "core/error.h"
#include "optim/lbfgs.h"

namespace adgraph::optim {
namespace {

// What the threads share: one slot per rank and a barrier.
struct FakeWorld {
  explicit FakeWorld(int size)
      : size(size), slots(size), texts(size), sync(size) {}
  int size;
  std::vector<std::vector<double>> slots;
  std::vector<std::string> texts;
  std::barrier<> sync;
};

// Collectives deposit into the rank's slot, meet, combine in rank order (so
// every rank computes the same bits) and meet again before slots are reused.
class FakeComm final : public CommContext {
 public:
  FakeComm(FakeWorld& world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return world_.size; }

  void allreduce(const double* in,
                 double* out,
                 int64_t n,
                 ReduceOp op) override {
    world_.slots[rank_].assign(in, in + n);
    world_.sync.arrive_and_wait();
    for (int64_t i = 0; i < n; ++i) {
      double r = world_.slots[0][i];
      for (int q = 1; q < world_.size; ++q) {
        const double v = world_.slots[q][i];
        r = op == ReduceOp::kSum   ? r + v
            : op == ReduceOp::kMax ? std::max(r, v)
            : op == ReduceOp::kMin ? std::min(r, v)
                                   : r * v;
      }
      out[i] = r;
    }
    world_.sync.arrive_and_wait();
  }
  void bcast(double* data, int64_t n, int root) override {
    if (rank_ == root) world_.slots[root].assign(data, data + n);
    world_.sync.arrive_and_wait();
    if (rank_ != root) std::copy_n(world_.slots[root].data(), n, data);
    world_.sync.arrive_and_wait();
  }
  std::string bcast(const std::string& text, int root) override {
    if (rank_ == root) world_.texts[root] = text;
    world_.sync.arrive_and_wait();
    std::string out = world_.texts[root];
    world_.sync.arrive_and_wait();
    return out;
  }
  void check_same_sequence(const std::vector<std::string>&) override {}
  void finish_run() override {}

 private:
  FakeWorld& world_;
  int rank_;
};

// Runs body(comm) on `size` threads, one per rank.
void on_ranks(int size, const std::function<void(FakeComm&)>& body) {
  FakeWorld world(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&world, &body, r] {
      FakeComm comm(world, r);
      body(comm);
    });
  }
  for (auto& t : threads) t.join();
}

// A separable quartic: f = Σ_i (x_i − c_i)⁴ + w_i (x_i − c_i)², c_i = i/10,
// w_i = 1 + i mod 3; minimum 0 at x = c.
double quartic(const Eigen::VectorXd& x, Eigen::VectorXd& g, int64_t offset) {
  double f = 0;
  for (int64_t k = 0; k < x.size(); ++k) {
    const int64_t i = offset + k;
    const double d = x[k] - 0.1 * static_cast<double>(i);
    const double w = 1.0 + static_cast<double>(i % 3);
    f += d * d * d * d + w * d * d;
    g[k] = 4 * d * d * d + 2 * w * d;
  }
  return f;
}

constexpr int64_t kN = 12;

LbfgsOptions tight() {
  LbfgsOptions o;
  o.tolerance_gradient = 1e-10;
  return o;
}

// Every rank evaluates the whole objective: the result must be bitwise the
// single-process one (rank 0's f and g are broadcast).
TEST(LbfgsFakeComm, ReplicatedMatchesOneProcessBitwise) {
  Eigen::VectorXd serial = Eigen::VectorXd::Constant(kN, 2.0);
  const LbfgsSummary expected =
      lbfgs([](const Eigen::VectorXd& x,
               Eigen::VectorXd& g) { return quartic(x, g, 0); },
            serial,
            tight());
  ASSERT_EQ(expected.termination, Termination::kGradientNorm);
  on_ranks(3, [&](FakeComm& comm) {
    Eigen::VectorXd x = Eigen::VectorXd::Constant(kN, 2.0);
    const LbfgsSummary s =
        lbfgs([](const Eigen::VectorXd& v,
                 Eigen::VectorXd& g) { return quartic(v, g, 0); },
              x,
              tight(),
              &comm,
              Layout::kReplicated);
    EXPECT_TRUE(x == serial) << "rank " << comm.rank();
    EXPECT_EQ(s.f_history, expected.f_history);
  });
}

// Each rank owns 4 of the 12 variables: the global dot products are sums of
// per-rank parts, so the path differs from one process by round-off only.
TEST(LbfgsFakeComm, ShardedReachesTheOneProcessMinimumInLockstep) {
  std::vector<Eigen::VectorXd> results(3);
  std::vector<std::vector<double>> histories(3);
  on_ranks(3, [&](FakeComm& comm) {
    const int64_t offset = comm.rank() * (kN / 3);
    Eigen::VectorXd x = Eigen::VectorXd::Constant(kN / 3, 2.0);
    const LbfgsSummary s =
        lbfgs([offset](const Eigen::VectorXd& v,
                       Eigen::VectorXd& g) { return quartic(v, g, offset); },
              x,
              tight(),
              &comm,
              Layout::kSharded);
    EXPECT_EQ(s.termination, Termination::kGradientNorm) << s.message;
    results[comm.rank()] = x;
    histories[comm.rank()] = s.f_history;
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(histories[r], histories[0]) << "rank " << r << " left lockstep";
    for (int64_t k = 0; k < kN / 3; ++k) {
      EXPECT_NEAR(results[r][k], 0.1 * static_cast<double>(r * 4 + k), 1e-9);
    }
  }
}

// Only rank 1's checkpoint file is missing: every rank raises the same
// error, naming rank 1's file.
TEST(LbfgsFakeComm, ACheckpointMissingOnOneRankFailsEveryRankAlike) {
  const std::string prefix =
      (std::filesystem::temp_directory_path() / "adgraph_fake_comm_ckpt")
          .string();
  on_ranks(3, [&](FakeComm& comm) {
    Eigen::VectorXd x = Eigen::VectorXd::Constant(kN, 2.0);
    LbfgsOptions o;
    o.max_iterations = 2;
    o.checkpoint_every = 1;
    o.checkpoint_path = prefix;
    lbfgs([](const Eigen::VectorXd& v,
             Eigen::VectorXd& g) { return quartic(v, g, 0); },
          x,
          o,
          &comm);
  });
  const std::string missing = prefix + ".rank1of3";
  ASSERT_TRUE(std::filesystem::remove(missing));
  std::vector<std::string> messages(3);
  on_ranks(3, [&](FakeComm& comm) {
    Eigen::VectorXd x = Eigen::VectorXd::Constant(kN, 2.0);
    LbfgsOptions o;
    o.resume = true;
    o.checkpoint_path = prefix;
    try {
      lbfgs([](const Eigen::VectorXd& v,
               Eigen::VectorXd& g) { return quartic(v, g, 0); },
            x,
            o,
            &comm);
    } catch (const Error& e) {
      messages[comm.rank()] = e.what();
    }
  });
  EXPECT_NE(messages[0].find(missing), std::string::npos) << messages[0];
  EXPECT_EQ(messages[1], messages[0]);
  EXPECT_EQ(messages[2], messages[0]);
  for (int r = 0; r < 3; ++r) {
    std::filesystem::remove(prefix + ".rank" + std::to_string(r) + "of3");
  }
}

}  // namespace
}  // namespace adgraph::optim
