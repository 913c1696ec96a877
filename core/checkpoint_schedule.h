// Checkpoint schedules: which states of a time loop the adjoint keeps and
// which it recomputes.
//
// The adjoint of an n-step loop needs the loop-carried state c_t of every
// step t, in reverse order. A schedule keeps some states (snapshots) and
// recomputes the others by running the body forward again from the nearest
// snapshot. Recomputation is deterministic, so every schedule gives bitwise
// the same gradient; only memory and time differ:
//
// | schedule        | snapshots held        | body forward runs besides the
// |                 |                       | n taped steps (from c_0)
// |-----------------|-----------------------|------------------------------
// | store_all()     | n                     | n − 1
// | every(k)        | ⌈n/k⌉ + k             | n − 1 + (⌈n/k⌉ − 1)(k − 1)
// | binomial(s)     | s                     | t(n, s), optimal (below)
// | memory_budget(b)| binomial with the largest s whose snapshots fit in b
// |                 | (at least one state: a smaller b is refused)
//
// Binomial checkpointing (Griewank 1992; Griewank & Walther, "Algorithm 799:
// Revolve", ACM TOMS 26(1), 2000): with s snapshots and r the integer with
// C(s+r−1, s) < n ≤ C(s+r, s), the least number of forward steps is
//   t(n, s) = r·n − C(s+r, r−1),
// reached by splitting the steps [a, b) at a + j with
//   j = max(1, n − C(s+r−1, s−1), C(s+r−2, s))
// (checked against the dynamic programme min_j j + t(n−j, s−1) + t(j, s)
// for every s ≤ 39 and n ≤ 400), keeping the state at the split, reversing
// the right part with s − 1 snapshots, then the left part with s.
// "Snapshots" count the slot that holds c_0.
//
// Text form, the one grammar of every front end (JSON, Python, command
// lines):
//   all            store_all()
//   auto           automatic(): binomial with binomial_two_sweep_snapshots(n)
//                  snapshots, about sqrt(2n), fixed by resolved(n) once the
//                  step count n is known
//   N              binomial(N), N >= 1
//   every:K        every(K), K >= 1
//   budget:BYTES   memory_budget(BYTES), BYTES >= 1, optionally with a
//                  binary suffix: budget:64MiB (KiB, MiB, GiB)
// The JSON form is that string, or an integer N (binomial). JSON objects
// {"every": k}, {"binomial": s} and {"budget": bytes} are older spellings
// of every:k, s and budget:bytes, still read.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/enum_names.h"

namespace adgraph {

struct CheckpointSchedule {
  enum class Kind {
    kDefault,
    kStoreAll,
    kEvery,
    kBinomial,
    kMemoryBudget,
    kAuto
  };
  Kind kind = Kind::kDefault;
  // every(k): k >= 1; binomial(s): s >= 1; memory_budget: bytes >= 1.
  int64_t parameter = 0;

  // The graph's default (Graph::set_default_checkpoints), which is
  // store_all() unless changed.
  static CheckpointSchedule graph_default() { return {}; }
  static CheckpointSchedule store_all() { return {Kind::kStoreAll, 0}; }
  static CheckpointSchedule every(int64_t k) { return {Kind::kEvery, k}; }
  static CheckpointSchedule binomial(int64_t snapshots) {
    return {Kind::kBinomial, snapshots};
  }
  static CheckpointSchedule memory_budget(int64_t bytes) {
    return {Kind::kMemoryBudget, bytes};
  }
  // "auto": binomial with about sqrt(2n) snapshots for n steps; each loop
  // resolves it with its own step count (resolved(n)), so it may also be
  // a graph's default.
  static CheckpointSchedule automatic() { return {Kind::kAuto, 0}; }

  // The grammar of the text form, for messages.
  static constexpr const char* kGrammar =
      "all, auto, N (binomial with N >= 1 snapshots), every:K (K >= 1) or "
      "budget:BYTES (BYTES >= 1, optionally with KiB, MiB or GiB)";

  // The message of a refused value, `got` as the caller writes it:
  // 'a checkpoint schedule is <kGrammar>; got <got>'.
  static std::string refusal(std::string_view got);
  // The schedule `text` names (the grammar above), or nullopt with
  // `*error` = refusal("\"text\"") (the text as a JSON string).
  static std::optional<CheckpointSchedule> parse(std::string_view text,
                                                 std::string* error);
  // The JSON form: a string as parse() reads it, an integer N (binomial)
  // or an older object spelling; nullopt and `*error` (the same message,
  // with the value as JSON) otherwise.
  static std::optional<CheckpointSchedule> from_json(const nlohmann::json& v,
                                                     std::string* error);
  // The text parse() reads back to this schedule: "all", "auto", "8",
  // "every:10", "budget:1048576". graph_default() is "default", which
  // parse() does not read (leave the setting out instead).
  std::string to_string() const;

  // automatic() fixed for a loop of `steps` steps: binomial with
  // binomial_two_sweep_snapshots(steps) snapshots. Other schedules are
  // returned as they are.
  CheckpointSchedule resolved(int64_t steps) const;

  // Returns false and names the bad field in `error`.
  bool is_valid(std::string* error) const;
  // For messages: "all", "auto", "every 10", "binomial 100",
  // "budget 1048576 B", "default".
  std::string describe() const;
  friend bool operator==(const CheckpointSchedule&,
                         const CheckpointSchedule&) = default;
};

constexpr auto enum_names(CheckpointSchedule::Kind) {
  using K = CheckpointSchedule::Kind;
  return std::array{EnumName{K::kDefault, "default"},
                    EnumName{K::kStoreAll, "all"},
                    EnumName{K::kAuto, "auto"},
                    EnumName{K::kEvery, "every"},
                    EnumName{K::kBinomial, "binomial"},
                    EnumName{K::kMemoryBudget, "budget"}};
}

// Binomial coefficient C(n, k), saturating at INT64_MAX; 0 when k < 0 or
// k > n.
int64_t binomial_coefficient(int64_t n, int64_t k);

// t(n, s): the least number of body forward steps that reverse n steps with
// s snapshots, not counting the n taped steps (the formula above). s >= 1,
// n >= 1; t(1, s) = 0 and t(n, 1) = n(n−1)/2.
int64_t binomial_forward_steps(int64_t n, int64_t s);

// The split j of the binomial schedule for n >= 2 steps and s >= 2
// snapshots (see above): 1 <= j < n.
int64_t binomial_split(int64_t n, int64_t s);

// The smallest s whose binomial schedule recomputes at most one sweep
// (r <= 2, i.e. C(s+2, 2) >= n), capped at n: about sqrt(2n) snapshots.
int64_t binomial_two_sweep_snapshots(int64_t n);

}  // namespace adgraph
