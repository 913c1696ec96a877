// The library's entry point for ops: every family of every layer at once.
//
// Each layer registers its own ops, once, when its node builders are first
// called (register_ops_layer(), register_mpi_ops_layer(), …), so a program
// that builds its graph through the C++ API needs nothing more. A program
// that looks ops up by name only (the JSON driver, the Python module,
// OpRegistry::global().all() listing every op) calls register_all_ops()
// first. The core calls nothing above it: this file sits above every layer.
#pragma once

namespace adgraph {

// Registers the ops of every layer: each layer's package initialiser, in
// layer order. Thread-safe; after the first call it returns at once.
void register_all_ops();

}  // namespace adgraph
