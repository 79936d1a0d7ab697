// SparseAttention: softmax(scale · q·kᵀ + bias, over kept keys) · v.
//
// Inputs (3..6): q [B,H,Sq,D]; k, v [B,Hk,Sk,D] with Hk dividing H (query head
// h reads KV head h / (H / Hk)); keep: bool [Sq,Sk] or [1|B,1|H,Sq,Sk] (absent:
// all kept); bias: float of the same broadcast forms (absent: none); padding:
// [B,Sk] integer or bool, nonzero = key valid (absent: all valid).
// Attributes: scale (float), mask (text describing the pattern, for reports).
// A query row with no kept key outputs zeros (the kernels' contract).
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
    STOF_CHECK(ok, "{}: {} of shape {} must be [{},{}] or [1|{},1|{},{},{}]", n.label(), what, shape_str(s), sq, sk, b, h,
               sq, sk);
}

}  // namespace

std::vector<TensorType> infer_SparseAttention(const Node& n, const std::vector<InferInput>& in) {
    const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
    STOF_CHECK(q.size() == 4 && k.size() == 4 && v.size() == 4, "{}: q, k, v must be rank 4", n.label());
    STOF_CHECK(is_float(in[0].dtype) && in[1].dtype == in[0].dtype && in[2].dtype == in[0].dtype,
               "{}: q, k, v must share a float dtype", n.label());
    STOF_CHECK(k[0] == q[0] && v[0] == q[0] && k[1] == v[1] && k[1] >= 1 && q[1] % k[1] == 0 && k[2] == v[2] &&
                   k[3] == q[3] && v[3] == q[3],
               "{}: shapes q {} k {} v {} do not form an attention", n.label(), shape_str(q), shape_str(k), shape_str(v));
    check_pattern(n, in, 3, "keep", q[0], q[1], q[2], k[2]);
    check_pattern(n, in, 4, "bias", q[0], q[1], q[2], k[2]);
    if (in.size() > 3 && in[3].present) STOF_CHECK(in[3].dtype == DType::boolean, "{}: keep must be bool", n.label());
    if (in.size() > 5 && in[5].present)
        STOF_CHECK(in[5].shape == Shape({q[0], k[2]}) && !is_float(in[5].dtype), "{}: padding must be integer [{},{}]",
                   n.label(), q[0], k[2]);
    return {{in[0].dtype, q}};
}

std::vector<Tensor> eval_SparseAttention(const Node& n, const Inputs& in, const Types& out) {
    const Tensor &q = *in[0], &k = *in[1], &v = *in[2];
    const Tensor* keep = in.size() > 3 ? in[3] : nullptr;
    const Tensor* bias = in.size() > 4 ? in[4] : nullptr;
    const Tensor* pad = in.size() > 5 ? in[5] : nullptr;
    const int64_t B = q.shape[0], H = q.shape[1], Sq = q.shape[2], D = q.shape[3], Hk = k.shape[1], Sk = k.shape[2];
    const double scale = n.attrs.f("scale", 1.0);
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
                              (!pad || pad->get_i64(b * Sk + j) != 0);
                    kept[static_cast<size_t>(j)] = on;
                    if (!on) continue;
                    double dot = 0;
                    for (int64_t d = 0; d < D; ++d)
                        dot += q.get_f64(((b * H + h) * Sq + i) * D + d) * k.get_f64(((b * Hk + hk) * Sk + j) * D + d);
                    double x = scale * dot + (bias ? bias->get_f64(pattern_index(bias->shape, b, h, i, j)) : 0.0);
                    s[static_cast<size_t>(j)] = x;
                    mx = std::max(mx, x);
                }
                double sum = 0;
                for (int64_t j = 0; j < Sk; ++j)
                    if (kept[static_cast<size_t>(j)]) sum += (s[static_cast<size_t>(j)] = std::exp(s[static_cast<size_t>(j)] - mx));
                for (int64_t d = 0; d < D; ++d) {
                    double acc = 0;
                    if (sum > 0)
                        for (int64_t j = 0; j < Sk; ++j)
                            if (kept[static_cast<size_t>(j)])
                                acc += s[static_cast<size_t>(j)] * v.get_f64(((b * Hk + hk) * Sk + j) * D + d);
                    r.set_f64(((b * H + h) * Sq + i) * D + d, sum > 0 ? acc / sum : 0.0);
                }
            }
        }
    return {r};
}

}  // namespace stof::ir::ops
