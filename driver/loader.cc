#include "driver/loader.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <set>

#include "core/error.h"
#include "core/gradients.h"
#include "core/jvp.h"
#include "core/loop.h"
#include "core/op.h"
#include "core/tensor_json.h"

namespace adgraph::driver {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 64;
constexpr int64_t kMaxElements = int64_t{1} << 30;
constexpr int64_t kMaxRepeat = 1000000;
constexpr int kVersion = 1;

std::string type_of(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  if (v.is_object()) return "an object";
  if (v.is_boolean()) return "a boolean";
  return "null";
}

class Loader {
 public:
  Loader(const std::string& file, Graph& graph)
      : file_(file), g_(graph), target_(&graph) {}

  [[noreturn]] void fail(const std::string& node,
                         const std::string& op,
                         const std::string& field,
                         const std::string& detail) const {
    throw JsonError(detail, node, op, field, file_);
  }

  // Rejects fields of `object` that are not in `allowed`.
  void only(const json& object,
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

  const json& require(const json& object,
                      const char* key,
                      bool (json::*is)() const noexcept,
                      const char* expected,
                      const std::string& node,
                      const std::string& where) const {
    const std::string field = where.empty() ? key : where + "." + key;
    if (!object.contains(key))
      fail(node, {}, field, "required field is missing");
    const json& v = object.at(key);
    if (!(v.*is)())
      fail(node,
           {},
           field,
           std::string("expected ") + expected + ", found " + type_of(v));
    return v;
  }

  // "name" or "name:k" in `scope`.
  Value resolve(const std::map<std::string, Value>& scope,
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
        if (k < v.node().num_outputs())
          return Value(&v.graph(), v.node_id(), k);
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

  Shape shape_of(const json& v,
                 const std::string& node,
                 const std::string& field) const {
    if (!v.is_array())
      fail(node, {}, field, "expected a list of extents, found " + type_of(v));
    Shape s;
    double total = 1;
    for (const json& e : v) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0) {
        fail(node,
             {},
             field,
             "extents must be non-negative integers, found " + e.dump());
      }
      s.push_back(e.get<int64_t>());
      total *= static_cast<double>(s.back());
    }
    if (total > static_cast<double>(kMaxElements)) {
      fail(node,
           {},
           field,
           "shape " + shape_string(s) + " has more than 2^30 elements");
    }
    return s;
  }

