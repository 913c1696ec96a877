#include "core/error.h"

#include <utility>

namespace adgraph {

Error::Error(std::string detail,
             std::string node,
             std::string op,
             std::string field,
             std::string file)
    : std::runtime_error(compose(detail, node, op, field, file)),
      detail_(std::move(detail)),
      node_(std::move(node)),
      op_(std::move(op)),
      field_(std::move(field)),
      file_(std::move(file)) {}

std::string Error::compose(const std::string& detail,
                           const std::string& node,
                           const std::string& op,
                           const std::string& field,
                           const std::string& file) {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!node.empty()) {
    out += "node \"" + node + "\"";
    if (!op.empty()) out += " (" + op + ")";
    out += ": ";
  } else if (!op.empty()) {
    out += "op \"" + op + "\": ";
  }
  if (!field.empty()) out += field + ": ";
  out += detail;
  return out;
}

}  // namespace adgraph
