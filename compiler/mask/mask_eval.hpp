// The direct element evaluator: the documented meaning of a mask spec at one
// (batch b, head h, query row i, key column j). The reference the tile builder
// and the tests are checked against; also how file: masks are read.
#pragma once

#include "mask/mask_spec.hpp"

#include <cstdint>

namespace stof {

// keep(i, j) for 0 <= i < seq_q, 0 <= j < seq_k. file: atoms must be loaded
// (load_mask_files); their batch/head index is b/h, or 0 where the file has 1.
bool eval_keep(const MaskSpec& spec, int64_t i, int64_t j, int64_t seq_k, int64_t b = 0, int64_t h = 0);

}  // namespace stof
