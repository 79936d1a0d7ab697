// The mask side of an attention classified tile by tile, without evaluating
// it at every (query, key) entry.
//
// Input: the mask nodes as a graph of their own (attention_mask.cpp), the
// scores replaced by a scalar input `probe`, shapes inferred. Values with a
// query and a key dimension ([.., Sq, Sk] aligned to the scores [B, H, Sq, Sk])
// that broadcasting elementwise ops compute are kept as an expression over the
// smaller values they read (evaluated, like every other value, with the
// reference ops; a ConstantOfShape query-by-key value is its one entry,
// broadcast); nothing of Sq x Sk entries is allocated unless the graph already
// holds it as a constant.
//
// Per outer tile (64 x 64) interval bounds of the expression for probe 0 and 1
// decide "masked" (both <= -1e4) or "kept" (exactly 0 and within 4e-3 of 1);
// any other tile is evaluated entry by entry, with the same rule as the
// element-wise analysis (passes/attention_mask.hpp). Interval bounds are sound,
// so the result equals that analysis wherever both apply: O(tiles) interval
// evaluations plus O(tile area) per undecided tile (the diagonal of a causal
// mask, the edges of a band).
//
// A mask Add(probe, x) with x free of the probe (T5: scores + Where(valid key,
// position bias, lowest)) is decided by x alone: masked where x <= -1e4, kept
// with the additive bias x where it is finite (NaN or +inf: no mask), tile by
// tile from x's bounds. T5's position bias Gather(table [buckets, H], bucket
// [Sq, Sk]) read through Transpose(perm 2,0,1) is an elementwise lookup per head,
// its bounds per tile the table's over the tile's bucket range; the bias is
// then evaluated at every kept entry (the kernels read it densely), once per
// distance where it is proven a function of j - i alone (mask/position_bias.hpp).
//
// A padding input [B, Sk] (`input`) may enter the expression only through
// values of shape [B|1, 1, 1, Sk] whose entry (b, j) is their all-ones value
// where input[b, j] != 0 and their all-zeros value elsewhere (checked on two
// seeded random inputs); then the mask with an all-zeros input must remove
// every entry, and the mask is (its all-ones pattern) & (valid key).
#pragma once

#include "ir/graph.hpp"
#include "stof/sparse_mask.hpp"

#include <memory>
#include <string>

namespace stof::passes {

struct MaskTiles {
    std::shared_ptr<const SparseMask> keep;  // the pattern, 64 x 64 tiles, [1|B, 1|H]; null: keeps every entry
    std::shared_ptr<const Tensor> bias;      // f32 [1|B, 1|H, Sq, Sk]: added at kept entries (0 elsewhere); null: none
    bool padding = false;                    // `input` is a key padding mask
    bool bias_by_distance = false;           // the bias is a function of j - i, evaluated once per distance
    std::string why_not;                     // non-empty: the mask cannot be expressed, and why
    std::string unsupported;                 // non-empty: a form this classifier does not take (why); nothing else is set
};

// `sub`: outputs = {the additive mask (or the masked scores)}, `probe` a scalar
// input, `input` kNoValue or a [B, Sk] input; B, H, Sq, Sk the scores' sizes.
MaskTiles classify_mask_tiles(const ir::Graph& sub, ir::ValueId probe, ir::ValueId input, int64_t B, int64_t H, int64_t Sq,
                              int64_t Sk);

}  // namespace stof::passes
