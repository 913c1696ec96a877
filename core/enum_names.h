// Names of enum values, from one table per enum.
//
// An enum gets its names by a constexpr function `enum_names(E)` beside its
// definition (found by argument-dependent lookup), listing every value once:
//
//   enum class Color { kRed, kGreen };
//   constexpr auto enum_names(Color) {
//     return std::array{EnumName{Color::kRed, "red"},
//                       EnumName{Color::kGreen, "green"}};
//   }
//
// Then name_of(Color::kRed) is "red", parse_enum<Color>("green") is
// Color::kGreen (nullopt for a name not in the table) and
// enum_choices<Color>() is "red or green", for messages that list them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace adgraph {

template <class E>
struct EnumName {
  E value;
  // A string literal: name_of(e).data() is null-terminated.
  const char* name;
};

template <class E>
EnumName(E, const char*) -> EnumName<E>;

// The name of `e` in its table, "?" for a value the table does not hold.
template <class E>
constexpr std::string_view name_of(E e) {
  for (const auto& entry : enum_names(E{}))
    if (entry.value == e) return entry.name;
  return "?";
}

// The value named `text` (exactly, case-sensitive), or nullopt.
template <class E>
constexpr std::optional<E> parse_enum(std::string_view text) {
  for (const auto& entry : enum_names(E{}))
    if (text == entry.name) return entry.value;
  return std::nullopt;
}

// Every name in table order: "a, b or c".
template <class E>
std::string enum_choices() {
  const auto table = enum_names(E{});
  std::string out;
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (i > 0) out += i + 1 == table.size() ? " or " : ", ";
    out += table[i].name;
  }
  return out;
}

}  // namespace adgraph
