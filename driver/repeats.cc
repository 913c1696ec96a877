// The Loader's repeat blocks: their form, their schedule, the outer values
// their bodies read, and the one loop node each becomes.
#include <optional>
#include <set>

#include "core/error.h"
#include "core/loops/loop.h"
#include "core/op.h"
#include "driver/loader_impl.h"

namespace adgraph::driver::detail {

namespace {

// The fields of LoopOptions that are a repeat block's settings. Not "name":
// a block is named by its place ("nodes[4]"), which errors and --check's
// list of loops use; not "output_steps": a block has no per-step outputs.
const std::vector<std::string> kRepeatSettings = {"checkpoints"};

}  // namespace

void Loader::check_repeat(const json& e, const std::string& where) {
  // The block's own keys, and its options through LoopOptions' table.
  repeat_options(e, 1, where);
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
  const json& body = require(e, "body", &json::is_array, "a list", {}, where);
  if (body.empty()) fail({}, {}, where + ".body", "the body is empty");
  // Names the body defines, with the index of the entry defining them.
  std::map<std::string, std::size_t> defined;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const std::string w = where + ".body[" + std::to_string(i) + "]";
    if (body[i].is_object() && body[i].contains("repeat")) {
      check_repeat(body[i], w);
      for (const auto& [var, init] : body[i].at("carry").items()) {
        auto it = defined.find(var);
        if (it != defined.end() && !body[it->second].contains("repeat")) {
          fail({},
               {},
               w + ".carry." + var,
               "carries its result under the name of body node \"" + var +
                   "\", which it would hide; carry it under another name");
        }
        defined[var] = i;
      }
      continue;
    }
    check_entry(body[i], w);
    const std::string name = body[i].at("name").get<std::string>();
    if (auto it = defined.find(name); it != defined.end()) {
      fail(name,
           {},
           "name",
           body[it->second].contains("repeat")
               ? "duplicate node name in a repeat body: the nested block " +
                     where + ".body[" + std::to_string(it->second) +
                     "] carries its result under this name"
               : "duplicate node name in a repeat body");
    }
    defined[name] = i;
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

LoopOptions Loader::repeat_options(const json& e,
                                   int64_t steps,
                                   const std::string& where) const {
  LoopOptions options;
  read_fields(LoopOptions::fields(),
              e,
              options,
              where,
              {"repeat", "carry", "body", "doc"},
              kRepeatSettings);
  options.name = where;
  options.checkpoints = options.checkpoints.resolved(steps);
  return options;
}

void Loader::free_references(const json& e,
                             std::set<std::string>& out,
                             std::set<std::string>& groups) {
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
      for (const auto& [var, init] : entry.at("carry").items()) {
        const std::string ref = init.get<std::string>();
        consider(ref);
        // A nested carry starting from an outer node carries all of its
        // outputs, as it would at top level.
        if (out.count(ref) && ref.find(':') == std::string::npos)
          groups.insert(ref);
      }
      std::set<std::string> nested, nested_groups;
      free_references(entry, nested, nested_groups);
      for (const std::string& ref : nested) consider(ref);
      for (const std::string& ref : nested_groups)
        if (out.count(ref)) groups.insert(ref);
      continue;
    }
    for (const char* list : {"inputs", "after"}) {
      if (!entry.contains(list)) continue;
      for (const json& ref : entry.at(list)) consider(ref.get<std::string>());
    }
  }
}

