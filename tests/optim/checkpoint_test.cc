// Optimizer checkpoints on their own (one rank's file): a state written and
// read back is the same to the bit for either solver; a file that does not
// fit the run is refused with the reason; a damaged file (a flipped bit, a
// cut, bytes added or missing under a valid checksum) is refused as
// corrupted, never read as a state.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "optim/checkpoint_impl.h"

namespace adgraph::optim::detail {
namespace {

namespace fs = std::filesystem;

constexpr int kHistory = 4;
constexpr int64_t kN = 5;

LbfgsState sample_state(SolverKind kind) {
  LbfgsState s;
  s.kind = kind;
  s.bounds_hash = kind == SolverKind::kLbfgsb ? 0x1234abcdULL : 0;
  s.iteration = 7;
  s.evaluations = 11;
  s.f = 0.125;
  s.initial_f = 3.5;
  s.gamma = 0.75;
  s.x = Eigen::VectorXd::LinSpaced(kN, -1.0, 1.0);
  s.g = Eigen::VectorXd::LinSpaced(kN, 0.1, 0.5) / 3.0;  // not exact decimals
  for (int i = 0; i < 3; ++i) {
    s.s.push_back(Eigen::VectorXd::Constant(kN, 1.0 / (i + 3)));
    s.y.push_back(Eigen::VectorXd::Constant(kN, -2.0 / (i + 7)));
    if (kind == SolverKind::kLbfgs) s.rho.push_back(1.0 / (i + 1.5));
  }
  s.f_history = {3.5, 1.0, 0.125};
  s.gnorm_history = {2.0, 0.5, 1.0 / 3.0};
  if (kind == SolverKind::kLbfgsb) {
    s.sy = Eigen::MatrixXd::Constant(3, 3, 0.1);
    s.ss = Eigen::MatrixXd::Identity(3, 3) / 7.0;
  }
  s.problem = R"({"nx": 8, "scheme": "explicit"})";
  return s;
}

class Checkpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("adgraph_checkpoint_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    prefix_ = (dir_ / "fit").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const LbfgsState& s, int rank = 0, int size = 1) {
    ASSERT_EQ(stage_checkpoint(prefix_, rank, size, kHistory, s), "");
    ASSERT_EQ(commit_checkpoint(prefix_, rank, size), "");
  }
  std::string read(LbfgsState* out,
                   SolverKind kind,
                   uint64_t bounds = 0,
                   const std::string& problem = "",
                   int64_t n = kN,
                   int history = kHistory,
                   int rank = 0,
                   int size = 1) {
    return read_checkpoint(
        prefix_, rank, size, n, history, kind, bounds, problem, out);
  }
  std::string file() const { return checkpoint_file(prefix_, 0, 1); }
  std::string bytes() const {
    std::ifstream in(file(), std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void replace(const std::string& content) const {
    std::ofstream(file(), std::ios::binary | std::ios::trunc) << content;
  }
  // `content` without its checksum, changed, with a valid checksum again.
  void replace_resealed(std::string body) const {
    const uint64_t sum = fnv1a(body.data(), body.size());
    body.append(reinterpret_cast<const char*>(&sum), sizeof sum);
    replace(body);
  }

  fs::path dir_;
  std::string prefix_;
};

void expect_same(const LbfgsState& a, const LbfgsState& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.bounds_hash, b.bounds_hash);
  EXPECT_EQ(a.iteration, b.iteration);
  EXPECT_EQ(a.evaluations, b.evaluations);
  EXPECT_EQ(a.f, b.f);
  EXPECT_EQ(a.initial_f, b.initial_f);
  EXPECT_EQ(a.gamma, b.gamma);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.g, b.g);
  EXPECT_EQ(a.s, b.s);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.rho, b.rho);
  EXPECT_EQ(a.f_history, b.f_history);
  EXPECT_EQ(a.gnorm_history, b.gnorm_history);
  EXPECT_EQ(a.sy, b.sy);
  EXPECT_EQ(a.ss, b.ss);
  EXPECT_EQ(a.problem, b.problem);
}

