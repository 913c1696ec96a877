// Shared by the MPI examples: parses the command line on every rank, with
// help and error text from rank 0 only.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/fields.h"
#include "solvers/heat_solver.h"

namespace adgraph::examples {

// Nothing when the program should go on; otherwise its exit code (0 after
// --help, 2 after a bad option; CLI11 prints on rank 0).
inline std::optional<int> parse_command_line(CLI::App& app,
                                             int argc,
                                             char** argv,
                                             bool root) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // 2 for a bad argument on every rank (CLI11's codes differ by error).
    const int code = root ? app.exit(e) : e.get_exit_code();
    return code == 0 ? 0 : 2;
  }
  return std::nullopt;
}

// The patch grid's options of the inversion examples: --nx, --ny (interior
// points), --px, --py (patches), defaults from `c`.
inline void add_grid_options(CLI::App& app, solvers::HeatConfig& c) {
  app.add_option("--nx", c.nx, "interior grid points along x (rows)")
      ->capture_default_str();
  app.add_option("--ny", c.ny, "interior grid points along y (columns)")
      ->capture_default_str();
  app.add_option(
         "--px", c.px, "patch rows N (px * py must equal the rank count)")
      ->capture_default_str();
  app.add_option("--py", c.py, "patch columns M")->capture_default_str();
}

// One option per field of `table` that writes into `o`: --<prefix><name>
// with '_' as '-', the field's doc, and o's value as the default shown. A
// bool is a flag; a list takes several values (pairs as "i,j"). The text
// is read with the field's type and a name against its list (CLI11
// reports a malformed one); ranges are left to the options' is_valid(),
// whose message is the table's.
template <class O>
void add_field_options(CLI::App& app,
                       const FieldTable<O>& table,
                       O& o,
                       const std::string& prefix = "") {
  for (const Field<O>& f : table) {
    std::string name = "--" + prefix + f.name;
    for (char& ch : name)
      if (ch == '_') ch = '-';
    std::string doc = f.doc;
    if (!f.choices.empty()) doc += ": " + field_names(f.choices);
    auto set = [&f, &o, name](const std::string& text) {
      std::string error;
      std::optional<FieldValue> v = field_from_text(f, text, &error);
      if (!v) throw CLI::ValidationError(name, error);
      // A name out of its list cannot be stored (an enum): refused here.
      if (!f.choices.empty()) {
        if (std::optional<std::string> why = check_value(f, *v))
          throw CLI::ValidationError(name, *why);
      }
      f.set(o, *v);
    };
    CLI::Option* opt = nullptr;
    if (f.type == FieldType::kBool) {
      opt = app.add_flag_function(
          name, [&f, &o](int64_t n) { f.set(o, FieldValue(n > 0)); }, doc);
    } else if (f.type == FieldType::kIntegers ||
               f.type == FieldType::kIntPairs) {
      const bool pairs = f.type == FieldType::kIntPairs;
      opt = app.add_option_function<std::vector<std::string>>(
          name,
          [set, pairs](const std::vector<std::string>& values) {
            std::string text = pairs ? "[" : "";
            for (std::size_t i = 0; i < values.size(); ++i) {
              text += i > 0 ? "," : "";
              text += pairs ? "[" + values[i] + "]" : values[i];
            }
            set(pairs ? text + "]" : text);
          },
          doc);
    } else {
      opt = app.add_option_function<std::string>(name, set, doc);
    }
    static const char* const kTypes[] = {
        "", "INT", "FLOAT", "TEXT", "SCHEDULE", "INT", "I,J"};
    opt->type_name(kTypes[static_cast<int>(f.type)]);
    opt->default_str(field_text(f.get(o)));
  }
}

}  // namespace adgraph::examples
