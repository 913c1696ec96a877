// The JSON loader's internals (driver/loader.h documents the format): one
// Loader per document, its members in seven files by concern:
//   loader.cc       reading the document, its top level, "feeds", "fetch",
//                   "optimize" (the options through LbfgsOptions' field
//                   table, the line searches' through theirs),
//                   "communicators"
//   json_fields.cc  typed field access and the error messages
//   graph_nodes.cc  node entries: their form, their order, one node each
//   stencils.cc     a node's "stencil" field (a patch grid's operator)
//   grids.cc        a node's "grid" field (a placeholder's patch)
//   repeats.cc      repeat blocks: form, options (through LoopOptions'
//                   field table), outer values, the loop
//   derivatives.cc  "gradients" and "tangents"
// Not installed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/checkpoint_schedule.h"
#include "core/error.h"
#include "core/fields.h"
#include "core/graph.h"
#include "core/loops/loop.h"
#include "driver/loader.h"
#include "grid/grid.h"

namespace adgraph::driver::detail {

using nlohmann::json;

constexpr int kMaxDepth = 64;
constexpr int64_t kMaxRepeat = 1000000;
constexpr int kVersion = 1;

// "an integer", "a list", … for error messages.
std::string type_of(const json& v);

class Loader final {
 public:
  Loader(const std::string& file, Graph& graph)
      : file_(file), g_(graph), target_(&graph) {}

