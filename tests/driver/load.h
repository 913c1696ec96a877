// Loading a document given as JSON text, for the loader's suites: its graph,
// what it names, and the values of its "fetch" list.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "adgraph.h"
#include "core/error.h"
#include "driver/loader.h"

namespace adgraph::testing {

struct Loaded {
  Graph graph;
  driver::Document doc;

  // The fetch list's values with the document's feeds.
  std::vector<Tensor> fetched() {
    Session session(graph);
    return session.run(doc.fetch_values, doc.feeds);
  }
  // One value the document names, with its feeds.
  Tensor value(const std::string& name) {
    Session session(graph);
    return session.run(doc.values.at(name), doc.feeds);
  }
};

inline std::unique_ptr<Loaded> load(const std::string& text,
                                    const std::string& file = "t.json") {
  auto loaded = std::make_unique<Loaded>();
  loaded->doc = driver::load_document(
      driver::parse_document(text, file), file, loaded->graph);
  return loaded;
}

// The message a document is refused with ("loaded" when it is not).
inline std::string refusal(const std::string& text) {
  try {
    load(text);
  } catch (const JsonError& e) {
    return e.what();
  }
  return "loaded";
}

// Expects the document refused with a message that contains `part`.
inline void expect_refused(const std::string& text, const std::string& part) {
  const std::string message = refusal(text);
  EXPECT_NE(message.find(part), std::string::npos) << message;
}

}  // namespace adgraph::testing
