// Arena layout: offsets for every arena tensor of a plan.
#pragma once

#include "stof/plan.hpp"

#include <vector>

namespace stof::codegen {

// Inputs and outputs get their own ranges (alive for the whole run); every
// other arena tensor is placed by liveness over the step list, largest first,
// at the lowest offset free for its lifetime. alias_of[t] >= 0 makes t share
// that tensor's storage (its lifetime extends the base's). Sets
// Plan::arena_bytes and each arena tensor's offset.
void plan_memory(plan::Plan& p, const std::vector<int32_t>& alias_of);

}  // namespace stof::codegen
