// The loader's "repeat" blocks (driver/repeats.cc): one loop node whatever
// the trip count, carried values against their recurrence solved by hand,
// nested blocks, a gradient through a block under every checkpoint
// schedule (bitwise alike) and the errors that name the block by position.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/driver/load.h"

namespace adgraph {
namespace {

using testing::expect_refused;
using testing::load;

// u ← u/2 + 1, K times, from u0: u_K = 2 + (u0 − 2)/2^K; L = sum(u_K).
std::string halving(int trips, const std::string& checkpoints = "\"all\"") {
  return R"({"adgraph": 1, "nodes": [
      {"name": "u0", "op": "placeholder", "shape": [2]},
      {"name": "half", "op": "fill", "attrs": {"shape": [], "value": 0.5}},
      {"name": "one", "op": "fill", "attrs": {"shape": [], "value": 1.0}},
      {"repeat": )" +
         std::to_string(trips) + R"(, "carry": {"u": "u0"}, "checkpoints": )" +
         checkpoints + R"(, "body": [
        {"name": "h", "op": "mul", "inputs": ["u", "half"]},
        {"name": "u", "op": "add", "inputs": ["h", "one"]}]},
      {"name": "L", "op": "sum", "inputs": ["u"]}],
    "gradients": {"g": {"of": "L", "wrt": "u0"}},
    "feeds": {"u0": [0, 8]},
    "fetch": ["u", "L", "g"]})";
}

TEST(Repeats, CarriesFollowTheRecurrence) {
  auto loaded = load(halving(5));
  const std::vector<Tensor> out = loaded->fetched();
  // 2 − 2/32 and 2 + 6/32, exact in binary.
  EXPECT_EQ(out[0].to_vector(), (std::vector<double>{1.9375, 2.1875}));
  EXPECT_EQ(out[1].item(), 4.125);
  // ∂u_K/∂u0 = 2^−K per element.
  EXPECT_EQ(out[2].to_vector(), (std::vector<double>{0.03125, 0.03125}));
}

TEST(Repeats, TheGraphDoesNotGrowWithTheTripCount) {
  const int nodes = load(halving(3))->graph.num_nodes();
  EXPECT_EQ(load(halving(300))->graph.num_nodes(), nodes);
  auto loaded = load(halving(300));
  // 2 + (u0 − 2)/2^300: 2 in double, for both elements.
  EXPECT_EQ(loaded->fetched()[0].to_vector(), (std::vector<double>{2.0, 2.0}));
}

TEST(Repeats, EveryCheckpointScheduleGivesTheSameBits) {
  const std::vector<Tensor> all = load(halving(23))->fetched();
  for (const char* schedule : {"1", "3", "{\"every\": 4}", "{\"every\": 1}"}) {
    const std::vector<Tensor> out = load(halving(23, schedule))->fetched();
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(out[k].to_vector(), all[k].to_vector())
          << schedule << ", fetch " << k;
    }
  }
  EXPECT_EQ(all[2][0], std::ldexp(1.0, -23));
}

TEST(Repeats, NestedBlocksMultiplyTheirTrips) {
  // Outer 3 trips of an inner 2 trips of v ← 2v: 2^6 · x.
  auto loaded = load(R"({"adgraph": 1, "nodes": [
      {"name": "x", "op": "placeholder", "shape": [3]},
      {"name": "two", "op": "fill", "attrs": {"shape": [], "value": 2.0}},
      {"repeat": 3, "carry": {"u": "x"}, "body": [
        {"repeat": 2, "carry": {"v": "u"}, "body": [
          {"name": "v", "op": "mul", "inputs": ["v", "two"]}]},
        {"name": "u", "op": "identity", "inputs": ["v"]}]},
      {"name": "L", "op": "sum", "inputs": ["u"]}],
    "gradients": {"g": {"of": "L", "wrt": "x"}},
    "feeds": {"x": [1, -0.5, 3]},
    "fetch": ["u", "g"]})");
  const std::vector<Tensor> out = loaded->fetched();
  EXPECT_EQ(out[0].to_vector(), (std::vector<double>{64, -32, 192}));
  EXPECT_EQ(out[1].to_vector(), (std::vector<double>{64, 64, 64}));
}

TEST(Repeats, ErrorsNameTheBlockByPosition) {
  std::string text = halving(2);
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  expect_refused(with("\"repeat\": 2", "\"repeat\": 0"),
                 "t.json: nodes[3].repeat: must be in [1, 1000000]");
  expect_refused(
      with("\"carry\": {\"u\": \"u0\"}", "\"carry\": {\"w\": \"u0\"}"),
      "t.json: nodes[3].carry.w: the body has no node \"w\" to "
      "carry");
  const std::string grammar =
      "nodes[3].checkpoints: a checkpoint schedule is all, auto, N (binomial "
      "with N >= 1 snapshots), every:K (K >= 1) or budget:BYTES (BYTES >= 1, "
      "optionally with KiB, MiB or GiB); got ";
  expect_refused(with("\"checkpoints\": \"all\"", "\"checkpoints\": 0"),
                 grammar + "0");
  expect_refused(with("\"checkpoints\": \"all\"", "\"checkpoints\": \"some\""),
                 grammar + "\"some\"");
  expect_refused(
      with("\"checkpoints\": \"all\"", "\"checkpoints\": {\"every\": 0}"),
      grammar + "{\"every\":0}");
}

}  // namespace
}  // namespace adgraph
