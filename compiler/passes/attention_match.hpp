// The spellings of scaled dot-product attention fuse-attention recognises,
// matched from the Softmax (last axis) outward:
//   scores  MatMul(q', kᵀ') with q' = q·c1 and kᵀ' = kᵀ·c2 optional scalar
//           constant factors, then an optional ·c3 or /c3 on the scores
//           (scale = c1·c2·c3, or /c3);
//   mask    up to four Add(x, M) / Where(C, x, F) / Where(C, F, x) between
//           the scores x and the Softmax (M, C, F: the mask side, which no
//           MatMul feeds);
//   output  Softmax → optional Where(IsNaN(p), 0, p) → MatMul(p, v).
// q [B,H,Sq,D], kᵀ [B,Hk,D,Sk], v [B,Hk,Sk,D] of one dtype, H a multiple of Hk;
// every intermediate value has no other consumer.
#pragma once

#include "passes/match.hpp"

#include <optional>
#include <string>
#include <vector>

namespace stof::passes {

struct AttentionMatch {
    const ir::Node* softmax = nullptr;
    const ir::Node* out_mm = nullptr;         // MatMul(p, v)
    std::vector<const ir::Node*> removed;     // every matched node: the fused node replaces them
    std::vector<const ir::Node*> mask_nodes;  // Add / Where nodes from the scores' consumer to the Softmax's input
    ir::ValueId q = ir::kNoValue, kt = ir::kNoValue, v = ir::kNoValue, out = ir::kNoValue;
    ir::ValueId scores = ir::kNoValue;  // the (scaled) scores the mask nodes combine with
    double scale = 1;
};

// The attention block whose Softmax is `softmax`, or nullopt; then, when the
// Softmax looks like attention (MatMul scores, a MatMul reading the result),
// `why` (if given) says what does not match.
std::optional<AttentionMatch> match_attention(const Matcher& m, const ir::Node& softmax, std::string* why = nullptr);

}  // namespace stof::passes
