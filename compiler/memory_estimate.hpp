// The up-front memory estimate: what running a model at its bound shapes needs,
// computed from the IR before anything of that size is allocated.
#pragma once

#include "ir/graph.hpp"

#include <cstdint>

namespace stof {

struct MemoryEstimate {
    uint64_t weights = 0;  // constants: initializers and folded values
    uint64_t values = 0;   // the most bytes of computed values alive at once, in node order with
                           // each released after its last reader (how the interpreter runs, and
                           // what a plan's arena must at least hold)
};

// Shapes and types must be known (after infer-shapes).
MemoryEstimate estimate_memory(const ir::Graph& g);

// A stof::Error with the figures when weights + values (the weights alone
// unless `values`) exceed memory_limit() (stof/memory_limit.hpp); run_pipeline
// calls it once shapes are known.
void check_memory_estimate(const ir::Graph& g, bool values = true);

}  // namespace stof
