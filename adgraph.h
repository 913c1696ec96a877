// Umbrella header: everything a user of adgraph needs.
#pragma once

#include "core/error.h"
#include "core/gradient_checker.h"
#include "core/gradients.h"
#include "core/graph.h"
#include "core/op.h"
#include "core/session.h"
#include "core/tensor.h"
#include "core/tensor_json.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"
#include "ops/sources.h"
