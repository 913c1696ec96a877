// Registration of every built-in op family.
#pragma once

namespace adgraph {

class OpRegistry;

// Adds every built-in op to `registry`. Called once for
// OpRegistry::global(); call it on a fresh registry to get the same set.
void register_builtin_ops(OpRegistry& registry);

}  // namespace adgraph
