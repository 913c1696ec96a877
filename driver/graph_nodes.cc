// The Loader's node entries: their form and their order (repeat blocks:
// repeats.cc).
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

void Loader::create(const json& entry,
                    std::map<std::string, Value>& scope,
                    const std::string& graph_name,
                    const std::map<std::string, Value>& after_scope) {
  const std::string name = entry.at("name").get<std::string>();
  const std::string op = entry.at("op").get<std::string>();
  std::vector<Value> inputs;
  if (entry.contains("inputs")) {
    const json& list = entry.at("inputs");
    for (std::size_t i = 0; i < list.size(); ++i) {
      inputs.push_back(resolve(
          scope, list[i], name, op, "inputs[" + std::to_string(i) + "]"));
    }
  }
  json attrs = entry.value("attrs", json::object());
  if (entry.contains("shape")) {
    if (op != "placeholder")
      fail(name, op, "shape", "only placeholders take a shape");
    attrs["shape"] = shape_of(entry.at("shape"), name, "shape");
  }
  if (op == "placeholder" && !attrs.contains("shape") &&
      !entry.contains("grid")) {
    fail(name, op, "shape", "a placeholder needs a shape (or a grid)");
  }
  NodeOptions options;
  options.name = graph_name;
  if (entry.contains("comm")) {
    const json& comm = entry.at("comm");
    auto found = comm.is_string() ? communicators_.find(comm.get<std::string>())
                                  : communicators_.end();
    if (found == communicators_.end()) {
      fail(name,
           op,
           "comm",
           "unknown communicator " + comm.dump() +
               " (declare it under \"communicators\")");
    }
    options.comm = found->second;
  }
  if (entry.contains("after")) {
    const json& list = entry.at("after");
    for (std::size_t i = 0; i < list.size(); ++i) {
      options.after.push_back(resolve(
          after_scope, list[i], name, op, "after[" + std::to_string(i) + "]"));
    }
  }
  if (entry.contains("stencil")) {
    apply_stencil(entry.at("stencil"), name, op, attrs, options);
  }
  pending_grid_.reset();
  if (entry.contains("grid"))
    apply_grid(entry.at("grid"), name, op, attrs, options);
  try {
    std::vector<Value> out = target_->add_node_outputs(
        op, std::move(inputs), attrs, std::move(options));
    if (pending_grid_)
      grid_placeholders_[{target_, out[0].node_id()}] = *pending_grid_;
    bind_group(scope, name, {out[0]});
  } catch (const JsonError&) {
    throw;
  } catch (const Error& e) {
    // The graph names the node as built ("u@3" inside a repeat body).
    fail(e.node().empty() ? name : e.node(),
         e.op().empty() ? op : e.op(),
         e.field(),
         e.detail());
  }
}

void Loader::check_name(const std::string& name,
                        const std::string& field) const {
  if (name.empty() || name.find_first_of(":@") != std::string::npos) {
    fail(name,
         {},
         field,
         "a node name must be non-empty and contain neither ':' nor '@'");
  }
}

void Loader::check_entry(const json& entry, const std::string& where) {
  if (!entry.is_object())
    fail({}, {}, where, "expected an object, found " + type_of(entry));
  const std::string name =
      require(entry, "name", &json::is_string, "a string", {}, where)
          .get<std::string>();
  check_name(name, "name");
  only(entry,
       {"name",
        "op",
        "inputs",
        "attrs",
        "shape",
        "after",
        "comm",
        "doc",
        "stencil",
        "grid"},
       name,
       "");
  require(entry, "op", &json::is_string, "a string", name, "");
  for (const char* list : {"inputs", "after"}) {
    if (!entry.contains(list)) continue;
    if (!entry.at(list).is_array())
      fail(name, {}, list, "expected a list of node names");
    for (const json& r : entry.at(list)) {
      if (!r.is_string())
        fail(name, {}, list, "expected node names, found " + type_of(r));
    }
  }
  if (entry.contains("attrs") && !entry.at("attrs").is_object()) {
    fail(name,
         {},
         "attrs",
         "expected an object, found " + type_of(entry.at("attrs")));
  }
}

std::string Loader::base_of(const std::string& ref) {
  const auto colon = ref.rfind(':');
  return colon == std::string::npos ? ref : ref.substr(0, colon);
}

// The order of the document's entries: each after the entries its inputs
// and "after" name; a repeat block after every earlier entry.
void Loader::load_nodes(const json& nodes, Document& d) {
  NodeOrder order;
  order.deps.resize(nodes.size());
  declare_entries(nodes, order);
  resolve_references(nodes, order);
  build_in_order(nodes, order, d);
}

