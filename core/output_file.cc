#include "core/output_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace adgraph {

void check_output_path(const std::string& path, const std::string& field) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path file(path);
  if (fs::is_directory(file, ec)) {
    throw OptionsError(
        path + ": is a directory, not a file; nothing was run", {}, {}, field);
  }
  const fs::path dir =
      file.has_parent_path() ? file.parent_path() : fs::path(".");
  const bool folder = fs::is_directory(dir, ec);
  const bool ok = fs::exists(file, ec)
                      ? ::access(path.c_str(), W_OK) == 0
                      : folder && ::access(dir.c_str(), W_OK | X_OK) == 0;
  if (!ok) {
    throw OptionsError(path + ": cannot be written (" +
                           (folder ? "permission denied" : "no such folder") +
                           "); nothing was run",
                       {},
                       {},
                       field);
  }
}

void write_output_file(const std::string& path,
                       const std::string& text,
                       const std::string& field) {
  const std::string partial = path + ".partial";
  auto fail = [&](int error) {
    const std::string why = error != 0 ? std::strerror(error) : "write failed";
    std::remove(partial.c_str());
    throw OptionsError(
        path + ": cannot be written (" + why + ")", {}, {}, field);
  };
  {
    errno = 0;
    std::ofstream out(partial, std::ios::binary);
    out << text;
    out.flush();
    if (!out) fail(errno);
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) fail(errno);
}

}  // namespace adgraph