  [[noreturn]] void fail(const std::string& node,
                         const std::string& op,
                         const std::string& field,
                         const std::string& detail) const;
  // Rejects fields of `object` that are not in `allowed`.
  void only(const json& object,
            std::initializer_list<const char*> allowed,
            const std::string& node,
            const std::string& where) const;
  // Reads the keys of `object` into `o` through `table` (the field's type,
  // range and message), failing at "<where>.<key>". The keys in `own` are
  // left to the caller; `settings` (when given) are the table's fields
  // this place takes. Any other key fails with the names allowed.
  template <class O>
  void read_fields(const FieldTable<O>& table,
                   const json& object,
                   O& o,
                   const std::string& where,
                   const std::vector<std::string>& own = {},
                   std::vector<std::string> settings = {}) const {
    if (settings.empty()) settings = names_of(table);
    const auto has = [](const std::vector<std::string>& v,
                        const std::string& k) {
      return std::find(v.begin(), v.end(), k) != v.end();
    };
    for (const auto& [key, v] : object.items()) {
      if (has(own, key)) continue;
      const std::string at = where.empty() ? key : where + "." + key;
      const Field<O>* f = has(settings, key) ? find_field(table, key) : nullptr;
      if (f == nullptr) {
        std::vector<std::string> names = own;
        names.insert(names.end(), settings.begin(), settings.end());
        fail({}, {}, at, "unknown field (allowed: " + field_names(names) + ")");
      }
      if (std::optional<std::string> why = set_from_json(*f, v, o))
        fail({}, {}, at, *why);
    }
  }
  const json& require(const json& object,
                      const char* key,
                      bool (json::*is)() const noexcept,
                      const char* expected,
                      const std::string& node,
                      const std::string& where) const;
  // "name" or "name:k" in `scope`.
  Value resolve(const std::map<std::string, Value>& scope,
                const json& ref,
                const std::string& node,
                const std::string& op,
                const std::string& field) const;
  Shape shape_of(const json& v,
                 const std::string& node,
                 const std::string& field) const;
  // A feed or start value for a tensor of `shape`.
  Tensor value_of(const json& v,
                  const Shape& shape,
                  const std::string& node,
                  const std::string& field) const;
  // Creates one node entry in `scope`, under the graph name `graph_name`.
  void create(const json& entry,
              std::map<std::string, Value>& scope,
              const std::string& graph_name,
              const std::map<std::string, Value>& after_scope);
  // A node entry's "stencil" ({"nx", "ny", "px", "py"}): the 5-point
  // operator of that patch grid (solvers/patch_operators.h). On a sparse
  // op it gives the node its matrix (one per stencil and communicator,
  // shared by the document's nodes); on five_point_values(_adjoint) it
  // gives the grid attributes and this rank.
  // The "grid" field of a placeholder: its shape is [batch…, this rank's
  // patch of the grid]; its feed is the global array (driver/grids.cc).
  void apply_grid(const json& grid,
                  const std::string& name,
                  const std::string& op,
                  json& attrs,
                  const NodeOptions& options);
  // A feed for `target`: this rank's patch of the global array when
  // target is a grid placeholder, else value_of(v, target's shape).
  Tensor grid_feed(const json& v,
                   const Value& target,
                   const std::string& node,
                   const std::string& field) const;
  void apply_stencil(const json& stencil,
                     const std::string& name,
                     const std::string& op,
                     json& attrs,
                     NodeOptions& options);
  // A node name, gradient or tangent key: non-empty, neither ':' nor '@'.
  void check_name(const std::string& name, const std::string& field) const;
  // Checks the form of a plain node entry.
  void check_entry(const json& entry, const std::string& where);
  static std::string base_of(const std::string& ref);
  void load_nodes(const json& nodes, Document& d);
  // load_nodes' phases and what they share.
  struct NodeOrder {
    std::map<std::string, std::size_t> declared;  // name -> entry
    std::map<std::size_t, std::string> repeat_where;
    std::vector<std::vector<std::size_t>> deps;  // entries each waits for
  };
  void declare_entries(const json& nodes, NodeOrder& order);
  void resolve_references(const json& nodes, NodeOrder& order);
  void build_in_order(const json& nodes, NodeOrder& order, Document& d);
  // Checks the form of a repeat block (and of the blocks nested in it).
  void check_repeat(const json& e, const std::string& where);
  // A repeat block's LoopOptions, read through LoopOptions' field table
  // (the fields that are a block's settings, kRepeatSettings); "auto"
  // resolved with the block's step count, the name its place `where`.
  LoopOptions repeat_options(const json& e,
                             int64_t steps,
                             const std::string& where) const;
  // References a repeat block reads from outside it (inputs and "after"),
  // in a stable order; `groups`: those a nested block's carry starts from.
  void free_references(const json& e,
                       std::set<std::string>& out,
                       std::set<std::string>& groups);
  // The values a reference to a carry stands for: every output of a plain
  // node (or of a carried group), one value for "name:k".
  std::vector<Value> group_of(const std::map<std::string, Value>& scope,
                              const std::string& ref,
                              const std::string& field);
  static void bind_group(std::map<std::string, Value>& scope,
                         const std::string& var,
                         const std::vector<Value>& values);
  // A repeat block becomes one loop node (core/loops/loop.h): carries from
  // "carry", the outer values the body reads as invariants.
  void build_repeat(const json& e,
                    std::map<std::string, Value>& scope,
                    const std::string& where);
  // A repeat block's loop, by its parts: each carry (its values, several
  // for a carried group; labels name them as written) and each outer
  // reference the body reads (one value, or a nested carry's group).
  struct Repeat {
    std::vector<std::string> vars, labels;
    std::vector<int> group_size;
    std::vector<Value> init;
    std::vector<std::string> invariant_refs;
    std::vector<std::vector<Value>> invariant_groups;
    std::vector<Value> invariants;
  };
  void repeat_carries(const json& e,
                      const std::map<std::string, Value>& scope,
                      const std::string& where,
                      Repeat& r);
  void repeat_invariants(const json& e,
                         const std::map<std::string, Value>& scope,
                         const std::string& where,
                         Repeat& r);
  // One step of the loop: the body's entries on the step's carries and
  // invariants, in the body graph.
  LoopStep repeat_step(const json& e,
                       const Repeat& r,
                       const LoopArgs& a,
                       const std::string& where);
  // Names an error of loop() as the document does (a carry by its name).
  [[noreturn]] void fail_in_repeat(const Error& ex,
                                   const Repeat& r,
                                   const std::string& where);
  // The document, section by section.
  Document load(const json& doc);
  // Sub-communicators by name, made collectively now (every rank loads the
  // same document).
  void load_communicators(const json& communicators);
  // The "gradients" and "tangents" sections (either may be null), each
  // entry after the entries it reads.
  void load_derivatives(const json* gradients,
                        const json* tangents,
                        Document& d);
  void load_gradient(const std::string& key, const json& spec, Document& d);
  void load_tangent(const std::string& key, const json& spec, Document& d);
  void load_feeds(const json& feeds, Document& d);
  void load_fetch(const json& fetch, Document& d);
  void load_optimize(const json& optimize, Document& d);
  // The "bounds" of an "optimize" section, for its variables.
  void load_bounds(const json& bounds, Optimize& opt);
  optim::LbfgsOptions lbfgs_options(const json& options) const;
  // Rethrows a library error as JsonError with the file, and `node`, `op`
  // where the error names none.
  [[noreturn]] void pass_on(const Error& e,
                            const std::string& node,
                            const std::string& op,
                            const std::string& field) const;

 private:
  const std::string& file_;
  Graph& g_;
  // The graph nodes are created in: g_, or a repeat block's body.
  Graph* target_;
  std::map<std::string, std::shared_ptr<CommContext>> communicators_;
  std::map<std::string, std::shared_ptr<NodeResource>> stencils_;
  struct GridPlaceholder {
    grid::GridLayout layout;
    Shape batch;
    int rank = 0;
  };
  // Grid placeholders by (graph, node id), and the one being added.
  std::map<std::pair<const Graph*, int>, GridPlaceholder> grid_placeholders_;
  std::optional<GridPlaceholder> pending_grid_;
};

}  // namespace adgraph::driver::detail
