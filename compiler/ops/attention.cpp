// SparseAttention: softmax(scale · q·kᵀ + bias, over kept keys) · v.
//
// Inputs (3..6): q [B,H,Sq,D]; k, v [B,Hk,Sk,D] with Hk dividing H (query head
// h reads KV head h / (H / Hk)); keep: bool [Sq,Sk] or [1|B,1|H,Sq,Sk] (absent:
// all kept); bias: float of the same broadcast forms (absent: none); padding:
// [B,Sk] integer or bool, nonzero = key valid (absent: all valid).
// Attributes: scale (float), mask (text describing the pattern, for reports),
// keep_tiles (the keep pattern in the sparse format, [1|B,1|H] patterns of
// Sq x Sk, in place of the keep input: one too large to hold densely),
// layout, heads, kv_heads, head_offsets (ops/attention_layout.hpp: q, k, v and
// the output may each be [B,S,H,D] instead of the [B,H,S,D] shown here, and
// q, k, v tensors may hold more heads than used).
// A query row with no kept key outputs zeros (the kernels' contract).
#include "ops/attention_layout.hpp"
#include "ops/op_functions.hpp"
#include "ops/op_util.hpp"
#include "stof/error.hpp"

#include <cmath>
#include <limits>

namespace stof::ir::ops {

namespace {

using Inputs = std::vector<const Tensor*>;
using Types = std::vector<TensorType>;

// Index of (b, h, i, j) into a [Sq,Sk] or [1|B,1|H,Sq,Sk] tensor.
int64_t pattern_index(const Shape& s, int64_t b, int64_t h, int64_t i, int64_t j) {
    const int64_t sq = s[s.size() - 2], sk = s.back();
    int64_t at = i * sk + j;
    if (s.size() == 4) at += ((s[0] == 1 ? 0 : b) * s[1] + (s[1] == 1 ? 0 : h)) * sq * sk;
    return at;
}

void check_pattern(const Node& n, const std::vector<InferInput>& in, size_t k, const char* what, int64_t b, int64_t h,
                   int64_t sq, int64_t sk) {
    if (k >= in.size() || !in[k].present) return;
    const Shape& s = in[k].shape;
    const bool ok = (s.size() == 2 || s.size() == 4) && s[s.size() - 2] == sq && s.back() == sk &&
                    (s.size() == 2 || ((s[0] == 1 || s[0] == b) && (s[1] == 1 || s[1] == h)));
    STOF_CHECK(ok, "{}: {} of shape {} must be [{},{}] or [1|{},1|{},{},{}]", n.label(), what, shape_str(s), sq, sk, b, h, sq,
               sk);
}

}  // namespace

std::vector<TensorType> infer_SparseAttention(const Node& n, const std::vector<InferInput>& in) {
    const AttentionLayout l = attention_layout(n);
    STOF_CHECK(in[0].shape.size() == 4 && in[1].shape.size() == 4 && in[2].shape.size() == 4, "{}: q, k, v must be rank 4",
               n.label());
    STOF_CHECK(is_float(in[0].dtype) && in[1].dtype == in[0].dtype && in[2].dtype == in[0].dtype,
               "{}: q, k, v must share a float dtype", n.label());
    AttentionDims q = attention_dims(in[0].shape, l.q), k = attention_dims(in[1].shape, l.k),
                  v = attention_dims(in[2].shape, l.v);
    const AttentionHeads hs = attention_heads(n, in[0].shape, in[1].shape, l);
    const int64_t held[3] = {q.h, k.h, v.h}, used[3] = {hs.heads, hs.kv_heads, hs.kv_heads};
    for (int i = 0; i < 3; ++i)
        STOF_CHECK(hs.offset[i] >= 0 && used[i] >= 1 && hs.offset[i] + used[i] <= held[i],
                   "{}: {} uses heads {}..{} of a tensor with {}", n.label(), "qkv"[i], hs.offset[i],
                   hs.offset[i] + used[i] - 1, held[i]);
    q.h = hs.heads;
    k.h = v.h = hs.kv_heads;
    STOF_CHECK(k.b == q.b && v.b == q.b && q.h % k.h == 0 && k.s == v.s && k.d == q.d && v.d == q.d,
               "{}: shapes q {} k {} v {} (layout {}) do not form an attention", n.label(), shape_str(in[0].shape),
               shape_str(in[1].shape), shape_str(in[2].shape), to_string(l));
    check_pattern(n, in, 3, "keep", q.b, q.h, q.s, k.s);
    check_pattern(n, in, 4, "bias", q.b, q.h, q.s, k.s);
    if (in.size() > 3 && in[3].present) STOF_CHECK(in[3].dtype == DType::boolean, "{}: keep must be bool", n.label());
    if (const ir::MaskTilesAttr t = n.attrs.mask_tiles("keep_tiles")) {
        STOF_CHECK(!(in.size() > 3 && in[3].present), "{}: a keep input and keep_tiles", n.label());
        STOF_CHECK(t->rows == q.s && t->cols == k.s && (t->mask_batch == 1 || t->mask_batch == q.b) &&
                       (t->mask_heads == 1 || t->mask_heads == q.h),
                   "{}: keep_tiles of {}x{}x{}x{} do not fit [{},{},{},{}]", n.label(), t->mask_batch, t->mask_heads, t->rows,
                   t->cols, q.b, q.h, q.s, k.s);
    }
    if (in.size() > 5 && in[5].present)
        STOF_CHECK(in[5].shape == Shape({q.b, k.s}) && !is_float(in[5].dtype), "{}: padding must be integer [{},{}]", n.label(),
                   q.b, k.s);
    return {{in[0].dtype, attention_shape(q, l.o)}};
}

std::vector<Tensor> eval_SparseAttention(const Node& n, const Inputs& in, const Types& out) {
    const Tensor &q = *in[0], &k = *in[1], &v = *in[2];
    const Tensor* keep = in.size() > 3 ? in[3] : nullptr;
    const Tensor* bias = in.size() > 4 ? in[4] : nullptr;
    const Tensor* pad = in.size() > 5 ? in[5] : nullptr;
    const AttentionLayout l = attention_layout(n);
    const AttentionHeads hs = attention_heads(n, q.shape, k.shape, l);
    const AttentionDims qd = attention_dims(q.shape, l.q), kd = attention_dims(k.shape, l.k);
    const int64_t B = qd.b, H = hs.heads, Sq = qd.s, D = qd.d, Hk = hs.kv_heads, Sk = kd.s;
    // Strides of the tensors as they are (all their heads), the used heads' offsets.
    const AttentionStrides qs = attention_strides(qd, l.q), ks = attention_strides(kd, l.k),
                           vs = attention_strides(attention_dims(v.shape, l.v), l.v),
                           os = attention_strides(attention_dims(out[0].shape, l.o), l.o);
    const int64_t q0 = hs.offset[0] * qs.h, k0 = hs.offset[1] * ks.h, v0 = hs.offset[2] * vs.h;
    const double scale = n.attrs.f("scale", 1.0);
    const ir::MaskTilesAttr tiles = n.attrs.mask_tiles("keep_tiles");
    Tensor r(out[0].dtype, out[0].shape);
    std::vector<double> s(static_cast<size_t>(Sk));
    std::vector<char> kept(static_cast<size_t>(Sk));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            const int64_t hk = h / (H / Hk);
            for (int64_t i = 0; i < Sq; ++i) {
                double mx = -std::numeric_limits<double>::infinity();
                for (int64_t j = 0; j < Sk; ++j) {
                    bool on = (!keep || keep->get_i64(pattern_index(keep->shape, b, h, i, j)) != 0) &&
                              (!tiles || tiles->keep(tiles->pattern_of(static_cast<int32_t>(b), static_cast<int32_t>(h)),
                                                     static_cast<int32_t>(i), static_cast<int32_t>(j))) &&
                              (!pad || pad->get_i64(b * Sk + j) != 0);
                    kept[static_cast<size_t>(j)] = on;
                    if (!on) continue;
                    double dot = 0;
                    for (int64_t d = 0; d < D; ++d)
                        dot += q.get_f64(q0 + b * qs.b + h * qs.h + i * qs.s + d) *
                               k.get_f64(k0 + b * ks.b + hk * ks.h + j * ks.s + d);
                    double x = scale * dot + (bias ? bias->get_f64(pattern_index(bias->shape, b, h, i, j)) : 0.0);
                    s[static_cast<size_t>(j)] = x;
                    mx = std::max(mx, x);
                }
                double sum = 0;
                for (int64_t j = 0; j < Sk; ++j)
                    if (kept[static_cast<size_t>(j)])
                        sum += (s[static_cast<size_t>(j)] = std::exp(s[static_cast<size_t>(j)] - mx));
                for (int64_t d = 0; d < D; ++d) {
                    double acc = 0;
                    if (sum > 0)
                        for (int64_t j = 0; j < Sk; ++j)
                            if (kept[static_cast<size_t>(j)])
                                acc += s[static_cast<size_t>(j)] * v.get_f64(v0 + b * vs.b + hk * vs.h + j * vs.s + d);
                    r.set_f64(b * os.b + h * os.h + i * os.s + d, sum > 0 ? acc / sum : 0.0);
                }
            }
        }
    return {r};
}

}  // namespace stof::ir::ops
