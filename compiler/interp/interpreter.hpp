// The reference interpreter: evaluates an IR graph on the CPU in fp32
// (int64 for index math) with each op's reference function from the op table.
// Used by `stofc eval`, by the tests that check every pass for equivalence,
// and as the oracle for GPU plans.
#pragma once

#include "ir/graph.hpp"

#include <map>
#include <string>

namespace stof {

using TensorMap = std::map<std::string, Tensor>;

// Runs g (shapes inferred) on `feeds`, one tensor per graph input whose dtype
// and shape match the bound input. Returns every graph output by name.
TensorMap interpret(const ir::Graph& g, const TensorMap& feeds);

}  // namespace stof
