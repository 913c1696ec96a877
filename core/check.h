// Internal invariant checks. ADGRAPH_CHECK is for programming errors inside
// adgraph, never for user input: user errors throw adgraph::Error.
#pragma once

#include <cstdlib>
#include <iostream>
#include <sstream>

namespace adgraph::detail {

// Collects the streamed context of a failed check and aborts when destroyed.
class CheckFailure final {
 public:
  CheckFailure(const char* file, int line, const char* condition) {
    stream_ << file << ":" << line << ": check failed: " << condition << " ";
  }
  [[noreturn]] ~CheckFailure() {
    std::cerr << stream_.str() << std::endl;
    std::abort();
  }
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

}  // namespace adgraph::detail

#define ADGRAPH_CHECK(cond) \
  if (cond) {               \
  } else                    \
    ::adgraph::detail::CheckFailure(__FILE__, __LINE__, #cond).stream()
