// The additive position bias of an attention mask `probe + x` whose pattern is
// classified tile by tile (passes/mask_tiles.hpp): the term x found in the mask's
// expression, and its value at every kept entry, as the attention kernels read it
// (f32 [1|B, 1|H, Sq, Sk], 0 at entries not kept).
//
// A bias proven a function of j - i alone in every [batch, head] slice (its
// leaves equal along every diagonal, constant, or exact integer progressions over
// i or j; Add, Sub, Neg and Cast keeping a + p*i + q*j exact; comparisons of two
// such forms whose difference is a function of j - i; any elementwise op or
// lookup of functions of j - i) is evaluated once per distance (Sq + Sk - 1
// values, each at its first entry, with the same ops) and read at entry (i, j)
// as value[j - i + Sq - 1]. Any other is evaluated tile by tile, the ops that do
// not vary over heads once per tile. Both give the reference ops' value at each
// entry, bit for bit.
#pragma once

#include "ir/graph.hpp"
#include "mask/mask_expression.hpp"
#include "stof/tensor.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace stof {

// The term x of a mask `root` = Add(probe, x) (either order) in f32, f64 or f16 (the
// dtypes whose rounding of x + 1 stays within the mask's tolerance for a kept entry),
// x free of the leaf `probe`: x as an argument of `e` (>= 0 a SymNode, < 0 a leaf);
// nothing for any other mask.
std::optional<int> find_additive_bias(const MaskExpression& e, int root, ir::ValueId probe);

// The entries whose bias is read, in [batch, heads] slices of [seq_q, seq_k] cut into
// square tiles of `side` (a multiple of 8): tile (ti, tj) of slice q = x * heads + y is
// state[(q * rows + ti) * cols + tj] = -2 (no entry), -1 (every entry) or b: entry (r, c)
// of the tile where bit (r % 8) * 8 + c % 8 of words[q][b * (side / 8)^2 + (r / 8) * (side / 8)
// + c / 8] is set (SparseMask's bitmap layout). rows = ceil(seq_q / side), cols = ceil(seq_k / side).
struct KeptTiles {
    int64_t batch = 0, heads = 0, seq_q = 0, seq_k = 0, side = 0;
    std::vector<int32_t> state;          // [batch * heads, rows, cols]
    std::vector<const uint64_t*> words;  // [batch * heads]
};

// A mask's bias as the attention kernels read it.
struct PositionBias {
    std::shared_ptr<const Tensor> values;  // f32 [1|batch, 1|heads, seq_q, seq_k]; null: every kept entry adds 0
    bool by_distance = false;              // evaluated once per distance j - i
    std::string unknown;                   // non-empty: why not (a kept entry's value is not exactly known); nothing else set
};

// The bias `bias` (from find_additive_bias) of `e`, its leaves read in world `world`, at
// every kept entry of `kept`, 0 elsewhere; batch and heads collapsed to 1 where every
// slice is equal. Runs on every core.
PositionBias materialise_position_bias(const MaskExpression& e, int bias, int world, const KeptTiles& kept);

}  // namespace stof
