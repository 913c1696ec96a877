// The Loader's typed access to JSON fields and its error messages.
#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <set>

#include "core/ad/gradients.h"
#include "core/ad/jvp.h"
#include "core/error.h"
#include "core/loops/loop.h"
#include "core/op.h"
#include "core/tensor_json.h"
#include "driver/loader_impl.h"

namespace adgraph::driver::detail {

std::string type_of(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  if (v.is_object()) return "an object";
  if (v.is_boolean()) return "a boolean";
  return "null";
}

void Loader::fail(const std::string& node,
                  const std::string& op,
                  const std::string& field,
                  const std::string& detail) const {
  throw JsonError(detail, node, op, field, file_);
}

void Loader::only(const json& object,
                  std::initializer_list<const char*> allowed,
                  const std::string& node,
                  const std::string& where) const {
  for (const auto& [key, value] : object.items()) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (ok) continue;
    std::string list;
    for (const char* a : allowed)
      list += (list.empty() ? "" : ", ") + std::string(a);
    fail(node,
         {},
         where.empty() ? key : where + "." + key,
         "unknown field (allowed: " + list + ")");
  }
}

const json& Loader::require(const json& object,
                            const char* key,
                            bool (json::*is)() const noexcept,
                            const char* expected,
                            const std::string& node,
                            const std::string& where) const {
  const std::string field = where.empty() ? key : where + "." + key;
  if (!object.contains(key)) fail(node, {}, field, "required field is missing");
  const json& v = object.at(key);
  if (!(v.*is)())
    fail(node,
         {},
         field,
         std::string("expected ") + expected + ", found " + type_of(v));
  return v;
}

Value Loader::resolve(const std::map<std::string, Value>& scope,
                      const json& ref,
                      const std::string& node,
                      const std::string& op,
                      const std::string& field) const {
  if (!ref.is_string())
    fail(node, op, field, "expected a node name, found " + type_of(ref));
  const std::string text = ref.get<std::string>();
  auto it = scope.find(text);
  if (it != scope.end()) return it->second;
  const auto colon = text.rfind(':');
  if (colon != std::string::npos) {
    auto base = scope.find(text.substr(0, colon));
    const std::string index = text.substr(colon + 1);
    if (base != scope.end() && !index.empty() &&
        std::all_of(index.begin(), index.end(), ::isdigit) &&
        index.size() < 6) {
      const int k = std::stoi(index);
      const Value& v = base->second;
      // A carried group ("e" after a repeat block) has its outputs listed
      // as "e:0" … "e:K−1"; anything past them does not exist.
      const std::string group = base->first + ":";
      if (scope.count(group + "0")) {
        int size = 0;
        while (scope.count(group + std::to_string(size))) ++size;
        fail(node,
             op,
             field,
             "\"" + base->first + "\" has " + std::to_string(size) +
                 " output(s), not " + std::to_string(k + 1));
      }
      if (k < v.node().num_outputs()) return Value(&v.graph(), v.node_id(), k);
      fail(node,
           op,
           field,
           "\"" + base->first + "\" has " +
               std::to_string(v.node().num_outputs()) + " output(s), not " +
               std::to_string(k + 1));
    }
  }
  fail(node, op, field, "unknown node \"" + text + "\"");
}

Shape Loader::shape_of(const json& v,
                       const std::string& node,
                       const std::string& field) const {
  if (!v.is_array())
    fail(node, {}, field, "expected a list of extents, found " + type_of(v));
  Shape s;
  for (const json& e : v) {
    if (!e.is_number_integer() ||
        (e.is_number_unsigned() && e.get<uint64_t>() > uint64_t{1} << 62) ||
        e.get<int64_t>() < 0) {
      fail(node,
           {},
           field,
           "extents must be non-negative integers, found " + e.dump());
    }
    s.push_back(e.get<int64_t>());
  }
  if (checked_num_elements(s) < 0) {
    fail(node,
         {},
         field,
         "shape " + shape_string(s) +
             " has more than 2^30 elements (the limit for one tensor)");
  }
  return s;
}

Tensor Loader::value_of(const json& v,
                        const Shape& shape,
                        const std::string& node,
                        const std::string& field) const {
  const int64_t n = num_elements(shape);
  Tensor t;
  try {
    if (v.is_object()) {
      only(v, {"fill", "shape"}, node, field);
      const json& fill =
          require(v, "fill", &json::is_number, "a number", node, field);
      const Shape given =
          shape_of(require(v, "shape", &json::is_array, "a list", node, field),
                   node,
                   field + ".shape");
      if (given != shape) {
        fail(node,
             {},
             field + ".shape",
             "shape " + shape_string(given) + " differs from the node's " +
                 shape_string(shape));
      }
      if (!std::isfinite(fill.get<double>()))
        fail(node, {}, field + ".fill", "non-finite number");
      return Tensor(shape, fill.get<double>());
    }
    t = tensor_from_json(v);
  } catch (const JsonError&) {
    throw;
  } catch (const Error& e) {
    fail(node, {}, field, e.detail());
  }
  if (t.size() != n) {
    fail(node,
         {},
         field,
         std::to_string(t.size()) + " value(s) for shape " +
             shape_string(shape) + " (" + std::to_string(n) + " values)");
  }
  if (t.shape() != shape && t.rank() > 1) {
    fail(node,
         {},
         field,
         "nested lists of shape " + shape_string(t.shape()) +
             " for a node of shape " + shape_string(shape));
  }
  return std::move(t).reshaped(shape);
}

}  // namespace adgraph::driver::detail
