#include "core/checkpoint_schedule.h"

#include <algorithm>
#include <limits>

namespace adgraph {

bool CheckpointSchedule::is_valid(std::string* error) const {
  switch (kind) {
    case Kind::kDefault:
    case Kind::kStoreAll:
      return true;
    case Kind::kEvery:
      if (parameter >= 1) return true;
      *error = "every(k) needs k >= 1, got " + std::to_string(parameter);
      return false;
    case Kind::kBinomial:
      if (parameter >= 1) return true;
      *error = "binomial(s) needs s >= 1 snapshots, got " +
               std::to_string(parameter);
      return false;
    case Kind::kMemoryBudget:
      if (parameter >= 1) return true;
      *error = "memory_budget needs at least 1 byte, got " +
               std::to_string(parameter);
      return false;
  }
  return false;
}

std::string CheckpointSchedule::describe() const {
  switch (kind) {
    case Kind::kDefault:
      return "default";
    case Kind::kStoreAll:
      return "all";
    case Kind::kEvery:
      return "every " + std::to_string(parameter);
    case Kind::kBinomial:
      return "binomial " + std::to_string(parameter);
    case Kind::kMemoryBudget:
      return "budget " + std::to_string(parameter) + " B";
  }
  return "?";
}

int64_t binomial_coefficient(int64_t n, int64_t k) {
  if (k < 0 || n < 0 || k > n) return 0;
  k = std::min(k, n - k);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // C(n, i) = C(n, i−1)·(n−i+1)/i stays integral at every i.
  __int128 c = 1;
  for (int64_t i = 1; i <= k; ++i) {
    c = c * (n - i + 1) / i;
    if (c > kMax) return kMax;
  }
  return static_cast<int64_t>(c);
}

namespace {

// The r of the binomial schedule: C(s+r−1, s) < n <= C(s+r, s).
int64_t repetitions(int64_t n, int64_t s) {
  int64_t r = 0;
  while (binomial_coefficient(s + r, s) < n) ++r;
  return r;
}

}  // namespace

int64_t binomial_forward_steps(int64_t n, int64_t s) {
  if (n <= 1) return 0;
  if (s <= 1) return n * (n - 1) / 2;
  const int64_t r = repetitions(n, s);
  return r * n - binomial_coefficient(s + r, r - 1);
}

int64_t binomial_split(int64_t n, int64_t s) {
  const int64_t r = repetitions(n, s);
  int64_t j = std::max<int64_t>(1, n - binomial_coefficient(s + r - 1, s - 1));
  if (r >= 2) j = std::max(j, binomial_coefficient(s + r - 2, s));
  return std::min(j, n - 1);
}

int64_t binomial_two_sweep_snapshots(int64_t n) {
  int64_t s = 1;
  while (s < n && binomial_coefficient(s + 2, 2) < n) ++s;
  return s;
}

}  // namespace adgraph
