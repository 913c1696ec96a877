// One table per options struct: each field's name, type, default, range and
// doc, and the member it lives in. The struct's is_valid(), the JSON
// loader, Python's keyword arguments and the command lines are generated
// from it, so a field is added in one line and every front end gives the
// same default, range and message:
//
//   const FieldTable<LbfgsOptions>& LbfgsOptions::fields() {
//     static const FieldTable<LbfgsOptions> table = {
//         field("history", &LbfgsOptions::history, Range::closed(1, 1000),
//               "history size m"),
//         ...};
//     return table;
//   }
//
// The default is the member's initializer (the value in a default-made
// struct). A value out of range is refused with
//   "<name>: must be in [1, 1000], got 0"
// (check_value's detail after the field's name); each front end puts its
// own place before the detail (a JSON path, a keyword, an option).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "core/checkpoint_schedule.h"
#include "core/enum_names.h"

namespace adgraph {

enum class FieldType {
  kBool,
  kInteger,
  kReal,
  kText,
  kSchedule,  // CheckpointSchedule, in its own grammar
  kIntegers,  // a list of integers
  kIntPairs,  // a list of [i, j] pairs
};

constexpr auto enum_names(FieldType) {
  return std::array{EnumName{FieldType::kBool, "bool"},
                    EnumName{FieldType::kInteger, "integer"},
                    EnumName{FieldType::kReal, "real"},
                    EnumName{FieldType::kText, "text"},
                    EnumName{FieldType::kSchedule, "schedule"},
                    EnumName{FieldType::kIntegers, "integers"},
                    EnumName{FieldType::kIntPairs, "integer pairs"}};
}

using IntPairs = std::vector<std::pair<int64_t, int64_t>>;
using FieldValue = std::variant<bool,
                                int64_t,
                                double,
                                std::string,
                                CheckpointSchedule,
                                std::vector<int64_t>,
                                IntPairs>;

// The values a number may take: [low, high] with either end open or
// infinite; `finite` also refuses ±infinity (NaN is always refused).
struct Range {
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  bool low_open = false, high_open = false, finite = false;

