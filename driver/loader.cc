#include "driver/loader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <set>

#include "builtin_ops.h"
#include "core/error.h"
#include "core/exec/plan_checks.h"
#include "core/exec/session.h"
#include "core/fields.h"
#include "core/loops/loop.h"
#include "core/op.h"
#include "core/tensor_json.h"
#include "driver/loader_impl.h"
#include "mpi_ops/communicator.h"
#include "optim/minimize.h"

namespace adgraph::driver {
namespace detail {

Document Loader::load(const json& doc) {
  Document d;
  if (!doc.is_object())
    fail({}, {}, "document", "expected an object, found " + type_of(doc));
  only(doc,
       {"adgraph",
        "nodes",
        "gradients",
        "tangents",
        "feeds",
        "fetch",
        "optimize",
        "communicators",
        "doc"},
       {},
       "");
  const json& version =
      require(doc, "adgraph", &json::is_number_integer, "an integer", {}, "");
  if (version.get<int64_t>() != kVersion) {
    fail({},
         {},
         "adgraph",
         "unsupported format version " + version.dump() +
             " (this build reads version 1 only)");
  }
  auto section = [&](const char* key,
                     bool (json::*is)() const noexcept,
                     const char* expected) -> const json* {
    if (!doc.contains(key)) return nullptr;
    return &require(doc, key, is, expected, {}, "");
  };
  if (const json* s = section("communicators", &json::is_object, "an object"))
    load_communicators(*s);
  load_nodes(require(doc, "nodes", &json::is_array, "a list", {}, ""), d);
  load_derivatives(section("gradients", &json::is_object, "an object"),
                   section("tangents", &json::is_object, "an object"),
                   d);
  if (const json* s = section("feeds", &json::is_object, "an object"))
    load_feeds(*s, d);
  if (const json* s = section("fetch", &json::is_array, "a list"))
    load_fetch(*s, d);
  if (const json* s = section("optimize", &json::is_object, "an object"))
    load_optimize(*s, d);
  return d;
}

void Loader::pass_on(const Error& e,
                     const std::string& node,
                     const std::string& op,
                     const std::string& field) const {
  throw JsonError(e.detail(),
                  e.node().empty() ? node : e.node(),
                  e.op().empty() ? op : e.op(),
                  field,
                  file_);
}

void Loader::load_communicators(const json& communicators) {
  auto world = Communicator::world();
  const int size = world->size(), rank = world->rank();
  for (const auto& item : communicators.items()) {
    // Named, not structured bindings: the lambdas below capture them.
    const std::string key = item.key();
    const json& spec = item.value();
    const std::string field = "communicators." + key;
    if (!spec.is_object())
      fail({}, {}, field, "expected an object, found " + type_of(spec));
    only(spec, {"color", "key", "rows_of", "columns_of"}, {}, field);
    std::string constructors;
    for (const char* c : {"color", "rows_of", "columns_of"})
      if (spec.contains(c))
        constructors +=
            (constructors.empty() ? "\"" : ", \"") + std::string(c) + "\"";
    if (constructors.find(',') != std::string::npos) {
      fail({},
           {},
           field,
           "one of \"color\", \"rows_of\" and \"columns_of\" makes a "
           "communicator, found " +
               constructors);
    }
    if (spec.contains("key") && !spec.contains("color"))
      fail({}, {}, field + ".key", "\"key\" orders the ranks of a \"color\"");
    std::shared_ptr<Communicator> made;
    for (const char* grid : {"rows_of", "columns_of"}) {
      if (!spec.contains(grid)) continue;
      const Shape dims = shape_of(spec.at(grid), {}, field + "." + grid);
      if (dims.size() != 2 || dims[0] * dims[1] != size) {
        fail({},
             {},
             field + "." + grid,
             "expected [rows, cols] of a patch grid with " +
                 std::to_string(size) + " patches (one per rank)");
      }
      const int rows = static_cast<int>(dims[0]),
                cols = static_cast<int>(dims[1]);
      made = std::string(grid) == "rows_of"
                 ? world->row_communicator(rows, cols)
                 : world->column_communicator(rows, cols);
    }
    if (spec.contains("color")) {
      // One entry per rank, so every rank reads the same document.
      auto per_rank = [&](const char* part) {
        const json& list = spec.at(part);
        if (!list.is_array() || static_cast<int>(list.size()) != size) {
          fail({},
               {},
               field + "." + part,
               "expected a list of " + std::to_string(size) +
                   " integers, one per rank");
        }
        // Every rank's entry is checked, so all ranks fail alike.
        for (std::size_t r = 0; r < list.size(); ++r) {
          const json& v = list[r];
          if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
              v.get<int64_t>() > 1000000) {
            fail({},
                 {},
                 field + "." + part + "[" + std::to_string(r) + "]",
                 "expected an integer in [0, 1000000], found " + v.dump());
          }
        }
        return static_cast<int>(list[rank].get<int64_t>());
      };
      const int color = per_rank("color");
      const int order = spec.contains("key") ? per_rank("key") : rank;
      made = world->split(color, order);
    }
    if (!made) {
      fail({},
           {},
           field,
           "expected \"color\" (and \"key\"), \"rows_of\" or \"columns_of\"");
    }
    communicators_[key] = std::move(made);
  }
}

void Loader::load_feeds(const json& feeds, Document& d) {
  // Feeds are built here, before any plan: check their sum first, so that
  // many feeds each under the tensor limit cannot exhaust the machine.
  constexpr std::size_t kWorthChecking = std::size_t{256} << 20;
  std::size_t total = 0;
  for (const auto& [key, v] : feeds.items()) {
    const Value target = resolve(d.values, json(key), key, {}, "feeds." + key);
    total += sizeof(double) * num_elements(target.shape());
  }
  if (total >= kWorthChecking && total > memory_available()) {
    fail({},
         {},
         "feeds",
         "the " + std::to_string(feeds.size()) + " feeds need " +
             byte_string(total) + " together, more than the " +
             byte_string(memory_available()) +
             " this process can allocate (MemAvailable; "
             "ADGRAPH_MEMORY_LIMIT overrides)");
  }
  std::map<Value, std::string> fed;
  for (const auto& [key, v] : feeds.items()) {
    const std::string field = "feeds." + key;
    const Value target = resolve(d.values, json(key), key, {}, field);
    if (auto [it, fresh] = fed.emplace(target, key); !fresh) {
      fail(key,
           {},
           field,
           "\"" + key + "\" and \"" + it->second +
               "\" name the same placeholder; feed it once");
    }
    Tensor value = grid_feed(v, target, key, field);
    try {
      check_feed(target, value);
    } catch (const Error& e) {
      pass_on(e, key, target.node().op_name(), field);
    }
    d.feeds[target] = std::move(value);
  }
}

void Loader::load_fetch(const json& fetch, Document& d) {
  for (std::size_t i = 0; i < fetch.size(); ++i) {
    const std::string field = "fetch[" + std::to_string(i) + "]";
    d.fetch_values.push_back(resolve(d.values, fetch[i], {}, {}, field));
    d.fetch.push_back(fetch[i].get<std::string>());
  }
}

void Loader::load_optimize(const json& o, Document& d) {
  only(o,
       {"objective", "variables", "method", "bounds", "layout", "options"},
       {},
       "optimize");
  d.has_optimize = true;
  Optimize& opt = d.optimize;
  const json& objective =
      require(o, "objective", &json::is_string, "a node name", {}, "optimize");
  opt.objective = resolve(d.values, objective, {}, {}, "optimize.objective");
  const json& vars =
      require(o, "variables", &json::is_object, "an object", {}, "optimize");
  if (vars.empty())
    fail({}, {}, "optimize.variables", "no variables to optimise");
  for (const auto& [key, start] : vars.items()) {
    const std::string field = "optimize.variables." + key;
    const Value x = resolve(d.values, json(key), key, {}, field);
    for (std::size_t k = 0; k < opt.variables.size(); ++k) {
      if (opt.variables[k] == x)
        fail(key,
             {},
             field,
             "\"" + key + "\" and \"" + opt.names[k] +
                 "\" name the same value; list each variable once");
    }
    opt.names.push_back(key);
    opt.variables.push_back(x);
    opt.start.push_back(value_of(start, x.shape(), key, field));
  }
  try {
    optim::check_problem(opt.objective, opt.variables, opt.start);
  } catch (const Error& e) {
    // "optimize.objective", or "optimize.variables.<name>".
    const bool variable = e.field() == "variables" && !e.node().empty();
    pass_on(
        e, {}, {}, "optimize." + e.field() + (variable ? "." + e.node() : ""));
  }
  // Bounds select L-BFGS-B unless a method is named.
  const bool has_bounds = o.contains("bounds");
  const json& method_field = o.contains("method") ? o.at("method") : json();
  if (!method_field.is_null() && !method_field.is_string())
    fail({}, {}, "optimize.method", "expected a string");
  const std::string method = method_field.is_string()
                                 ? method_field.get<std::string>()
                                 : (has_bounds ? "lbfgsb" : "lbfgs");
  if (method != "lbfgs" && method != "lbfgsb")
    fail({},
         {},
         "optimize.method",
         "unknown method \"" + method + "\" (known: lbfgs, lbfgsb)");
  opt.bounded = method == "lbfgsb";
  if (has_bounds) {
    if (!opt.bounded) {
      fail({},
           {},
           "optimize.bounds",
           "bounds need method \"lbfgsb\" (L-BFGS-B), not \"lbfgs\"");
    }
    load_bounds(
        require(o, "bounds", &json::is_object, "an object", {}, "optimize"),
        opt);
  }
  const std::string layout =
      o.contains("layout")
          ? require(o, "layout", &json::is_string, "a string", {}, "optimize")
                .get<std::string>()
          : "replicated";
  if (layout != "replicated" && layout != "sharded") {
    fail({}, {}, "optimize.layout", "expected \"replicated\" or \"sharded\"");
  }
  opt.layout = layout == "sharded" ? optim::Layout::kSharded
                                   : optim::Layout::kReplicated;
  if (o.contains("options"))
    opt.options = lbfgs_options(
        require(o, "options", &json::is_object, "an object", {}, "optimize"));
}

void Loader::load_bounds(const json& bounds, Optimize& opt) {
  const std::size_t n = opt.variables.size();
  for (const auto& item : bounds.items()) {
    const std::string& key = item.key();
    const json& entry = item.value();
    const std::string field = "optimize.bounds." + key;
    const auto named = std::find(opt.names.begin(), opt.names.end(), key);
    if (named == opt.names.end())
      fail({}, {}, field, "not a variable of optimize.variables");
    const std::size_t k = named - opt.names.begin();
    if (!entry.is_object() || entry.empty()) {
      fail({},
           {},
           field,
           "expected an object with \"lower\", \"upper\" or both");
    }
    only(entry, {"lower", "upper"}, {}, field);
    const Shape& shape = opt.variables[k].shape();
    // One side: a number for every entry, or a value of the shape.
    auto side =
        [&](const char* name, std::vector<Tensor>& tensors, double open) {
          if (!entry.contains(name)) return;
          if (tensors.empty()) {
            for (std::size_t v = 0; v < n; ++v)
              tensors.emplace_back(opt.variables[v].shape(), open);
          }
          const json& b = entry.at(name);
          tensors[k] = b.is_number()
                           ? Tensor(shape, b.get<double>())
                           : value_of(b, shape, {}, field + "." + name);
          if (!tensors[k].array().isFinite().all())
            fail({}, {}, field + "." + name, "expected finite numbers");
        };
    const double inf = std::numeric_limits<double>::infinity();
    side("lower", opt.bounds.lower, -inf);
    side("upper", opt.bounds.upper, inf);
  }
  if (opt.bounds.lower.empty() || opt.bounds.upper.empty()) return;
  for (std::size_t k = 0; k < n; ++k) {
    const Tensor &lower = opt.bounds.lower[k], &upper = opt.bounds.upper[k];
    for (int64_t i = 0; i < lower.size(); ++i) {
      if (lower[i] <= upper[i]) continue;
      fail({},
           {},
           "optimize.bounds." + opt.names[k],
           "entry " + std::to_string(i) + ": lower bound " +
               json(lower[i]).dump() + " is above the upper bound " +
               json(upper[i]).dump());
    }
  }
}

// Every field of LbfgsOptions' table, by its name, with the table's type,
// range and message; "line_search" and "line_search_bounded" are objects
// read through their own tables (LineSearchOptions', MoreThuenteOptions').
optim::LbfgsOptions Loader::lbfgs_options(const json& options) const {
  using optim::LbfgsOptions;
  const std::string where = "optimize.options";
  LbfgsOptions out;
  read_fields(LbfgsOptions::fields(),
              options,
              out,
              where,
              {"line_search", "line_search_bounded"});
  if (options.contains("line_search")) {
    read_fields(
        optim::LineSearchOptions::fields(),
        require(
            options, "line_search", &json::is_object, "an object", {}, where),
        out.line_search,
        where + ".line_search");
  }
  if (options.contains("line_search_bounded")) {
    read_fields(optim::MoreThuenteOptions::fields(),
                require(options,
                        "line_search_bounded",
                        &json::is_object,
                        "an object",
                        {},
                        where),
                out.line_search_bounded,
                where + ".line_search_bounded");
  }
  std::string error;
  if (!out.is_valid(&error)) fail({}, {}, where, error);
  return out;
}

}  // namespace detail

