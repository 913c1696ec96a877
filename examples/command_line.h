// Shared by the MPI examples: parses the command line on every rank, with
// help and error text from rank 0 only.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>

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

}  // namespace adgraph::examples
