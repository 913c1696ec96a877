#include "core/fields.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace adgraph {
namespace {

// A bound as a message writes it: integers without a point, 1e-06 style
// otherwise.
std::string number_text(double v) {
  char text[32];
  // UINT64_MAX as a double is 2^64: the bound of a uint64_t field.
  if (v == 18446744073709551616.0) return "18446744073709551615";
  if (std::abs(v) < 9.2e18 && v == std::floor(v))
    std::snprintf(text, sizeof text, "%lld", static_cast<long long>(v));
  else
    std::snprintf(text, sizeof text, "%g", v);
  return text;
}

std::string integer_text(int64_t v) { return std::to_string(v); }

std::string real_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// "must be in [1, 1000], got 0", or nullopt.
std::optional<std::string> check_number(const FieldInfo& f,
                                        double v,
                                        const std::string& shown) {
  if (f.range.contains(v)) return std::nullopt;
  return "must be " + f.range.text() + ", got " + shown;
}

}  // namespace

bool Range::contains(double v) const {
  if (std::isnan(v) || (finite && !std::isfinite(v))) return false;
  if (low_open ? !(v > low) : !(v >= low)) return false;
  if (high_open ? !(v < high) : !(v <= high)) return false;
  return true;
}

std::string Range::text() const {
  const bool has_low = std::isfinite(low), has_high = std::isfinite(high);
  std::string out = finite ? "a finite number " : "";
  if (has_low && has_high) {
    out += std::string("in ") + (low_open ? "(" : "[") + number_text(low) +
           ", " + number_text(high) + (high_open ? ")" : "]");
  } else if (has_low) {
    out += (low_open ? "> " : ">= ") + number_text(low);
  } else if (has_high) {
    out += (high_open ? "< " : "<= ") + number_text(high);
  } else if (finite) {
    out.pop_back();
  }
  return out;
}

std::optional<std::string> check_value(const FieldInfo& f,
                                       const FieldValue& v) {
  std::optional<std::string> why;
  switch (f.type) {
    case FieldType::kInteger: {
      const int64_t x = std::get<int64_t>(v);
      return check_number(f, static_cast<double>(x), integer_text(x));
    }
    case FieldType::kReal: {
      const double x = std::get<double>(v);
      return check_number(f, x, real_text(x));
    }
    case FieldType::kIntegers:
      for (int64_t x : std::get<std::vector<int64_t>>(v))
        if (!why)
          why = check_number(f, static_cast<double>(x), integer_text(x));
      break;
    case FieldType::kIntPairs:
      for (const auto& [i, j] : std::get<IntPairs>(v)) {
        if (!why)
          why = check_number(f, static_cast<double>(i), integer_text(i));
        if (!why)
          why = check_number(f, static_cast<double>(j), integer_text(j));
      }
      break;
    case FieldType::kText: {
      const std::string& t = std::get<std::string>(v);
      if (f.choices.empty()) return std::nullopt;
      for (const std::string& c : f.choices)
        if (c == t) return std::nullopt;
      return "must be " + field_names(f.choices) + ", got " +
             nlohmann::json(t).dump();
    }
    case FieldType::kBool:
    case FieldType::kSchedule:
      return std::nullopt;
  }
  if (why) *why = "every entry " + *why;
  return why;
}

nlohmann::json field_json(const FieldValue& v) {
  return std::visit(
      [](const auto& x) -> nlohmann::json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, CheckpointSchedule>)
          return x.to_string();
        else if constexpr (std::is_same_v<T, IntPairs>) {
          nlohmann::json out = nlohmann::json::array();
          for (const auto& [i, j] : x) out.push_back({i, j});
          return out;
        } else {
          return x;
        }
      },
      v);
}

nlohmann::json fields_json(
    const std::vector<std::pair<std::string, FieldValue>>& values) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, v] : values) out[name] = field_json(v);
  return out;
}

std::string field_text(const FieldValue& v) {
  if (std::holds_alternative<std::string>(v)) return std::get<std::string>(v);
  if (std::holds_alternative<double>(v)) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", std::get<double>(v));
    return text;
  }
  if (std::holds_alternative<std::vector<int64_t>>(v)) {
    std::string out;
    for (int64_t x : std::get<std::vector<int64_t>>(v)) {
      if (!out.empty()) out += ',';  // not "," + …: GCC 12's false
      out += std::to_string(x);      // -Wstringop-overflow
    }
    return out;
  }
  const nlohmann::json j = field_json(v);
  return j.is_string() ? j.get<std::string>() : j.dump();
}

