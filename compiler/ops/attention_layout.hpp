// The memory layout of SparseAttention's q, k, v and output (attribute
// `layout`, four characters for q, k, v, o; absent = "hhhh"):
//   'h'  heads-major  [batch, heads, seq, head_dim]
//   's'  seq-major    [batch, seq, heads, head_dim]  (the projection's own
//                     layout: read and written in place, no transpose)
// k and v have kv_heads heads, q and o heads. An input tensor may hold more
// heads than the attention uses (one fused QKV projection [B,S,3·H,D] read as
// q, k and v): attributes heads and kv_heads (default: the heads of q's and
// k's tensors) and head_offsets [q, k, v] (default 0 0 0), the first head of
// each tensor used. The output holds exactly `heads` heads.
#pragma once

#include "ir/graph.hpp"
#include "stof/error.hpp"

#include <string>

namespace stof::ir {

struct AttentionLayout {
    char q = 'h', k = 'h', v = 'h', o = 'h';
};

inline AttentionLayout attention_layout(const Node& n) {
    const std::string s = n.attrs.s("layout", "hhhh");
    STOF_CHECK(s.size() == 4 && s.find_first_not_of("hs") == std::string::npos,
               "{}: layout '{}' must be four of h (heads-major) / s (seq-major) for q, k, v, o", n.label(), s);
    return {s[0], s[1], s[2], s[3]};
}

inline std::string to_string(const AttentionLayout& l) { return {l.q, l.k, l.v, l.o}; }

// Sizes of one operand in (batch, heads, seq, head_dim) order.
struct AttentionDims {
    int64_t b = 0, h = 0, s = 0, d = 0;
};

inline AttentionDims attention_dims(const Shape& x, char layout) {
    if (x.size() != 4) return {};
    return layout == 's' ? AttentionDims{x[0], x[2], x[1], x[3]} : AttentionDims{x[0], x[1], x[2], x[3]};
}

struct AttentionHeads {
    int64_t heads = 0, kv_heads = 0;
    int64_t offset[3] = {0, 0, 0};  // q, k, v
};

inline AttentionHeads attention_heads(const Node& n, const Shape& q, const Shape& k, const AttentionLayout& l) {
    AttentionHeads r;
    r.heads = n.attrs.i("heads", attention_dims(q, l.q).h);
    r.kv_heads = n.attrs.i("kv_heads", attention_dims(k, l.k).h);
    const std::vector<int64_t> off = n.attrs.ints("head_offsets", {0, 0, 0});
    STOF_CHECK(off.size() == 3, "{}: head_offsets needs 3 values (q, k, v), not {}", n.label(), off.size());
    for (size_t i = 0; i < 3; ++i) r.offset[i] = off[i];
    return r;
}

inline Shape attention_shape(const AttentionDims& t, char layout) {
    return layout == 's' ? Shape{t.b, t.s, t.h, t.d} : Shape{t.b, t.h, t.s, t.d};
}

// Element strides (batch, head, seq) of a contiguous operand; head_dim's is 1.
struct AttentionStrides {
    int64_t b = 0, h = 0, s = 0;
};

inline AttentionStrides attention_strides(const AttentionDims& t, char layout) {
    if (layout == 's') return {t.s * t.h * t.d, t.d, t.h * t.d};
    return {t.h * t.s * t.d, t.s * t.d, t.d};
}

}  // namespace stof::ir
