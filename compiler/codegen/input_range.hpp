// The range of valid values of an integer graph input, recorded in the plan so
// that stof-run's random inputs are meaningful.
#pragma once
#include "ir/graph.hpp"

#include <utility>

namespace stof::codegen {

// [lo, hi] for integer input v: [0, n - 1] when it reaches the indices of a
// Gather over an axis of size n through value-preserving ops (Reshape, Cast to
// an integer, Unsqueeze, ...; the tightest n wins), else [0, 1] (flags and
// padding masks).
std::pair<int64_t, int64_t> integer_input_range(const ir::Graph& g, ir::ValueId v);

}  // namespace stof::codegen
