// The exceptions adgraph throws for user errors. Every message names, when it
// knows them, the file, the node (with its op) and the field, e.g.
//   graph.json: node "l" (pow): input "r": shape [3] does not broadcast with
//   [2]
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace adgraph {

// Base class of every user-facing error. `what()` is the composed message;
// the parts are kept so a caller (the JSON loader) can add the file name.
class Error : public std::runtime_error {
 public:
  // `detail` is the description; the other parts may be empty.
  explicit Error(std::string detail,
                 std::string node = {},
                 std::string op = {},
                 std::string field = {},
                 std::string file = {});

  const std::string& detail() const { return detail_; }
  const std::string& node() const { return node_; }
  const std::string& op() const { return op_; }
  const std::string& field() const { return field_; }
  const std::string& file() const { return file_; }

  // Composes "file: node "n" (op): field: detail", skipping empty parts.
  static std::string compose(const std::string& detail,
                             const std::string& node,
                             const std::string& op,
                             const std::string& field,
                             const std::string& file);

 private:
  std::string detail_, node_, op_, field_, file_;
};

// A malformed graph: unknown op or input, bad attribute, missing gradient.
class GraphError : public Error {
 public:
  using Error::Error;
};

// Shapes that do not fit together, reported when the node is built.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// A JSON document that cannot be loaded.
class JsonError : public Error {
 public:
  using Error::Error;
};

// An options struct with a field out of its valid range.
class OptionsError : public Error {
 public:
  using Error::Error;
};

// A run-time failure: missing feed, wrong feed shape, ranks that disagree.
class RunError : public Error {
 public:
  using Error::Error;
};

// For an options struct's is_valid(…, error, field): writes why the
// option is out of range into *error and its name into *field (when
// given), and returns false.
inline bool invalid_option(std::string* error,
                           std::string* field,
                           const char* option,
                           std::string why) {
  *error = std::move(why);
  if (field != nullptr) *field = option;
  return false;
}

}  // namespace adgraph
