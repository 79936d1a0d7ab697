// Attention operands read in place: q, k and v are traced back through layout
// ops (Reshape, Transpose, Unsqueeze, Squeeze, Flatten, Expand; Split, Slice and
// scalar Gather, which pick heads) to the farthest value they are heads of a
// [B,S,Ht,D] or [B,Ht,S,D] view of (the projection before the head split, one
// fused QKV projection, the KV heads before a grouped-query repeat). The
// attention reads that value with attributes layout, heads, kv_heads and
// head_offsets (ops/attention_layout.hpp) instead of a copy.
#pragma once

#include "ir/strided_view.hpp"
#include "passes/match.hpp"

#include <array>
#include <optional>

namespace stof::passes {

// Heads [head_offset, head_offset + heads) of `source` viewed with `layout`
// ('h' [B,Ht,S,D], 's' [B,S,Ht,D]) as tensor_heads heads.
struct OperandSource {
    ir::ValueId source = ir::kNoValue;
    char layout = 'h';
    int64_t heads = 0, tensor_heads = 0, head_offset = 0;
};

// Whether view v of `source` is the operand with dims (b, h, s, d) = v's dims
// `order` and sizes B, H, S, D, as heads of a contiguous [B,S,Ht,D] or
// [B,Ht,S,D] (source head h / (H / Hk) for operand head h). need_heads: the Hk
// wanted, or 0 for any. The result's source is unset.
std::optional<OperandSource> match_heads_view(const ir::StridedView& v, const std::array<int, 4>& order,
                                              const ir::Value& source, int64_t B, int64_t H, int64_t S, int64_t D,
                                              int64_t need_heads);

// The farthest value along the layout ops behind `x` that x is an in-place view
// of (see match_heads_view; `order` maps x's dims to b, h, s, d), or nullopt.
std::optional<OperandSource> trace_operand(const Matcher& m, ir::ValueId x, const std::array<int, 4>& order, int64_t B,
                                           int64_t H, int64_t S, int64_t D, int64_t need_heads);

}  // namespace stof::passes
