#include "core/checkpoint_schedule.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

namespace adgraph {

namespace {

// The digits of a count >= 0 that fits int64_t, or nullopt.
std::optional<int64_t> count_of(std::string_view digits) {
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  int64_t n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

// BYTES with an optional binary suffix, >= 1 and within int64_t.
std::optional<int64_t> bytes_of(std::string_view text) {
  int64_t unit = 1;
  for (const auto& [suffix, size] : {std::pair{"KiB", int64_t{1} << 10},
                                     {"MiB", int64_t{1} << 20},
                                     {"GiB", int64_t{1} << 30}}) {
    if (text.ends_with(suffix)) {
      text.remove_suffix(3);
      unit = size;
      break;
    }
  }
  const std::optional<int64_t> n = count_of(text);
  if (!n || *n > std::numeric_limits<int64_t>::max() / unit) return {};
  return *n * unit;
}

std::optional<CheckpointSchedule> schedule_of(std::string_view text) {
  using S = CheckpointSchedule;
  if (text == "all") return S::store_all();
  if (text == "auto") return S::automatic();
  std::optional<int64_t> n;
  std::optional<S> out;
  if (text.starts_with("every:")) {
    n = count_of(text.substr(6));
    if (n) out = S::every(*n);
  } else if (text.starts_with("budget:")) {
    n = bytes_of(text.substr(7));
    if (n) out = S::memory_budget(*n);
  } else {
    n = count_of(text);
    if (n) out = S::binomial(*n);
  }
  if (!out || out->parameter < 1) return std::nullopt;
  return out;
}

std::optional<CheckpointSchedule> refuse(const std::string& got,
                                         std::string* error) {
  *error = CheckpointSchedule::refusal(got);
  return std::nullopt;
}

}  // namespace

std::string CheckpointSchedule::refusal(std::string_view got) {
  std::string text = "a checkpoint schedule is ";
  text.append(kGrammar).append("; got ").append(got);
  return text;
}

std::optional<CheckpointSchedule> CheckpointSchedule::parse(
    std::string_view text, std::string* error) {
  std::optional<CheckpointSchedule> s = schedule_of(text);
  if (!s) return refuse(nlohmann::json(std::string(text)).dump(), error);
  return s;
}

std::optional<CheckpointSchedule> CheckpointSchedule::from_json(
    const nlohmann::json& v, std::string* error) {
  if (v.is_string()) return parse(v.get_ref<const std::string&>(), error);
  std::string text;
  if (v.is_number_integer()) {
    text = v.dump();
  } else if (v.is_object() && v.size() == 1 &&
             v.begin().value().is_number_integer()) {
    // The older spellings {"every": k}, {"binomial": s}, {"budget": b}.
    const std::string& key = v.begin().key();
    const std::string n = v.begin().value().dump();
    if (key == "every" || key == "budget") text = key + ":" + n;
    if (key == "binomial") text = n;
  }
  std::optional<CheckpointSchedule> s;
  if (!text.empty()) s = schedule_of(text);
  if (!s) return refuse(v.dump(), error);
  return s;
}

std::string CheckpointSchedule::to_string() const {
  const std::string n = std::to_string(parameter);
  switch (kind) {
    case Kind::kBinomial:
      return n;
    case Kind::kEvery:
    case Kind::kMemoryBudget:
      return std::string(name_of(kind)) + ":" + n;
    default:
      return std::string(name_of(kind));
  }
}

CheckpointSchedule CheckpointSchedule::resolved(int64_t steps) const {
  if (kind != Kind::kAuto) return *this;
  return binomial(binomial_two_sweep_snapshots(std::max<int64_t>(1, steps)));
}

bool CheckpointSchedule::is_valid(std::string* error) const {
  switch (kind) {
    case Kind::kDefault:
    case Kind::kStoreAll:
    case Kind::kAuto:  // each loop resolves it with its own step count
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
  const std::string name(name_of(kind));
  switch (kind) {
    case Kind::kEvery:
    case Kind::kBinomial:
      return name + " " + std::to_string(parameter);
    case Kind::kMemoryBudget:
      return name + " " + std::to_string(parameter) + " B";
    default:
      return name;
  }
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