namespace {

// An integral JSON number (or a float with no fraction) within int64_t.
std::optional<int64_t> json_integer(const nlohmann::json& j) {
  if (j.is_number_integer() && !j.is_number_unsigned()) return j.get<int64_t>();
  if (j.is_number_unsigned() && j.get<uint64_t>() <= uint64_t{INT64_MAX})
    return static_cast<int64_t>(j.get<uint64_t>());
  if (j.is_number_float()) {
    const double d = j.get<double>();
    if (d == std::floor(d) && std::abs(d) < 9.2e18)
      return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

std::optional<FieldValue> refuse(const std::string& expected,
                                 const std::string& got,
                                 std::string* error) {
  *error = "expected " + expected + ", got " + got;
  return std::nullopt;
}

}  // namespace

std::optional<FieldValue> field_from_json(const FieldInfo& f,
                                          const nlohmann::json& j,
                                          std::string* error) {
  switch (f.type) {
    case FieldType::kBool:
      if (j.is_boolean()) return j.get<bool>();
      return refuse("true or false", j.dump(), error);
    case FieldType::kInteger: {
      if (std::optional<int64_t> n = json_integer(j)) return *n;
      // Integral but beyond 64 bits: out of range rather than not an integer.
      if (j.is_number() && j.get<double>() == std::floor(j.get<double>())) {
        *error = "must be " + f.range.text() + ", got " + j.dump();
        return std::nullopt;
      }
      return refuse("an integer", j.dump(), error);
    }
    case FieldType::kReal:
      if (j.is_number()) return j.get<double>();
      return refuse("a number", j.dump(), error);
    case FieldType::kText:
      if (j.is_string()) return j.get<std::string>();
      return refuse("a string", j.dump(), error);
    case FieldType::kSchedule: {
      std::optional<CheckpointSchedule> s =
          CheckpointSchedule::from_json(j, error);
      if (!s) return std::nullopt;
      return *s;
    }
    case FieldType::kIntegers: {
      std::vector<int64_t> out;
      for (const auto& x : j.is_array() ? j : nlohmann::json::array({nullptr}))
        if (std::optional<int64_t> n = json_integer(x)) out.push_back(*n);
      if (j.is_array() && out.size() == j.size()) return out;
      return refuse("a list of integers", j.dump(), error);
    }
    case FieldType::kIntPairs: {
      IntPairs out;
      for (const auto& x : j.is_array() ? j : nlohmann::json::array()) {
        if (!x.is_array() || x.size() != 2) break;
        auto a = json_integer(x[0]), b = json_integer(x[1]);
        if (!a || !b) break;
        out.emplace_back(*a, *b);
      }
      if (j.is_array() && out.size() == j.size()) return out;
      return refuse("a list of [i, j] pairs of integers", j.dump(), error);
    }
  }
  return std::nullopt;
}

std::optional<FieldValue> field_from_text(const FieldInfo& f,
                                          std::string_view text,
                                          std::string* error) {
  const std::string t(text);
  const std::string shown = nlohmann::json(t).dump();
  switch (f.type) {
    case FieldType::kBool:
      if (t == "true") return true;
      if (t == "false") return false;
      return refuse("true or false", shown, error);
    case FieldType::kInteger:
    case FieldType::kReal: {
      // An integer reads as a JSON number does in a document; a real as
      // strtod reads it (also inf, nan and 1e309, which is inf).
      if (f.type == FieldType::kReal && !t.empty()) {
        char* end = nullptr;
        const double d = std::strtod(t.c_str(), &end);
        if (*end == '\0') return d;
      }
      const nlohmann::json j = nlohmann::json::parse(t, nullptr, false);
      if (j.is_number() && f.type == FieldType::kInteger)
        return field_from_json(f, j, error);
      return refuse(
          f.type == FieldType::kReal ? "a number" : "an integer", shown, error);
    }
    case FieldType::kText:
      return t;
    case FieldType::kSchedule: {
      std::optional<CheckpointSchedule> s = CheckpointSchedule::parse(t, error);
      if (!s) return std::nullopt;
      return *s;
    }
    case FieldType::kIntegers:
    case FieldType::kIntPairs: {
      // "1,2,3" (or "[[0,1],[2,3]]" for pairs) as JSON.
      const std::string doc =
          f.type == FieldType::kIntegers ? "[" + t + "]" : t;
      const nlohmann::json j = nlohmann::json::parse(doc, nullptr, false);
      if (j.is_discarded())
        return refuse(f.type == FieldType::kIntegers
                          ? "a list of integers"
                          : "a list of [i, j] pairs of integers",
                      shown,
                      error);
      return field_from_json(f, j, error);
    }
  }
  return std::nullopt;
}

std::string field_names(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace adgraph