TEST_F(Checkpoint, AStateReadBackIsTheSameToTheBit) {
  for (SolverKind kind : {SolverKind::kLbfgs, SolverKind::kLbfgsb}) {
    const LbfgsState written = sample_state(kind);
    write(written);
    LbfgsState got;
    ASSERT_EQ(read(&got, kind, written.bounds_hash, written.problem), "");
    expect_same(got, written);
    EXPECT_FALSE(fs::exists(file() + ".tmp")) << "the staged file stayed";
  }
}

TEST_F(Checkpoint, AFileThatDoesNotFitTheRunIsRefusedWithTheReason) {
  const LbfgsState written = sample_state(SolverKind::kLbfgsb);
  write(written);
  const uint64_t bounds = written.bounds_hash;
  LbfgsState got;
  EXPECT_EQ(read(&got, SolverKind::kLbfgsb, bounds, "", kN, kHistory, 0, 2),
            checkpoint_file(prefix_, 0, 2) +
                ": cannot open (was the checkpoint written by a run with 2 "
                "ranks?)");
  EXPECT_EQ(read(&got, SolverKind::kLbfgs, bounds),
            file() +
                ": written by an L-BFGS-B run, this run is L-BFGS (no "
                "bounds)");
  EXPECT_EQ(read(&got, SolverKind::kLbfgsb, bounds + 1),
            file() + ": written with other bounds than this run's");
  EXPECT_EQ(read(&got, SolverKind::kLbfgsb, bounds, "", kN + 1),
            file() + ": holds 5 variables, this run has 6");
  EXPECT_EQ(read(&got, SolverKind::kLbfgsb, bounds, "", kN, kHistory + 1),
            file() + ": written with history 4, this run uses 5");
  EXPECT_EQ(
      read(&got,
           SolverKind::kLbfgsb,
           bounds,
           R"({"nx": 16, "scheme": "explicit"})"),
      file() + ": written for another problem: nx = 8 there, 16 in this run");
  // A file of rank 0 of 1 read as rank 0 of 1 but renamed for rank 1.
  fs::copy_file(file(), checkpoint_file(prefix_, 1, 1));
  EXPECT_EQ(read(&got, SolverKind::kLbfgsb, bounds, "", kN, kHistory, 1, 1),
            checkpoint_file(prefix_, 1, 1) +
                ": written by rank 0 of 1, this is rank 1 of 1");
}

TEST_F(Checkpoint, ADamagedFileIsCorruptedNeverAState) {
  const LbfgsState written = sample_state(SolverKind::kLbfgs);
  write(written);
  const std::string good = bytes();
  const std::string body = good.substr(0, good.size() - sizeof(uint64_t));
  LbfgsState got;
  got.iteration = -99;  // untouched by every refusal below
  auto corrupted = [&](const std::string& why) {
    return file() + ": corrupted checkpoint (" + why + ")";
  };
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x10;
  replace(flipped);
  EXPECT_EQ(read(&got, SolverKind::kLbfgs),
            corrupted("checksum mismatch: truncated or modified"));
  replace(good.substr(0, good.size() - 3));
  EXPECT_EQ(read(&got, SolverKind::kLbfgs),
            corrupted("checksum mismatch: truncated or modified"));
  replace("not a checkpoint at all, just text");
  EXPECT_EQ(read(&got, SolverKind::kLbfgs),
            corrupted("not an adgraph L-BFGS checkpoint"));
  // Valid checksums over damaged contents: bytes added, the state cut.
  replace_resealed(body + "x");
  EXPECT_EQ(read(&got, SolverKind::kLbfgs), corrupted("trailing bytes"));
  replace_resealed(body.substr(0, body.size() - 8));
  EXPECT_EQ(read(&got, SolverKind::kLbfgs), corrupted("short trace"));
  replace_resealed(body.substr(0, 40));
  EXPECT_EQ(read(&got, SolverKind::kLbfgs), corrupted("short header"));
  EXPECT_EQ(got.iteration, -99);
  replace(good);
  EXPECT_EQ(read(&got, SolverKind::kLbfgs), "");
  expect_same(got, written);
}

}  // namespace
}  // namespace adgraph::optim::detail
