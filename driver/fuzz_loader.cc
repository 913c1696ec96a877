// libFuzzer target: any byte string given to the JSON loader either builds a
// graph or throws adgraph::Error; nothing else (crash, leak, undefined
// behaviour, other exception) is acceptable. Built with -DADGRAPH_FUZZ=ON and
// clang; scripts/test runs it for 30 s from examples/graphs and the bad
// documents in tests/driver/bad.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/graph.h"
#include "driver/loader.h"

// Feeds are built by the loader; a document may legitimately ask for up to
// what the machine has (gigabytes), which libFuzzer would report as an
// out-of-memory finding. The loader's memory check is what is under test:
// give it a budget below libFuzzer's 4 GiB limit.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("ADGRAPH_MEMORY_LIMIT", "1G", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json doc =
        adgraph::driver::parse_document(text, "fuzz.json");
    adgraph::Graph graph;
    adgraph::driver::load_document(doc, "fuzz.json", graph);
  } catch (const adgraph::Error&) {
    // A clear error is the expected outcome for most inputs.
  }
  return 0;
}
