// Shared by the MPI examples: parses the command line on every rank, with
// help and error text from rank 0 only.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>

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
    return root ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 2);
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

}  // namespace adgraph::examples