  static Range any() { return {}; }
  static Range closed(double a, double b) { return {a, b}; }
  static Range at_least(double a) { return {.low = a}; }
  static Range above(double a) { return {.low = a, .low_open = true}; }
  static Range open(double a, double b) {
    return {.low = a, .high = b, .low_open = true, .high_open = true};
  }
  // (a, b]
  static Range above_to(double a, double b) {
    return {.low = a, .high = b, .low_open = true};
  }
  Range finite_only() const {
    Range r = *this;
    r.finite = true;
    return r;
  }
  bool contains(double v) const;
  // "in [1, 1000]", ">= 0", "> 0", "in (0, 1]", "a finite number >= 0";
  // empty when any value goes.
  std::string text() const;
};

// What a field is, apart from where it lives.
struct FieldInfo {
  std::string name;  // as the keyword and the JSON key ("max_iterations")
  FieldType type = FieldType::kReal;
  std::string doc;
  Range range;                       // numbers (and each list entry)
  std::vector<std::string> choices;  // text: one of these (when given)
};

template <class O>
struct Field : FieldInfo {
  std::function<FieldValue(const O&)> get;
  std::function<void(O&, const FieldValue&)> set;
};

template <class O>
using FieldTable = std::vector<Field<O>>;

// Why `v` is refused for `f` ("must be in [1, 1000], got 0"), or nullopt.
std::optional<std::string> check_value(const FieldInfo& f, const FieldValue& v);
// `v` as JSON (a schedule as its text), for defaults and summaries.
nlohmann::json field_json(const FieldValue& v);
// `v` as a command line writes it ("1e-08", "true", "all", "1,2,3").
std::string field_text(const FieldValue& v);

// The JSON value `j` as a value of `f` (type only, the range unchecked),
// or nullopt with `*error` saying what was expected.
std::optional<FieldValue> field_from_json(const FieldInfo& f,
                                          const nlohmann::json& j,
                                          std::string* error);
// The same from a command line's text.
std::optional<FieldValue> field_from_text(const FieldInfo& f,
                                          std::string_view text,
                                          std::string* error);

// The table's names: "a, b or c".
std::string field_names(const std::vector<std::string>& names);

namespace detail {

template <class M>
constexpr FieldType field_type() {
  if constexpr (std::is_same_v<M, bool>)
    return FieldType::kBool;
  else if constexpr (std::is_integral_v<M>)
    return FieldType::kInteger;
  else if constexpr (std::is_floating_point_v<M>)
    return FieldType::kReal;
  else if constexpr (std::is_same_v<M, std::string>)
    return FieldType::kText;
  else if constexpr (std::is_same_v<M, CheckpointSchedule>)
    return FieldType::kSchedule;
  else if constexpr (std::is_enum_v<M>)
    return FieldType::kText;
  else if constexpr (std::is_same_v<M, std::vector<int64_t>>)
    return FieldType::kIntegers;
  else
    return FieldType::kIntPairs;  // std::vector<std::pair<int, int>>
}

template <class M>
FieldValue to_value(const M& m) {
  if constexpr (std::is_same_v<M, bool>)
    return m;
  else if constexpr (std::is_integral_v<M>)
    return static_cast<int64_t>(m);
  else if constexpr (std::is_floating_point_v<M>)
    return static_cast<double>(m);
  else if constexpr (std::is_enum_v<M>)
    return std::string(name_of(m));
  else if constexpr (std::is_same_v<M, std::vector<std::pair<int, int>>>) {
    IntPairs out;
    for (const auto& [i, j] : m) out.emplace_back(i, j);
    return out;
  } else {
    return m;
  }
}

template <class M>
M from_value(const FieldValue& v) {
  if constexpr (std::is_same_v<M, bool>)
    return std::get<bool>(v);
  else if constexpr (std::is_integral_v<M>)
    return static_cast<M>(std::get<int64_t>(v));
  else if constexpr (std::is_floating_point_v<M>)
    return static_cast<M>(std::get<double>(v));
  else if constexpr (std::is_enum_v<M>)
    return *parse_enum<M>(std::get<std::string>(v));
  else if constexpr (std::is_same_v<M, std::vector<std::pair<int, int>>>) {
    M out;
    for (const auto& [i, j] : std::get<IntPairs>(v))
      out.emplace_back(static_cast<int>(i), static_cast<int>(j));
    return out;
  } else {
    return std::get<M>(v);
  }
}

// An integer member's range within its type's.
template <class M>
Range within_type(Range r) {
  if constexpr (std::is_integral_v<M> && !std::is_same_v<M, bool>) {
    r.low = std::max(r.low, static_cast<double>(std::numeric_limits<M>::min()));
    r.high =
        std::min(r.high, static_cast<double>(std::numeric_limits<M>::max()));
  }
  if constexpr (std::is_same_v<M, std::vector<std::pair<int, int>>>) {
    r.low = std::max(r.low, -2147483648.0);
    r.high = std::min(r.high, 2147483647.0);
  }
  return r;
}

template <class M>
std::vector<std::string> choices_of() {
  std::vector<std::string> out;
  if constexpr (std::is_enum_v<M>) {
    for (const auto& e : enum_names(M{})) out.emplace_back(e.name);
  }
  return out;
}

}  // namespace detail

// A field at `member` of O (an enum member takes its names from
// enum_names; an integer's range is also bounded by its type).
template <class O, class M>
Field<O> field(const char* name,
               M O::*member,
               Range range,
               const char* doc,
               std::vector<std::string> choices = {}) {
  Field<O> f;
  f.name = name;
  f.type = detail::field_type<M>();
  f.doc = doc;
  f.range = detail::within_type<M>(range);
  f.choices = choices.empty() ? detail::choices_of<M>() : std::move(choices);
  f.get = [member](const O& o) { return detail::to_value(o.*member); };
  f.set = [member](O& o, const FieldValue& v) {
    o.*member = detail::from_value<M>(v);
  };
  return f;
}

// A field at `member` of the struct at `inner` of O
// (HeatInverseOptions::config.nx).
template <class O, class I, class M>
Field<O> field(const char* name,
               I O::*inner,
               M I::*member,
               Range range,
               const char* doc,
               std::vector<std::string> choices = {}) {
  Field<I> f = field<I, M>(name, member, range, doc, std::move(choices));
  Field<O> out;
  static_cast<FieldInfo&>(out) = f;
  out.get = [inner, get = f.get](const O& o) { return get(o.*inner); };
  out.set = [inner, set = f.set](O& o, const FieldValue& v) {
    set(o.*inner, v);
  };
  return out;
}

// The first field of `o` out of its range: false, with the field's name in
// *name and check_value's detail in *error.
template <class O>
bool check_fields(const FieldTable<O>& table,
                  const O& o,
                  std::string* error,
                  std::string* name) {
  for (const Field<O>& f : table) {
    if (std::optional<std::string> why = check_value(f, f.get(o))) {
      *error = std::move(*why);
      if (name != nullptr) *name = f.name;
      return false;
    }
  }
  return true;
}

// Every field's name and value in `o`, in table order.
template <class O>
std::vector<std::pair<std::string, FieldValue>> field_values(
    const FieldTable<O>& table, const O& o) {
  std::vector<std::pair<std::string, FieldValue>> out;
  for (const Field<O>& f : table) out.emplace_back(f.name, f.get(o));
  return out;
}
// The same as one JSON object.
nlohmann::json fields_json(
    const std::vector<std::pair<std::string, FieldValue>>& values);

// The field of `table` called `name`, or nullptr.
template <class O>
const Field<O>* find_field(const FieldTable<O>& table, std::string_view name) {
  for (const Field<O>& f : table)
    if (f.name == name) return &f;
  return nullptr;
}

template <class O>
std::vector<std::string> names_of(const FieldTable<O>& table) {
  std::vector<std::string> out;
  for (const Field<O>& f : table) out.push_back(f.name);
  return out;
}

// Sets `name` of `o` from the JSON value `j`: nullopt, or why not (the
// type expected, or check_value's detail).
template <class O>
std::optional<std::string> set_from_json(const Field<O>& f,
                                         const nlohmann::json& j,
                                         O& o) {
  std::string error;
  std::optional<FieldValue> v = field_from_json(f, j, &error);
  if (!v) return error;
  if (std::optional<std::string> why = check_value(f, *v)) return why;
  f.set(o, *v);
  return std::nullopt;
}

// The same from a command line's text.
template <class O>
std::optional<std::string> set_from_text(const Field<O>& f,
                                         std::string_view text,
                                         O& o) {
  std::string error;
  std::optional<FieldValue> v = field_from_text(f, text, &error);
  if (!v) return error;
  if (std::optional<std::string> why = check_value(f, *v)) return why;
  f.set(o, *v);
  return std::nullopt;
}

}  // namespace adgraph
