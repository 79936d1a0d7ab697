// What the mask side of a matched attention block means. The mask side must
// depend on constants and at most one graph input: [B,Sk] (a padding mask) or
// [1|B,1|H,Sq,Sk] (a full mask, converted to the sparse format on the GPU every
// run). Its meaning is found by evaluating it with the reference interpreter,
// the input all ones, the scores replaced by 0 and by 1: where both results are
// <= -1e4 the key is masked, where they differ by 1 the first is an additive
// bias (masked too when <= -1e4), anything else is no mask. Then two random 0/1
// inputs must give exactly that pattern and bias with the entries at their
// zeros masked (nonzero = keep).
#pragma once

#include "passes/attention_match.hpp"

#include <optional>
#include <string>

namespace stof::passes {

struct MaskMeaning {
    std::optional<Tensor> keep;          // bool [1|B,1|H,Sq,Sk]; absent: keeps every key
    std::optional<Tensor> bias;          // f32 [1|B,1|H,Sq,Sk]; absent: none
    ir::ValueId padding = ir::kNoValue;  // [B,Sk] input (nonzero = valid key)
    ir::ValueId full = ir::kNoValue;     // [1|B,1|H,Sq,Sk] input (nonzero = keep)
    std::string why_not;                 // non-empty: the mask cannot be expressed, and why
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

MaskMeaning analyse_mask(const Matcher& m, const AttentionMatch& a, const ScoreDims& dims);

}  // namespace stof::passes
