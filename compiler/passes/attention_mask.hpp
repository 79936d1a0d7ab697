// What the mask side of a matched attention block means. The mask side must
// depend on constants and at most one graph input: [B,Sk] (a padding mask) or
// [1|B,1|H,Sq,Sk] (a full mask, converted to the sparse format on the GPU every
// run). Its meaning is found by evaluating it, the scores replaced by 0 and by
// 1: where both results are <= -1e4 the key is masked, where they differ by 1
// the first is an additive bias (masked too when <= -1e4), anything else is no
// mask; a padding input must remove exactly the keys at its zeros (nonzero =
// keep), checked on all-ones, all-zeros and two random 0/1 inputs.
//
// Evaluated tile by tile first (passes/mask_tiles.hpp: the pattern in the sparse
// format, `tiles`, and an additive bias such as T5's, `bias`); a form that
// classifier does not take (a full mask input, ops other than broadcasting
// elementwise ones and a position bias lookup on query-by-key values, a bias
// added other than to the scores directly) is evaluated entry by entry with the
// reference interpreter (`keep`, `bias`), up to kMaxMaskEntries entries.
#pragma once

#include "passes/attention_match.hpp"
#include "passes/passes.hpp"
#include "stof/sparse_mask.hpp"

#include <memory>
#include <optional>
#include <string>

namespace stof::passes {

// The most mask entries ([mb, mh, Sq, Sk]) evaluated entry by entry.
inline constexpr int64_t kMaxMaskEntries = int64_t{1} << 26;

enum class MaskMethod {
    tiles_first,  // tile by tile where the form allows, else entry by entry
    entries,      // entry by entry only (the reference the tile classifier is tested against)
};

struct MaskMeaning {
    std::shared_ptr<const SparseMask> tiles;  // the pattern classified tile by tile (64x64); else keep
    std::optional<Tensor> keep;               // bool [1|B,1|H,Sq,Sk]; absent (and no tiles): keeps every key
    std::shared_ptr<const Tensor> bias;       // f32 [1|B,1|H,Sq,Sk] (shared by the layers reading it); null: none
    ir::ValueId padding = ir::kNoValue;       // [B,Sk] input (nonzero = valid key)
    ir::ValueId full = ir::kNoValue;          // [1|B,1|H,Sq,Sk] input (nonzero = keep)
    std::string why_not;                      // non-empty: the mask cannot be expressed, and why
    bool by_tiles = false;                    // classified tile by tile (else entry by entry)
    bool bias_by_distance = false;            // by_tiles, the bias a function of j - i evaluated once per distance
};

// The scores' sizes: [B, H, Sq, Sk].
struct ScoreDims {
    int64_t b = 0, h = 0, sq = 0, sk = 0;
};

// The mask nodes of `a` as text with the sizes: ops, attributes and inputs, an
// input being the scores, an earlier mask node's result, a constant (type,
// shape, content hash), a graph input (its name) or, recursively, the node
// computing it. Blocks with equal keys have equal mask meanings, also where
// each layer recomputes the same mask from the padding input.
std::string mask_key(const Matcher& m, const AttentionMatch& a, const ScoreDims& dims);

// `opt.fold_limit`: what the mask nodes' shape inference may compute (as the pipeline's).
MaskMeaning analyse_mask(const Matcher& m, const AttentionMatch& a, const ScoreDims& dims, const PassOptions& opt = {},
                         MaskMethod method = MaskMethod::tiles_first);

}  // namespace stof::passes