// Checks each entry and records the name it declares (a repeat block: its
// carries). A block depends on every earlier entry: on the previous block
// and the entries since (which follow that block themselves), so that the
// dependencies grow linearly with the document.
void Loader::declare_entries(const json& nodes, NodeOrder& order) {
  auto& [declared, repeat_where, deps] = order;
  std::size_t since = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string where = "nodes[" + std::to_string(i) + "]";
    const json& e = nodes[i];
    if (e.is_object() && e.contains("repeat")) {
      check_repeat(e, where);
      repeat_where[i] = where;
      for (std::size_t j = since > 0 ? since - 1 : 0; j < i; ++j)
        deps[i].push_back(j);
      since = i + 1;
      std::set<std::string> refs, groups;
      free_references(e, refs, groups);
      for (const std::string& ref : refs) {
        if (declared.count(ref) || declared.count(base_of(ref))) continue;
        fail({},
             {},
             where + ".body",
             "\"" + ref +
                 "\" is not a node defined before the block (a body reads "
                 "its own nodes, its carries and earlier nodes)");
      }
      for (const auto& [var, init] : e.at("carry").items()) {
        // A carry may continue an earlier block's carry, not hide a node.
        auto it = declared.find(var);
        if (it != declared.end() && !nodes[it->second].contains("repeat")) {
          fail({},
               {},
               where + ".carry." + var,
               "carries its result under the name of node \"" + var +
                   "\" (nodes[" + std::to_string(it->second) +
                   "]), which it would hide; carry it under another name");
        }
        declared[var] = i;
      }
      continue;
    }
    check_entry(e, where);
    const std::string name = e.at("name").get<std::string>();
    if (auto it = declared.find(name); it != declared.end()) {
      fail(name,
           e.at("op").get<std::string>(),
           "name",
           nodes[it->second].contains("repeat")
               ? "duplicate node name: the repeat block nodes[" +
                     std::to_string(it->second) +
                     "] carries its result under this name"
               : "duplicate node name");
    }
    declared[name] = i;
  }
}

// Each entry's inputs and "after" references: names declared earlier.
void Loader::resolve_references(const json& nodes, NodeOrder& order) {
  auto& [declared, repeat_where, deps] = order;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const json& e = nodes[i];
    if (e.contains("repeat")) continue;
    const std::string name = e.at("name").get<std::string>(),
                      op = e.at("op").get<std::string>();
    if (e.contains("inputs")) {
      for (std::size_t k = 0; k < e.at("inputs").size(); ++k) {
        const std::string ref = e.at("inputs")[k].get<std::string>();
        auto it = declared.find(base_of(ref));
        if (it == declared.end()) it = declared.find(ref);
        const std::string field = "inputs[" + std::to_string(k) + "]";
        if (it == declared.end())
          fail(name, op, field, "unknown node \"" + ref + "\"");
        if (it->second >= i) {
          fail(name,
               op,
               field,
               "\"" + ref +
                   "\" is defined later in the document; inputs must name "
                   "earlier nodes");
        }
        deps[i].push_back(it->second);
      }
    }
    if (e.contains("after")) {
      for (std::size_t k = 0; k < e.at("after").size(); ++k) {
        const std::string ref = e.at("after")[k].get<std::string>();
        auto it = declared.find(ref);
        const std::string field = "after[" + std::to_string(k) + "]";
        if (it == declared.end())
          fail(name, op, field, "unknown node \"" + ref + "\"");
        if (it->second == i)
          fail(name, op, field, "a node cannot run after itself");
        deps[i].push_back(it->second);
      }
    }
  }
}

// Builds the entries in dependency order (Kahn's algorithm, earliest entry
// first, so documents without forward "after" references are built in
// document order); a cycle of "after" references is an error.
void Loader::build_in_order(const json& nodes, NodeOrder& order, Document& d) {
  auto& [declared, repeat_where, deps] = order;
  std::vector<int> missing(nodes.size(), 0);
  std::vector<std::vector<std::size_t>> users(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::set<std::size_t> unique(deps[i].begin(), deps[i].end());
    missing[i] = static_cast<int>(unique.size());
    for (std::size_t j : unique) users[j].push_back(i);
  }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>>
      ready;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (missing[i] == 0) ready.push(i);
  }
  std::vector<char> done(nodes.size(), 0);
  while (!ready.empty()) {
    const std::size_t i = ready.top();
    ready.pop();
    done[i] = 1;
    if (nodes[i].contains("repeat")) {
      build_repeat(nodes[i], d.values, repeat_where[i]);
    } else {
      create(
          nodes[i], d.values, nodes[i].at("name").get<std::string>(), d.values);
    }
    for (std::size_t u : users[i]) {
      if (--missing[u] == 0) ready.push(u);
    }
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (done[i]) continue;
    const json& e = nodes[i];
    fail(e.value("name", ""),
         e.value("op", ""),
         "after",
         "the \"after\" dependencies form a cycle through this node");
  }
}

}  // namespace adgraph::driver::detail
