// Reductions and normalisations: ReduceMean/Sum/Max/Min, Softmax,
// LayerNormalization, RMSNorm, CumSum. Accumulation in double.
#include "ops/op_functions.hpp"
#include "ops/op_util.hpp"

#include <cmath>
#include <limits>

namespace stof::ir::ops {

namespace {

using Inputs = std::vector<const Tensor*>;
using Types = std::vector<TensorType>;

// Which axes a Reduce* node reduces: input 1 (if given) else all, per ONNX.
std::vector<char> reduced_axes(const Node& n, const Shape& shape, const std::vector<int64_t>* axes) {
    const auto rank = static_cast<int64_t>(shape.size());
    std::vector<char> mask(shape.size(), 0);
    if (!axes || axes->empty()) {
        if (n.attrs.i("noop_with_empty_axes", 0) == 0) std::fill(mask.begin(), mask.end(), 1);
        return mask;
    }
    for (int64_t a : *axes) mask[static_cast<size_t>(normalize_axis(a, rank, n))] = 1;
    return mask;
}

Shape reduced_shape(const Shape& shape, const std::vector<char>& mask, bool keepdims) {
    Shape out;
    for (size_t d = 0; d < shape.size(); ++d) {
        if (!mask[d]) out.push_back(shape[d]);
        else if (keepdims) out.push_back(1);
    }
    return out;
}

enum class Reduce { mean, sum, max, min };

std::vector<Tensor> reduce(const Node& n, const Inputs& in, const Types& out, Reduce kind) {
    const Tensor& x = *in[0];
    std::vector<int64_t> axes;
    if (in.size() > 1 && in[1])
        for (int64_t i = 0; i < in[1]->numel(); ++i) axes.push_back(in[1]->get_i64(i));
    const std::vector<char> mask = reduced_axes(n, x.shape, in.size() > 1 && in[1] ? &axes : nullptr);
    // Output index of each input element: input strides with reduced axes zeroed.
    const Shape kept = reduced_shape(x.shape, mask, true);
    const std::vector<int64_t> kst = strides_of(kept);
    std::vector<int64_t> st(x.shape.size());
    for (size_t d = 0; d < x.shape.size(); ++d) st[d] = mask[d] ? 0 : kst[d];
    const int64_t nout = numel(kept);
    const double init = kind == Reduce::max   ? -std::numeric_limits<double>::infinity()
                        : kind == Reduce::min ? std::numeric_limits<double>::infinity()
                                              : 0.0;
    std::vector<double> acc(static_cast<size_t>(nout), init);
    const int64_t count = nout ? x.numel() / nout : 0;
    STOF_CHECK(x.numel() > 0 || kind == Reduce::sum || kind == Reduce::mean, "{}: reducing an empty tensor", n.label());
    std::vector<int64_t> counter(x.shape.size(), 0);
    int64_t o = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
        const double v = x.get_f64(i);
        double& a = acc[static_cast<size_t>(o)];
        switch (kind) {
            case Reduce::mean:
            case Reduce::sum: a += v; break;
            case Reduce::max: a = (std::isnan(v) || v > a) ? v : a; break;
            case Reduce::min: a = (std::isnan(v) || v < a) ? v : a; break;
        }
        for (size_t d = x.shape.size(); d-- > 0;) {
            if (++counter[d] < x.shape[d]) {
                o += st[d];
                break;
            }
            o -= st[d] * (x.shape[d] - 1);
            counter[d] = 0;
        }
    }
    Tensor r(out[0].dtype, out[0].shape);
    for (int64_t k = 0; k < nout; ++k) {
        const double v = acc[static_cast<size_t>(k)];
        r.set_f64(k, kind == Reduce::mean ? v / static_cast<double>(count) : v);
    }
    return {r};
}

}  // namespace

