// Loading adgraph's JSON graph documents (format version 1).
//
// A document is one object:
//   "adgraph": 1                       format version (required)
//   "nodes": [ {node}, … ]             required; see below
//   "gradients": {"g": {"of": "L", "wrt": "theta" | ["a", "b"]}}
//   "tangents": {"dL": {"of": "L", "wrt": "x" | ["a", "b"],
//                       "along": "t" | ["ta", "tb"]}}
//                                      forward mode: jvp() of "of" with
//                                      respect to "wrt" in the direction of
//                                      the "along" values (after gradients,
//                                      so "of" may be a gradient: an HVP)
//   "feeds": {"theta": value}          number, flat list in the node's shape,
//                                      nested lists, or {"fill": v, "shape":
//                                      [..]}
//   "fetch": ["L", "g"]                values printed after the run
//   "optimize": {"objective": "L", "variables": {"theta": start value},
//                "method": "lbfgs" | "lbfgsb",
//                "bounds": {"theta": {"lower": value, "upper": value}},
//                "layout": "replicated" | "sharded",
//                "options": {any field of optim::LbfgsOptions::fields():
//                            "history", "max_iterations", "tolerance_gradient",
//                            …, by name, with its type and range;
//                            "line_search": {LineSearchOptions' fields:
//                            "c1", "c2", …} (L-BFGS's search),
//                            "line_search_bounded": {MoreThuenteOptions'
//                            fields: "ftol", "gtol", "xtol",
//                            "max_evaluations"} (L-BFGS-B's)}}
//                                      "bounds" (L-BFGS-B, the method when
//                                      bounds are given): per variable, a
//                                      number for every entry or a value of
//                                      its shape per side; a side or a
//                                      variable left out is open
//   "communicators": {"rows": {"rows_of": [R, C]},      sub-communicators,
//                     "cols": {"columns_of": [R, C]},   made by every rank
//                     "half": {"color": [c0, c1, …],    (one color, and
//                              "key": [k0, k1, …]}}     key, per rank)
// A node is {"name", "op", "inputs": [refs], "attrs": {..}, "shape": [..]
// (placeholders), "after": [names] (control inputs), "comm": name (a
// communication node on a declared communicator; its peers and roots are
// ranks of that communicator), "stencil": {"nx", "ny", "px", "py"} (the
// 5-point operator of that patch grid, solvers/patch_operators.h: a
// sparse_* node's matrix, one per stencil and communicator and shared by
// the document's nodes; five_point_values' grid and this rank), "grid":
// {"grid_shape", "procs", "periodic", "batch"} (a placeholder holding this
// rank's patch of that grid, grid/grid.h, on the node's communicator:
// shape [batch…, local shape], uneven patches allowed; its feed is the
// global array [batch…, grid_shape…], of which each rank takes its
// patch)}. A
// reference is a node
// name, or "name:k" for output k; gradients and tangents are referenced by
// their key, and
// "g:k" is the k-th of a list of "wrt". Inputs must name earlier nodes;
// "after" may name any node, as long as no cycle forms.
//
// A "repeat" entry among the nodes is one loop node (core/loops/loop.h) that
// runs its body K times; the graph does not grow with K:
//   {"repeat": K, "carry": {"u": "u0"}, "body": [nodes…],
//    "checkpoints": "all" | "auto" | s | "every:k" | "budget:bytes"}
// Inside the body, "u" names the carried value (first "u0", then the body's
// node "u" of the previous pass); a carried node with several outputs is
// carried whole ("e:0" … "e:3"), as far as the body's node of that name has
// outputs. Other body nodes are visible to the body under their plain
// names; nodes outside the block are read as loop invariants. Bodies may
// hold communication nodes and nested repeat blocks. After the block, "u"
// names the last pass's value. A block's options are read through
// LoopOptions' field table (core/loops/loop.h), of which "checkpoints" is
// a block's setting (the block is named by its place, and has no per-step
// outputs). "checkpoints" is the schedule of the loop's
// adjoint, in core/checkpoint_schedule.h's grammar: every state ("all", the
// default), about sqrt(2K) snapshots ("auto"), s snapshots (binomial, also
// the string "s"), a snapshot every k steps, or as many snapshots as fit
// in a memory budget ("budget:64MiB"); every schedule gives the same
// numbers. Errors
// inside a body name the node as written ("u"), errors of the block name it
// by position ("nodes[4].carry.u").
//
// Names: node names, carries, gradient and tangent keys are non-empty and
// hold neither ':' nor '@'; a name is defined once (a carry may continue
// an earlier block's carry of the same name, but never hide a node, and no
// node may take a carry's name). Gradients and tangents are built in the
// order of what they read (a gradient of a tangent, or the reverse), a
// cycle between them is an error. A value may be fed, or listed as an
// optimize variable, under one name only ("x" and "x:0" are one value).
// A communicator has exactly one of "color", "rows_of", "columns_of".
// Optimizer options are read by LbfgsOptions' field table (core/fields.h):
// counts are integers within their range (history [1, 1000]), never
// truncated or wrapped, and a value out of range is refused with the
// table's message ("must be in [1, 1000], got 0").
// adgraph-run reads at most 64 MiB of document and writes infinities and
// NaN as the strings "Infinity", "-Infinity", "NaN".
//
// Every error throws JsonError with the file, the node (when there is one)
// and the field, e.g. `g.json: node "l" (pow): input "b": shape [3] does
// not broadcast with [2]`.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/exec/session.h"
#include "core/graph.h"
#include "optim/lbfgs.h"
#include "optim/minimize.h"

namespace adgraph::driver {

// The "optimize" section, ready for optim::minimize.
struct Optimize {
  Value objective;
  std::vector<std::string> names;  // the variables as written
  std::vector<Value> variables;
  std::vector<Tensor> start;
  // Method "lbfgsb" (L-BFGS-B, within `bounds`), else "lbfgs".
  bool bounded = false;
  optim::VariableBounds bounds;
  optim::Layout layout = optim::Layout::kReplicated;
  optim::LbfgsOptions options;
};

struct Document {
  // Named values: nodes (and their outputs "name:k") and gradients.
  std::map<std::string, Value> values;
  FeedMap feeds;
  std::vector<std::string> fetch;   // as written
  std::vector<Value> fetch_values;  // what each names ("y:1" included)
  bool has_optimize = false;
  Optimize optimize;
};

// The largest document read (feeds beyond it belong in a program, not in
// JSON): reading stops there, so /dev/zero or a runaway file cannot fill
// memory. adgraph-run and adgraph.load_json share it.
constexpr std::size_t kMaxDocumentBytes = std::size_t{64} << 20;

// The bytes of the document `file`, at most kMaxDocumentBytes. Throws
// JsonError naming the file for a directory, a file that cannot be read,
// or one larger than the bound.
std::string read_document(const std::string& file);

// Parses `text` (the contents of `file`), rejecting duplicate keys and
// nesting deeper than 64 levels. Malformed JSON reports line and column.
nlohmann::json parse_document(const std::string& text, const std::string& file);

// Builds the document's graph into `graph`. Throws JsonError.
Document load_document(const nlohmann::json& doc,
                       const std::string& file,
                       Graph& graph);

}  // namespace adgraph::driver