std::vector<Value> Loader::group_of(const std::map<std::string, Value>& scope,
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

void Loader::bind_group(std::map<std::string, Value>& scope,
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

void Loader::repeat_carries(const json& e,
                            const std::map<std::string, Value>& scope,
                            const std::string& where,
                            Repeat& r) {
  for (const auto& [var, ref] : e.at("carry").items()) {
    auto values =
        group_of(scope, ref.get<std::string>(), where + ".carry." + var);
    // Carried: the outputs the initial value and the body's node both
    // have (u0 → heat_step carries u only, as the unrolled passes did).
    for (const json& entry : e.at("body")) {
      if (entry.contains("repeat") || entry.at("name") != var) continue;
      const OpDef* def = g_.registry().find(entry.at("op").get<std::string>());
      if (def && def->num_outputs > 0 &&
          static_cast<int>(values.size()) > def->num_outputs)
        values.resize(def->num_outputs);
    }
    r.vars.push_back(var);
    r.group_size.push_back(static_cast<int>(values.size()));
    for (std::size_t k = 0; k < values.size(); ++k) {
      r.init.push_back(values[k]);
      std::string label = where + ".carry." + var;
      if (values.size() > 1) label.append(1, ':').append(std::to_string(k));
      r.labels.push_back(std::move(label));
    }
  }
}

void Loader::repeat_invariants(const json& e,
                               const std::map<std::string, Value>& scope,
                               const std::string& where,
                               Repeat& r) {
  std::set<std::string> refs, groups;
  free_references(e, refs, groups);
  r.invariant_refs.assign(refs.begin(), refs.end());
  for (const std::string& ref : r.invariant_refs) {
    r.invariant_groups.push_back(
        groups.count(ref) ? group_of(scope, ref, where + ".body")
                          : std::vector<Value>{resolve(
                                scope, json(ref), {}, {}, where + ".body")});
    for (const Value& v : r.invariant_groups.back()) r.invariants.push_back(v);
  }
}

LoopStep Loader::repeat_step(const json& e,
                             const Repeat& r,
                             const LoopArgs& a,
                             const std::string& where) {
  std::map<std::string, Value> local;
  std::size_t next = 0;
  for (std::size_t v = 0; v < r.vars.size(); ++v) {
    bind_group(local,
               r.vars[v],
               std::vector<Value>(a.carries.begin() + next,
                                  a.carries.begin() + next + r.group_size[v]));
    next += r.group_size[v];
  }
  next = 0;
  for (std::size_t i = 0; i < r.invariant_refs.size(); ++i) {
    const std::size_t n = r.invariant_groups[i].size();
    bind_group(local,
               r.invariant_refs[i],
               std::vector<Value>(a.invariants.begin() + next,
                                  a.invariants.begin() + next + n));
    next += n;
  }
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
  for (std::size_t v = 0; v < r.vars.size(); ++v) {
    std::vector<Value> out =
        group_of(local, r.vars[v], where + ".carry." + r.vars[v]);
    if (static_cast<int>(out.size()) < r.group_size[v]) {
      fail(r.vars[v],
           out[0].node().op_name(),
           where + ".carry." + r.vars[v],
           "the body's node has " + std::to_string(out.size()) +
               " output(s), the carried value " +
               std::to_string(r.group_size[v]));
    }
    step.carries.insert(
        step.carries.end(), out.begin(), out.begin() + r.group_size[v]);
  }
  return step;
}

void Loader::fail_in_repeat(const Error& ex,
                            const Repeat& r,
                            const std::string& where) {
  std::string field = ex.field();
  // loop() names a carry by position ("carry 2 (…)"): name it as written.
  if (field.rfind("carry ", 0) == 0) {
    const std::size_t k = std::stoul(field.substr(6));
    if (k < r.labels.size()) field = r.labels[k];
  } else if (!field.empty() && ex.node() == where) {
    field = where + "." + field;
  }
  fail(ex.node(), ex.op(), field, ex.detail());
}

void Loader::build_repeat(const json& e,
                          std::map<std::string, Value>& scope,
                          const std::string& where) {
  const int64_t times = e.at("repeat").get<int64_t>();
  Repeat r;
  repeat_carries(e, scope, where, r);
  repeat_invariants(e, scope, where, r);
  const LoopOptions options = repeat_options(e, times, where);
  Graph* outer = target_;
  auto body = [&](const LoopArgs& a) {
    target_ = a.graph;
    LoopStep step = repeat_step(e, r, a, where);
    target_ = outer;
    return step;
  };
  LoopResult result;
  try {
    result = loop(times, r.init, r.invariants, body, options);
  } catch (const JsonError&) {
    target_ = outer;
    throw;
  } catch (const Error& ex) {
    target_ = outer;
    fail_in_repeat(ex, r, where);
  }
  std::size_t next = 0;
  for (std::size_t v = 0; v < r.vars.size(); ++v) {
    bind_group(
        scope,
        r.vars[v],
        std::vector<Value>(result.carries.begin() + next,
                           result.carries.begin() + next + r.group_size[v]));
    next += r.group_size[v];
  }
}

}  // namespace adgraph::driver::detail