std::vector<TensorType> infer_reduce(const Node& n, const std::vector<InferInput>& in) {
    std::vector<int64_t> axes;
    const bool has_axes = in.size() > 1 && in[1].present;
    if (has_axes) axes = known_ints(in, 1, n, "axes");
    const std::vector<char> mask = reduced_axes(n, in[0].shape, has_axes ? &axes : nullptr);
    return {{in[0].dtype, reduced_shape(in[0].shape, mask, n.attrs.i("keepdims", 1) != 0)}};
}

std::vector<Tensor> eval_ReduceMean(const Node& n, const Inputs& in, const Types& out) {
    return reduce(n, in, out, Reduce::mean);
}
std::vector<Tensor> eval_ReduceSum(const Node& n, const Inputs& in, const Types& out) {
    return reduce(n, in, out, Reduce::sum);
}
std::vector<Tensor> eval_ReduceMax(const Node& n, const Inputs& in, const Types& out) {
    return reduce(n, in, out, Reduce::max);
}
std::vector<Tensor> eval_ReduceMin(const Node& n, const Inputs& in, const Types& out) {
    return reduce(n, in, out, Reduce::min);
}

// x viewed as [outer, len, inner] around `axis`.
struct AxisView {
    int64_t outer = 1, len = 1, inner = 1;
    AxisView(const Shape& s, int64_t axis) {
        for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
            if (d < axis) outer *= s[static_cast<size_t>(d)];
            else if (d == axis) len = s[static_cast<size_t>(d)];
            else inner *= s[static_cast<size_t>(d)];
        }
    }
};

std::vector<Tensor> eval_Softmax(const Node& n, const Inputs& in, const Types& out) {
    const Tensor& x = *in[0];
    const int64_t axis = normalize_axis(n.attrs.i("axis", -1), static_cast<int64_t>(x.shape.size()), n);
    const AxisView v(x.shape, axis);
    Tensor r(out[0].dtype, out[0].shape);
    std::vector<double> e(static_cast<size_t>(v.len));
    for (int64_t o = 0; o < v.outer; ++o) {
        for (int64_t i = 0; i < v.inner; ++i) {
            const int64_t base = o * v.len * v.inner + i;
            double mx = -std::numeric_limits<double>::infinity();
            for (int64_t k = 0; k < v.len; ++k) mx = std::max(mx, x.get_f64(base + k * v.inner));
            double sum = 0;
            for (int64_t k = 0; k < v.len; ++k) sum += e[static_cast<size_t>(k)] = std::exp(x.get_f64(base + k * v.inner) - mx);
            for (int64_t k = 0; k < v.len; ++k) r.set_f64(base + k * v.inner, e[static_cast<size_t>(k)] / sum);
        }
    }
    return {r};
}

std::vector<TensorType> infer_LayerNormalization(const Node& n, const std::vector<InferInput>& in) {
    const auto rank = static_cast<int64_t>(in[0].shape.size());
    const int64_t axis = normalize_axis(n.attrs.i("axis", -1), rank, n);
    const Shape norm(in[0].shape.begin() + axis, in[0].shape.end());
    for (size_t k = 1; k < in.size(); ++k) {
        if (!in[k].present) continue;
        STOF_CHECK(broadcast_shapes({&norm, &in[k].shape}, n) == norm,
                   "{}: {} of shape {} does not broadcast to the normalised shape {}", n.label(), k == 1 ? "scale" : "bias",
                   shape_str(in[k].shape), shape_str(norm));
    }
    Shape stat = in[0].shape;
    for (int64_t d = axis; d < rank; ++d) stat[static_cast<size_t>(d)] = 1;
    std::vector<TensorType> out{{in[0].dtype, in[0].shape}};
    for (size_t k = 1; k < n.outputs.size(); ++k) out.push_back({DType::f32, stat});
    return out;
}

