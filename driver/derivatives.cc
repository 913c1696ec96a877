// The Loader's "gradients" and "tangents" sections: each entry built after
// the entries it reads (reverse mode through forward mode, or the reverse).
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/ad/gradients.h"
#include "core/ad/jvp.h"
#include "core/error.h"
#include "driver/loader_impl.h"

namespace adgraph::driver::detail {

void Loader::load_derivatives(const json* gradients,
                              const json* tangents,
                              Document& d) {
  // Entries of both sections in document order (keys sorted within one);
  // each is built after the entries its "of", "wrt" and "along" name.
  struct Entry {
    std::string key, field;
    const json* spec;
    bool gradient;
  };
  std::vector<Entry> entries;
  std::map<std::string, std::size_t> index;
  for (const json* section : {gradients, tangents}) {
    if (section == nullptr) continue;
    const bool gradient = section == gradients;
    for (const auto& item : section->items()) {
      const std::string& key = item.key();
      const std::string field =
          std::string(gradient ? "gradients." : "tangents.") + key;
      check_name(key, field);
      if (d.values.count(key))
        fail(key, {}, field, "a node of this name exists already");
      if (index.count(key)) {
        fail(key,
             {},
             field,
             "\"" + key +
                 "\" is also a key of \"gradients\"; keys name "
                 "values, so each is used once");
      }
      index[key] = entries.size();
      entries.push_back({key, field, &item.value(), gradient});
    }
  }
  // The other entries an entry reads.
  auto reads = [&](const Entry& e) {
    std::vector<std::size_t> out;
    if (!e.spec->is_object()) return out;
    for (const char* part : {"of", "wrt", "along"}) {
      if (!e.spec->contains(part)) continue;
      const json& refs = e.spec->at(part);
      for (const json& r : refs.is_array() ? refs : json::array({refs})) {
        if (!r.is_string()) continue;
        const std::string ref = r.get<std::string>();
        auto it = index.find(ref);
        if (it == index.end()) it = index.find(base_of(ref));
        if (it != index.end()) out.push_back(it->second);
      }
    }
    return out;
  };
  // Depth first, in entry order; 1: on the path, 2: built.
  std::vector<int> state(entries.size(), 0);
  std::function<void(std::size_t)> build = [&](std::size_t i) {
    if (state[i] == 2) return;
    const Entry& e = entries[i];
    if (state[i] == 1)
      fail(e.key,
           {},
           e.field,
           "gradients and tangents that read each other "
           "form a cycle through this entry");
    state[i] = 1;
    for (std::size_t j : reads(e)) build(j);
    if (e.gradient) {
      load_gradient(e.key, *e.spec, d);
    } else {
      load_tangent(e.key, *e.spec, d);
    }
    state[i] = 2;
  };
  for (std::size_t i = 0; i < entries.size(); ++i) build(i);
}

void Loader::load_gradient(const std::string& key,
                           const json& spec,
                           Document& d) {
  const std::string field = "gradients." + key;
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
    pass_on(e, {}, {}, e.field().empty() ? field : e.field());
  }
  if (wrt.is_array()) {
    for (std::size_t i = 0; i < result.size(); ++i)
      d.values[key + ":" + std::to_string(i)] = result[i];
  } else {
    d.values[key] = result[0];
  }
}

void Loader::load_tangent(const std::string& key,
                          const json& spec,
                          Document& d) {
  const std::string field = "tangents." + key;
  if (!spec.is_object())
    fail(key, {}, field, "expected {\"of\": …, \"wrt\": …, \"along\": …}");
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
  auto add = [&](const json& x, const json& t, const std::string& at) {
    xs.push_back(resolve(d.values, x, key, {}, field + ".wrt" + at));
    ts.push_back(resolve(d.values, t, key, {}, field + ".along" + at));
    if (ts.back().shape() != xs.back().shape()) {
      fail(key,
           {},
           field + ".along" + at,
           "shape " + shape_string(ts.back().shape()) +
               " differs from the shape " + shape_string(xs.back().shape()) +
               " of \"" + xs.back().name() + "\"");
    }
  };
  if (wrt.is_array()) {
    for (std::size_t i = 0; i < wrt.size(); ++i)
      add(wrt[i], along[i], std::string("[").append(std::to_string(i)) + "]");
  } else {
    add(wrt, along, "");
  }
  try {
    d.values[key] = jvp(std::vector<Value>{y}, xs, ts)[0];
  } catch (const Error& e) {
    pass_on(e, {}, {}, e.field().empty() ? field : field + ": " + e.field());
  }
}

}  // namespace adgraph::driver::detail
