// Rotary(x, cos, sin) {head_dim = D, rot_cols = R}: the rotary position embedding in the
// rotate-half form (LLaMA) over the heads of D columns in [0, R) of each row.
//   x     [..., N] float, rank >= 2, viewed as rows r (the leading dims flattened) x N columns
//   cos, sin  [P, D], x's dtype; row p holds position p's table
//   D even, h = D / 2; R a multiple of D with 0 < R <= N; P >= 1
//   y[r, c] = x[r, c]·cos[p, e] + (e < h ? −x[r, c + h] : x[r, c − h])·sin[p, e]   c < R, e = c % D, p = r % P
//   y[r, c] = x[r, c]                                                              c >= R
// y: x's type and shape. Computed in double, rounded once to y's dtype. For x [B, S, N],
// P = S gives row (b, s) position s; a table per batch row [B·S, D] has P = B·S.
#include "ops/op_functions.hpp"
#include "ops/op_util.hpp"

namespace stof::ir::ops {

std::vector<TensorType> infer_Rotary(const Node& n, const std::vector<InferInput>& in) {
    const Shape& xs = in[0].shape;
    STOF_CHECK(is_float(in[0].dtype), "{}: needs a float input, got {}", n.label(), dtype_name(in[0].dtype));
    STOF_CHECK(xs.size() >= 2, "{}: x must have rank 2 or more, got {}", n.label(), shape_str(xs));
    const int64_t d = n.attrs.i("head_dim", 0), r = n.attrs.i("rot_cols", 0), cols = xs.back();
    STOF_CHECK(d > 0 && d % 2 == 0, "{}: head_dim must be even and positive, got {}", n.label(), d);
    STOF_CHECK(r > 0 && r % d == 0 && r <= cols, "{}: rot_cols must be a multiple of head_dim {} in (0, {}], got {}", n.label(),
               d, cols, r);
    for (size_t k = 1; k < 3; ++k) {
        const char* what = k == 1 ? "cos" : "sin";
        STOF_CHECK(in[k].dtype == in[0].dtype, "{}: {} is {}, x is {}", n.label(), what, dtype_name(in[k].dtype),
                   dtype_name(in[0].dtype));
        STOF_CHECK(in[k].shape.size() == 2 && in[k].shape[0] >= 1 && in[k].shape[1] == d,
                   "{}: {} must be [positions, {}], got {}", n.label(), what, d, shape_str(in[k].shape));
    }
    STOF_CHECK(in[1].shape == in[2].shape, "{}: cos {} and sin {} differ in shape", n.label(), shape_str(in[1].shape),
               shape_str(in[2].shape));
    return {{in[0].dtype, xs}};
}

std::vector<Tensor> eval_Rotary(const Node& n, const std::vector<const Tensor*>& in, const std::vector<TensorType>& out) {
    const Tensor &x = *in[0], &cos = *in[1], &sin = *in[2];
    const int64_t d = n.attrs.i("head_dim", 0), r = n.attrs.i("rot_cols", 0), h = d / 2;
    const int64_t cols = x.shape.back(), rows = cols ? x.numel() / cols : 0, positions = cos.shape[0];
    Tensor y(out[0].dtype, out[0].shape);
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t base = row * cols, p = row % positions;
        for (int64_t c = 0; c < cols; ++c) {
            const double v = x.get_f64(base + c);
            if (c >= r) {
                y.set_f64(base + c, v);
                continue;
            }
            const int64_t e = c % d;
            const double partner = e < h ? -x.get_f64(base + c + h) : x.get_f64(base + c - h);
            y.set_f64(base + c, v * cos.get_f64(p * d + e) + partner * sin.get_f64(p * d + e));
        }
    }
    return {y};
}

}  // namespace stof::ir::ops
