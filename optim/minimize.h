// L-BFGS on a graph: the objective is a node, the variables are placeholders.
#pragma once

#include <vector>

#include "core/exec/session.h"
#include "core/graph.h"
#include "optim/lbfgs.h"
#include "optim/lbfgsb.h"

namespace adgraph::optim {

// Minimises the one-element node `objective` over the placeholders
// `variables`, starting from `values` (one tensor per variable, overwritten
// with the minimiser). `feeds` holds every other placeholder the objective
// needs. Builds gradients(objective, variables) once and runs one Session
// per evaluation. With communication nodes the graph's communicator is used
// and every rank must call this in lockstep; `layout` says whether the
// variables are replicated or sharded (optim/lbfgs.h).
//
// Throws as check_problem(); with layout kReplicated on several ranks,
// OptionsError (field "layout", the same on every rank) when the start
// values differ between ranks (checked once, collectively); otherwise as
// lbfgs().
LbfgsSummary minimize(Value objective,
                      const std::vector<Value>& variables,
                      std::vector<Tensor>& values,
                      const FeedMap& feeds = {},
                      const LbfgsOptions& options = {},
                      Layout layout = Layout::kReplicated);

// Bounds of minimize()'s variables, per side: one tensor of each variable's
// shape (−infinity / +infinity entries leave an entry open), or no tensors
// at all (an empty vector) for a side open everywhere.
struct VariableBounds {
  std::vector<Tensor> lower, upper;
};

// minimize() within the bounds, with L-BFGS-B (optim/lbfgsb.h): a start
// outside them is projected onto them. Throws as check_problem() (with
// field "bounds" for a bound tensor of the wrong number or shape),
// otherwise as lbfgsb() (OptionsError for lower > upper or NaN bounds).
LbfgsSummary minimize(Value objective,
                      const std::vector<Value>& variables,
                      std::vector<Tensor>& values,
                      const VariableBounds& bounds,
                      const FeedMap& feeds = {},
                      const LbfgsOptions& options = {},
                      Layout layout = Layout::kReplicated);

// The checks minimize() makes first: throws GraphError (ShapeError for a
// start value) naming the node when the objective does not have one
// element, there are no variables, a variable is not a placeholder or a
// start value has the wrong
// shape. Field: "objective" or "variables".
void check_problem(Value objective,
                   const std::vector<Value>& variables,
                   const std::vector<Tensor>& values);

}  // namespace adgraph::optim
