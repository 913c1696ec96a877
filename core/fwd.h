// Forward declarations of adgraph's core types.
#pragma once

namespace adgraph {

class Tensor;
class Graph;
struct Node;
class Value;
struct OpDef;
class OpRegistry;
class Session;
class CommContext;
class KernelContext;
class ShapeContext;
class GradientContext;
struct LoopSpec;

}  // namespace adgraph
