// Files a program writes its results to: checked before any work starts,
// then written whole or not at all, so a long run never ends in a lost
// result or a half-written file.
#pragma once

#include <string>

namespace adgraph {

// Throws OptionsError (with `field`, e.g. "--output") when `path` could not
// be written: it names a folder, its folder is missing, or the file or its
// folder is read-only. The message says which, and that nothing was run.
void check_output_path(const std::string& path, const std::string& field);

// Writes `text` to "<path>.partial", then renames it to `path`: an existing
// file is replaced whole or not at all. Throws OptionsError naming the
// system's reason (strerror) when either step fails.
void write_output_file(const std::string& path,
                       const std::string& text,
                       const std::string& field);

}  // namespace adgraph