namespace {

// LayerNormalization (center: subtract the mean) and RMSNorm (center false)
// over axes [axis, rank): y = (x - mean) / sqrt(var + eps) * scale + bias.
// Outputs 1 and 2 (LayerNormalization only) are the mean and 1/sqrt(var + eps).
std::vector<Tensor> normalize(const Node& n, const Inputs& in, const Types& out, bool center) {
    const Tensor& x = *in[0];
    const auto rank = static_cast<int64_t>(x.shape.size());
    const int64_t axis = normalize_axis(n.attrs.i("axis", -1), rank, n);
    const double eps = n.attrs.f("epsilon", 1e-5);
    const Shape norm(x.shape.begin() + axis, x.shape.end());
    const int64_t len = numel(norm), rows = len ? x.numel() / len : 0;
    // scale/bias broadcast to the normalised shape
    std::vector<double> scale(static_cast<size_t>(len), 1.0), bias(static_cast<size_t>(len), 0.0);
    for (size_t k = 1; k < in.size(); ++k) {
        if (!in[k]) continue;
        std::vector<double>& dst = k == 1 ? scale : bias;
        Broadcast(norm, {&in[k]->shape}).run([&](int64_t o, const int64_t* idx) {
            dst[static_cast<size_t>(o)] = in[k]->get_f64(idx[0]);
        });
    }
    std::vector<Tensor> res;
    for (const TensorType& t : out) res.emplace_back(t.dtype, t.shape);
    for (int64_t r = 0; r < rows; ++r) {
        double mean = 0, var = 0;
        if (center) {
            for (int64_t k = 0; k < len; ++k) mean += x.get_f64(r * len + k);
            mean /= static_cast<double>(len);
        }
        for (int64_t k = 0; k < len; ++k) {
            const double d = x.get_f64(r * len + k) - mean;
            var += d * d;
        }
        var /= static_cast<double>(len);
        const double inv = 1.0 / std::sqrt(var + eps);
        for (int64_t k = 0; k < len; ++k)
            res[0].set_f64(r * len + k, (x.get_f64(r * len + k) - mean) * inv * scale[static_cast<size_t>(k)] +
                                            bias[static_cast<size_t>(k)]);
        if (res.size() > 1) res[1].set_f64(r, mean);
        if (res.size() > 2) res[2].set_f64(r, inv);
    }
    return res;
}

}  // namespace

std::vector<Tensor> eval_LayerNormalization(const Node& n, const Inputs& in, const Types& out) {
    return normalize(n, in, out, true);
}

std::vector<TensorType> infer_RMSNorm(const Node& n, const std::vector<InferInput>& in) {
    STOF_CHECK(is_float(in[0].dtype), "{}: needs a float input, got {}", n.label(), dtype_name(in[0].dtype));
    return infer_LayerNormalization(n, in);
}

std::vector<Tensor> eval_RMSNorm(const Node& n, const Inputs& in, const Types& out) { return normalize(n, in, out, false); }

std::vector<Tensor> eval_CumSum(const Node& n, const Inputs& in, const Types& out) {
    const Tensor& x = *in[0];
    STOF_CHECK(in[1]->numel() == 1, "{}: axis must be a scalar", n.label());
    const int64_t axis = normalize_axis(in[1]->get_i64(0), static_cast<int64_t>(x.shape.size()), n);
    const bool exclusive = n.attrs.i("exclusive", 0) != 0, reverse = n.attrs.i("reverse", 0) != 0;
    const AxisView v(x.shape, axis);
    Tensor r(out[0].dtype, out[0].shape);
    const bool flt = is_float(x.dtype);
    for (int64_t o = 0; o < v.outer; ++o) {
        for (int64_t i = 0; i < v.inner; ++i) {
            double fs = 0;
            int64_t is = 0;
            for (int64_t s = 0; s < v.len; ++s) {
                const int64_t k = reverse ? v.len - 1 - s : s;
                const int64_t at = (o * v.len + k) * v.inner + i;
                if (!exclusive) {
                    if (flt) fs += x.get_f64(at);
                    else is += x.get_i64(at);
                }
                if (flt) r.set_f64(at, fs);
                else r.set_i64(at, is);
                if (exclusive) {
                    if (flt) fs += x.get_f64(at);
                    else is += x.get_i64(at);
                }
            }
        }
    }
    return {r};
}

}  // namespace stof::ir::ops