  // A feed or start value for a tensor of `shape`.
  Tensor value_of(const json& v,
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
        const Shape given = shape_of(
            require(v, "shape", &json::is_array, "a list", node, field),
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

  // Creates one node entry in `scope`, under the graph name `graph_name`.
  void create(const json& entry,
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
    if (op == "placeholder" && !attrs.contains("shape")) {
      fail(name, op, "shape", "a placeholder needs a shape");
    }
    NodeOptions options;
    options.name = graph_name;
    if (entry.contains("after")) {
      const json& list = entry.at("after");
      for (std::size_t i = 0; i < list.size(); ++i) {
        options.after.push_back(resolve(after_scope,
                                        list[i],
                                        name,
                                        op,
                                        "after[" + std::to_string(i) + "]"));
      }
    }
    try {
      std::vector<Value> out = target_->add_node_outputs(
          op, std::move(inputs), attrs, std::move(options));
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

  // Checks the form of a plain node entry.
  void check_entry(const json& entry, const std::string& where) {
    if (!entry.is_object())
      fail({}, {}, where, "expected an object, found " + type_of(entry));
    const std::string name =
        require(entry, "name", &json::is_string, "a string", {}, where)
            .get<std::string>();
    if (name.empty() || name.find_first_of(":@") != std::string::npos) {
      fail(name,
           {},
           "name",
           "a node name must be non-empty and contain neither ':' nor '@'");
    }
    only(entry,
         {"name", "op", "inputs", "attrs", "shape", "after", "doc"},
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

  static std::string base_of(const std::string& ref) {
    const auto colon = ref.rfind(':');
    return colon == std::string::npos ? ref : ref.substr(0, colon);
  }

  void load_nodes(const json& nodes, Document& d) {
    // Entries in document order; repeat blocks are barriers.
    std::map<std::string, std::size_t> declared;
    std::map<std::size_t, std::string> repeat_where;
    std::vector<std::vector<std::size_t>> deps(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const std::string where = "nodes[" + std::to_string(i) + "]";
      const json& e = nodes[i];
      if (e.is_object() && e.contains("repeat")) {
        check_repeat(e, where);
        repeat_where[i] = where;
        for (std::size_t j = 0; j < i; ++j) deps[i].push_back(j);
        for (const auto& [var, init] : e.at("carry").items()) declared[var] = i;
        continue;
      }
      check_entry(e, where);
      const std::string name = e.at("name").get<std::string>();
      if (declared.count(name) && !(nodes[declared[name]].contains("repeat"))) {
        fail(
            name, e.at("op").get<std::string>(), "name", "duplicate node name");
      }
      declared[name] = i;
    }
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
    // Kahn's algorithm, earliest entry first, so documents without forward
    // "after" references are built in document order.
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
        create(nodes[i],
               d.values,
               nodes[i].at("name").get<std::string>(),
               d.values);
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

  // Checks the form of a repeat block (and of the blocks nested in it).
  void check_repeat(const json& e, const std::string& where) {
    only(e, {"repeat", "carry", "body", "checkpoints", "doc"}, {}, where);
    const json& k =
        require(e, "repeat", &json::is_number_integer, "an integer", {}, where);
    if (k.get<int64_t>() < 1 || k.get<int64_t>() > kMaxRepeat) {
      fail({}, {}, where + ".repeat", "must be in [1, 1000000]");
    }
    const json& carry =
        require(e, "carry", &json::is_object, "an object", {}, where);
    for (const auto& [var, init] : carry.items()) {
      if (!init.is_string())
        fail({}, {}, where + ".carry." + var, "expected a node name");
    }
    if (e.contains("checkpoints")) schedule_of(e.at("checkpoints"), where);
    const json& body = require(e, "body", &json::is_array, "a list", {}, where);
    if (body.empty()) fail({}, {}, where + ".body", "the body is empty");
    // Names the body defines, with the index of the entry defining them.
    std::map<std::string, std::size_t> defined;
    for (std::size_t i = 0; i < body.size(); ++i) {
      const std::string w = where + ".body[" + std::to_string(i) + "]";
      if (body[i].is_object() && body[i].contains("repeat")) {
        check_repeat(body[i], w);
        for (const auto& [var, init] : body[i].at("carry").items())
          defined.emplace(var, i);
        continue;
      }
      check_entry(body[i], w);
      const std::string name = body[i].at("name").get<std::string>();
      if (!defined.emplace(name, i).second)
        fail(name, {}, "name", "duplicate node name in a repeat body");
    }
    for (const auto& [var, init] : carry.items()) {
      if (!defined.count(var)) {
        fail({},
             {},
             where + ".carry." + var,
             "the body has no node \"" + var + "\" to carry");
      }
    }
    // A body entry reads carries, earlier body nodes and outer nodes; a body
    // node defined later is never what it means.
    for (std::size_t i = 0; i < body.size(); ++i) {
      if (body[i].contains("repeat")) continue;
      const std::string name = body[i].at("name").get<std::string>();
      if (!body[i].contains("inputs")) continue;
      const json& inputs = body[i].at("inputs");
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        const std::string base = base_of(inputs[k].get<std::string>());
        auto it = defined.find(base);
        if (it == defined.end() || it->second < i || carry.contains(base))
          continue;
        fail(name,
             body[i].at("op").get<std::string>(),
             "inputs[" + std::to_string(k) + "]",
             "\"" + base +
                 "\" is defined later in the repeat body (or is this node); "
                 "carry it to read the previous step's value");
      }
    }
  }

  // "all", a number of snapshots s >= 1, or {"every": k >= 1}.
  CheckpointSchedule schedule_of(const json& v, const std::string& where) {
    const std::string field = where + ".checkpoints";
    if (v.is_string() && v.get<std::string>() == "all")
      return CheckpointSchedule::store_all();
    if (v.is_number_integer()) {
      if (v.get<int64_t>() < 1)
        fail({},
             {},
             field,
             "a number of snapshots must be >= 1, got " + v.dump());
      return CheckpointSchedule::binomial(v.get<int64_t>());
    }
    if (v.is_object() && v.contains("every")) {
      only(v, {"every"}, {}, field);
      const json& k = v.at("every");
      if (!k.is_number_integer() || k.get<int64_t>() < 1)
        fail({},
             {},
             field + ".every",
             "expected an integer >= 1, got " + k.dump());
      return CheckpointSchedule::every(k.get<int64_t>());
    }
    fail({},
         {},
         field,
         "expected \"all\", a number of snapshots or {\"every\": k}, found " +
             v.dump());
  }

  // References a repeat block reads from outside it, in a stable order.
  void free_references(const json& e, std::set<std::string>& out) {
    std::set<std::string> inside;
    for (const auto& [var, init] : e.at("carry").items()) inside.insert(var);
    for (const json& entry : e.at("body")) {
      if (entry.contains("repeat")) {
        for (const auto& [var, init] : entry.at("carry").items())
          inside.insert(var);
      } else {
        inside.insert(entry.at("name").get<std::string>());
      }
    }
    auto consider = [&](const std::string& ref) {
      if (!inside.count(base_of(ref)) && !inside.count(ref)) out.insert(ref);
    };
    for (const json& entry : e.at("body")) {
      if (entry.contains("repeat")) {
        for (const auto& [var, init] : entry.at("carry").items())
          consider(init.get<std::string>());
        std::set<std::string> nested;
        free_references(entry, nested);
        for (const std::string& ref : nested) consider(ref);
        continue;
      }
      if (entry.contains("inputs")) {
        for (const json& ref : entry.at("inputs"))
          consider(ref.get<std::string>());
      }
    }
  }

  // The values a reference to a carry stands for: every output of a plain
  // node (or of a carried group), one value for "name:k".
  std::vector<Value> group_of(const std::map<std::string, Value>& scope,
                              const std::string& ref,
                              const std::string& field) {
    std::vector<Value> out;
    if (ref.find(':') == std::string::npos && scope.count(ref + ":0")) {
      while (scope.count(ref + ":" + std::to_string(out.size())))
        out.push_back(scope.at(ref + ":" + std::to_string(out.size())));
      return out;
    }
    const Value v = resolve(scope, json(ref), {}, {}, field);
    if (ref.find(':') != std::string::npos) return {v};
    for (int k = 0; k < v.node().num_outputs(); ++k)
      out.emplace_back(&v.graph(), v.node_id(), k);
    return out;
  }

  static void bind_group(std::map<std::string, Value>& scope,
                         const std::string& var,
                         const std::vector<Value>& values) {
    for (int k = 0; scope.count(var + ":" + std::to_string(k)); ++k)
      scope.erase(var + ":" + std::to_string(k));
    scope[var] = values[0];
    if (values.size() > 1) {
      for (std::size_t k = 0; k < values.size(); ++k)
        scope[var + ":" + std::to_string(k)] = values[k];
    }
  }

  // A repeat block becomes one loop node (core/loop.h): carries from
  // "carry", the outer values the body reads as invariants.
  void build_repeat(const json& e,
                    std::map<std::string, Value>& scope,
                    const std::string& where) {
    const int64_t times = e.at("repeat").get<int64_t>();
    std::vector<std::string> vars, labels;
    std::vector<int> group_size;
    std::vector<Value> init;
    for (const auto& [var, ref] : e.at("carry").items()) {
      auto values =
          group_of(scope, ref.get<std::string>(), where + ".carry." + var);
      // Carried: the outputs the initial value and the body's node both
      // have (u0 → heat_step carries u only, as the unrolled passes did).
      for (const json& entry : e.at("body")) {
        if (entry.contains("repeat") || entry.at("name") != var) continue;
        const OpDef* def =
            g_.registry().find(entry.at("op").get<std::string>());
        if (def && def->num_outputs > 0 &&
            static_cast<int>(values.size()) > def->num_outputs)
          values.resize(def->num_outputs);
      }
      vars.push_back(var);
      group_size.push_back(static_cast<int>(values.size()));
      for (std::size_t k = 0; k < values.size(); ++k) {
        init.push_back(values[k]);
        std::string label = where + ".carry." + var;
        if (values.size() > 1) label.append(1, ':').append(std::to_string(k));
        labels.push_back(std::move(label));
      }
    }
    std::set<std::string> refs;
    free_references(e, refs);
    std::vector<std::string> invariant_refs(refs.begin(), refs.end());
    std::vector<Value> invariants;
    for (const std::string& ref : invariant_refs)
      invariants.push_back(resolve(scope, json(ref), {}, {}, where + ".body"));

    LoopOptions options;
    options.name = where;
    if (e.contains("checkpoints"))
      options.checkpoints = schedule_of(e.at("checkpoints"), where);
    Graph* outer = target_;
    auto body = [&](const LoopArgs& a) {
      target_ = a.graph;
      std::map<std::string, Value> local;
      std::size_t next = 0;
      for (std::size_t v = 0; v < vars.size(); ++v) {
        std::vector<Value> values(a.carries.begin() + next,
                                  a.carries.begin() + next + group_size[v]);
        bind_group(local, vars[v], values);
        next += group_size[v];
      }
      for (std::size_t i = 0; i < invariant_refs.size(); ++i)
        local[invariant_refs[i]] = a.invariants[i];
      const json& entries = e.at("body");
      for (std::size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].contains("repeat")) {
          build_repeat(
              entries[i], local, where + ".body[" + std::to_string(i) + "]");
        } else {
          const std::string name = entries[i].at("name").get<std::string>();
          create(entries[i], local, name, local);
        }
      }
      LoopStep step;
      for (std::size_t v = 0; v < vars.size(); ++v) {
        std::vector<Value> out =
            group_of(local, vars[v], where + ".carry." + vars[v]);
        if (static_cast<int>(out.size()) < group_size[v]) {
          fail(vars[v],
               out[0].node().op_name(),
               where + ".carry." + vars[v],
               "the body's node has " + std::to_string(out.size()) +
                   " output(s), the carried value " +
                   std::to_string(group_size[v]));
        }
        step.carries.insert(
            step.carries.end(), out.begin(), out.begin() + group_size[v]);
      }
      target_ = outer;
      return step;
    };
    LoopResult r;
    try {
      r = loop(times, init, invariants, body, options);
    } catch (const JsonError&) {
      target_ = outer;
      throw;
    } catch (const Error& ex) {
      target_ = outer;
      std::string field = ex.field();
      // loop() names a carry by position ("carry 2 (…)"): name it as written.
      if (field.rfind("carry ", 0) == 0) {
        const std::size_t k = std::stoul(field.substr(6));
        if (k < labels.size()) field = labels[k];
      } else if (!field.empty() && ex.node() == where) {
        field = where + "." + field;
      }
      fail(ex.node(), ex.op(), field, ex.detail());
    }
    std::size_t next = 0;
    for (std::size_t v = 0; v < vars.size(); ++v) {
      bind_group(scope,
                 vars[v],
                 std::vector<Value>(r.carries.begin() + next,
                                    r.carries.begin() + next + group_size[v]));
      next += group_size[v];
    }
  }

  Document load(const json& doc) {
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
    const json& nodes =
        require(doc, "nodes", &json::is_array, "a list", {}, "");
    load_nodes(nodes, d);

    if (doc.contains("gradients")) {
      const json& grads =
          require(doc, "gradients", &json::is_object, "an object", {}, "");
      for (const auto& [key, spec] : grads.items()) {
        const std::string field = "gradients." + key;
        if (d.values.count(key))
          fail(key, {}, field, "a node of this name exists already");
        if (!spec.is_object())
          fail(key, {}, field, "expected {\"of\": …, \"wrt\": …}");
        only(spec, {"of", "wrt"}, key, field);
        const json& of =
            require(spec, "of", &json::is_string, "a node name", key, field);
        if (!spec.contains("wrt"))
          fail(key, {}, field + ".wrt", "required field is missing");
        const Value y = resolve(d.values, of, key, {}, field + ".of");
        const json& wrt = spec.at("wrt");
        std::vector<Value> xs;
        if (wrt.is_array()) {
          for (std::size_t i = 0; i < wrt.size(); ++i) {
            xs.push_back(resolve(d.values,
                                 wrt[i],
                                 key,
                                 {},
                                 field + ".wrt[" + std::to_string(i) + "]"));
          }
        } else {
          xs.push_back(resolve(d.values, wrt, key, {}, field + ".wrt"));
        }
        std::vector<Value> result;
        try {
          result = gradients(y, xs);
        } catch (const Error& e) {
          throw JsonError(e.detail(),
                          e.node(),
                          e.op(),
                          e.field().empty() ? field : e.field(),
                          file_);
        }
        if (wrt.is_array()) {
          for (std::size_t i = 0; i < result.size(); ++i)
            d.values[key + ":" + std::to_string(i)] = result[i];
        } else {
          d.values[key] = result[0];
        }
      }
    }

    if (doc.contains("tangents")) {
      const json& tangents =
          require(doc, "tangents", &json::is_object, "an object", {}, "");
      for (const auto& [key, spec] : tangents.items()) {
        const std::string field = "tangents." + key;
        if (d.values.count(key))
          fail(key, {}, field, "a node of this name exists already");
        if (!spec.is_object())
          fail(
              key, {}, field, "expected {\"of\": …, \"wrt\": …, \"along\": …}");
        only(spec, {"of", "wrt", "along"}, key, field);
        const json& of =
            require(spec, "of", &json::is_string, "a node name", key, field);
        for (const char* part : {"wrt", "along"}) {
          if (!spec.contains(part))
            fail(key, {}, field + "." + part, "required field is missing");
        }
        const Value y = resolve(d.values, of, key, {}, field + ".of");
        const json& wrt = spec.at("wrt");
        const json& along = spec.at("along");
        if (wrt.is_array() != along.is_array() ||
            (wrt.is_array() && wrt.size() != along.size())) {
          fail(key,
               {},
               field + ".along",
               "expected one tangent per \"wrt\" entry, in the same form");
        }
        std::vector<Value> xs, ts;
        const std::string& name = key;  // lambdas cannot capture bindings
        auto add = [&](const json& x, const json& t, const std::string& at) {
          xs.push_back(resolve(d.values, x, name, {}, field + ".wrt" + at));
          ts.push_back(resolve(d.values, t, name, {}, field + ".along" + at));
          if (ts.back().shape() != xs.back().shape()) {
            fail(name,
                 {},
                 field + ".along" + at,
                 "shape " + shape_string(ts.back().shape()) +
                     " differs from the shape " +
                     shape_string(xs.back().shape()) + " of \"" +
                     xs.back().name() + "\"");
          }
        };
        if (wrt.is_array()) {
          for (std::size_t i = 0; i < wrt.size(); ++i)
            add(wrt[i], along[i], "[" + std::to_string(i) + "]");
        } else {
          add(wrt, along, "");
        }
        try {
          d.values[key] = jvp(std::vector<Value>{y}, xs, ts)[0];
        } catch (const Error& e) {
          throw JsonError(e.detail(),
                          e.node(),
                          e.op(),
                          e.field().empty() ? field : field + ": " + e.field(),
                          file_);
        }
      }
    }

    if (doc.contains("feeds")) {
      const json& feeds =
          require(doc, "feeds", &json::is_object, "an object", {}, "");
      for (const auto& [key, v] : feeds.items()) {
        const Value target =
            resolve(d.values, json(key), key, {}, "feeds." + key);
        if (target.node().op_name() != "placeholder") {
          fail(key,
               target.node().op_name(),
               "feeds." + key,
               "only placeholders can be fed");
        }
        d.feeds[target] = value_of(v, target.shape(), key, "feeds." + key);
      }
    }

    if (doc.contains("fetch")) {
      const json& fetch =
          require(doc, "fetch", &json::is_array, "a list", {}, "");
      for (std::size_t i = 0; i < fetch.size(); ++i) {
        const std::string field = "fetch[" + std::to_string(i) + "]";
        resolve(d.values, fetch[i], {}, {}, field);
        d.fetch.push_back(fetch[i].get<std::string>());
      }
    }

    if (doc.contains("optimize")) {
      const json& o =
          require(doc, "optimize", &json::is_object, "an object", {}, "");
      only(o,
           {"objective", "variables", "method", "layout", "options"},
           {},
           "optimize");
      d.has_optimize = true;
      Optimize& opt = d.optimize;
      const json& objective = require(
          o, "objective", &json::is_string, "a node name", {}, "optimize");
      const Value y =
          resolve(d.values, objective, {}, {}, "optimize.objective");
      if (num_elements(y.shape()) != 1) {
        fail(y.name(),
             y.node().op_name(),
             "optimize.objective",
             "the objective must be a scalar, it has shape " +
                 shape_string(y.shape()));
      }
      opt.objective = objective.get<std::string>();
      const json& vars = require(
          o, "variables", &json::is_object, "an object", {}, "optimize");
      if (vars.empty())
        fail({}, {}, "optimize.variables", "no variables to optimise");
      for (const auto& [key, start] : vars.items()) {
        const std::string field = "optimize.variables." + key;
        const Value x = resolve(d.values, json(key), key, {}, field);
        if (x.node().op_name() != "placeholder") {
          fail(key,
               x.node().op_name(),
               field,
               "a variable must be a placeholder");
        }
        opt.variables.push_back(key);
        opt.start.push_back(value_of(start, x.shape(), key, field));
      }
      const std::string method = o.value("method", "lbfgs");
      if (method != "lbfgs")
        fail({},
             {},
             "optimize.method",
             "unknown method \"" + method + "\" (known: lbfgs)");
      opt.layout = o.value("layout", "replicated");
      if (opt.layout != "replicated" && opt.layout != "sharded") {
        fail({},
             {},
             "optimize.layout",
             "expected \"replicated\" or \"sharded\"");
      }
      if (o.contains("options")) {
        const json& options = require(
            o, "options", &json::is_object, "an object", {}, "optimize");
        only(options,
             {"history",
              "max_iterations",
              "max_evaluations",
              "tolerance_gradient",
              "tolerance_function"},
             {},
             "optimize.options");
        for (const auto& [key, v] : options.items()) {
          if (!v.is_number() || !std::isfinite(v.get<double>())) {
            fail({}, {}, "optimize.options." + key, "expected a finite number");
          }
        }
        opt.options = options;
      }
    }
    return d;
  }

 private:
  const std::string& file_;
  Graph& g_;
  // The graph nodes are created in: g_, or a repeat block's body.
  Graph* target_;
};

}  // namespace

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
  return Loader(file, graph).load(doc);
}

}  // namespace adgraph::driver