using detail::kMaxDepth;
using nlohmann::json;

json parse_document(const std::string& text, const std::string& file) {
  std::vector<std::set<std::string>> keys;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxDepth) {
      throw JsonError(
          "nesting deeper than " + std::to_string(kMaxDepth) + " levels",
          {},
          {},
          {},
          file);
    }
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end && !keys.empty())
      keys.pop_back();
    if (event == json::parse_event_t::key && !keys.empty()) {
      const std::string key = parsed.get<std::string>();
      if (!keys.back().insert(key).second) {
        throw JsonError("duplicate key \"" + key + "\"", {}, {}, {}, file);
      }
    }
    return true;
  };
  try {
    return json::parse(text, callback);
  } catch (const json::parse_error& e) {
    const std::size_t byte = std::min<std::size_t>(e.byte, text.size());
    int line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < byte; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string what = e.what();
    const auto colon = what.find("syntax error");
    throw JsonError(
        "malformed JSON at line " + std::to_string(line) + ", column " +
            std::to_string(column) + ": " +
            (colon == std::string::npos ? what : what.substr(colon)),
        {},
        {},
        {},
        file);
  } catch (const json::exception& e) {
    // e.g. out_of_range for 1e999: report it like a syntax error.
    std::string what = e.what();
    const auto bracket = what.find("] ");
    throw JsonError(
        "malformed JSON: " +
            (bracket == std::string::npos ? what : what.substr(bracket + 2)),
        {},
        {},
        {},
        file);
  }
}

Document load_document(const json& doc, const std::string& file, Graph& graph) {
  register_all_ops();  // the document names its ops (builtin_ops.h)
  return detail::Loader(file, graph).load(doc);
}

std::string read_document(const std::string& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw JsonError("is a directory, not a graph document", {}, {}, {}, file);
  std::ifstream in(file);
  if (!in) {
    throw JsonError(std::string("cannot read the file: ") +
                        (std::filesystem::exists(file, ec) ? "permission denied"
                                                           : "no such file"),
                    {},
                    {},
                    {},
                    file);
  }
  std::string text;
  std::vector<char> chunk(1 << 16);
  while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0) {
    text.append(chunk.data(), in.gcount());
    if (text.size() > kMaxDocumentBytes) {
      throw JsonError("the document is larger than " +
                          byte_string(kMaxDocumentBytes) +
                          ", the limit for one graph document (README.md)",
                      {},
                      {},
                      {},
                      file);
    }
  }
  return text;
}

}  // namespace adgraph::driver
