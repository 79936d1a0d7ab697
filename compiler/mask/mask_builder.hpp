// Builds the sparse format (stof/sparse_mask.hpp) of a mask spec.
//
// Structured atoms (everything but file:) are classified per outer tile from
// their definitions: interval bounds for causal/sliding/global/band, kept-entry
// counts per tile row for random. Unions and intersections combine the classes;
// where the combination is not decided (two partial children), the tile's row
// bits are computed exactly and the tile is re-classified from them. Only
// partial tiles get per-element work, so a structured spec costs
// O(tiles + partial tiles × tile_m × tile_n), never O(seq_q × seq_k).
// file: atoms read every element of their tiles.
//
// The result is identical to from_dense() of eval_keep() over every element.
#pragma once

#include "mask/mask_spec.hpp"
#include "stof/sparse_mask.hpp"

#include <cstdint>

namespace stof {

// seq_q, seq_k in [0, 2^31 - 1]; tile_m, tile_n multiples of 8 in 8..256.
// heads, batch: the attention's sizes that file: masks are checked against
// (0 = accept any). The result has mask_batch × mask_heads patterns: 1 × 1
// without files, else the broadcast of the files' [B, H]. file: atoms not yet
// loaded (load_mask_files) are read here.
SparseMask build_mask(const MaskSpec& spec, int64_t seq_q, int64_t seq_k, int tile_m = 64, int tile_n = 64, int64_t heads = 0,
                      int64_t batch = 0);

}  // namespace stof
