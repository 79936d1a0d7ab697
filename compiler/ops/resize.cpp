// Resize (nearest / linear / cubic), evaluated separably axis by axis.
#include "ops/op_functions.hpp"
#include "ops/resize_taps.hpp"
#include "ops/op_util.hpp"
#include "stof/memory_limit.hpp"

#include <cmath>

namespace stof::ir::ops {

namespace {

std::vector<double> known_floats(const std::vector<InferInput>& in, size_t i) {
    std::vector<double> v(static_cast<size_t>(numel(in[i].shape)));
    for (size_t k = 0; k < v.size(); ++k) v[k] = in[i].data->get_f64(static_cast<int64_t>(k));
    return v;
}

}  // namespace

ResizePlan resize_plan(const Node& n, const std::vector<InferInput>& in) {
    const Shape& xs = in[0].shape;
    const auto rank = static_cast<int64_t>(xs.size());
    STOF_CHECK(n.attrs.i("antialias", 0) == 0, "{}: antialias is not supported", n.label());
    STOF_CHECK(n.attrs.s("keep_aspect_ratio_policy", "stretch") == "stretch",
               "{}: keep_aspect_ratio_policy other than 'stretch' is not supported", n.label());
    std::vector<int64_t> axes = n.attrs.ints("axes", {});
    if (axes.empty())
        for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    for (int64_t& a : axes) a = normalize_axis(a, rank, n);
    const bool has_sizes = in.size() > 3 && in[3].present && numel(in[3].shape) > 0;
    const bool has_scales = in.size() > 2 && in[2].present && numel(in[2].shape) > 0;
    STOF_CHECK(has_sizes != has_scales, "{}: exactly one of scales and sizes must be given", n.label());
    ResizePlan p{xs, std::vector<double>(xs.size(), 1.0)};
    if (has_sizes) {
        const std::vector<int64_t> sizes = known_ints(in, 3, n, "sizes");
        STOF_CHECK(sizes.size() == axes.size(), "{}: {} sizes for {} axes", n.label(), sizes.size(), axes.size());
        for (size_t i = 0; i < axes.size(); ++i) {
            const auto d = static_cast<size_t>(axes[i]);
            STOF_CHECK(sizes[i] > 0, "{}: size {} is not positive", n.label(), sizes[i]);
            p.out[d] = sizes[i];
            p.scale[d] = static_cast<double>(sizes[i]) / static_cast<double>(xs[d]);
        }
    } else {
        STOF_CHECK(in[2].data != nullptr, "{}: the scales are computed at run time; stofc needs them at compile time",
                   n.label());
        const std::vector<double> scales = known_floats(in, 2);
        STOF_CHECK(scales.size() == axes.size(), "{}: {} scales for {} axes", n.label(), scales.size(), axes.size());
        for (size_t i = 0; i < axes.size(); ++i) {
            const auto d = static_cast<size_t>(axes[i]);
            STOF_CHECK(scales[i] > 0 && std::isfinite(scales[i]), "{}: scale {} is not a positive number", n.label(), scales[i]);
            const double size = std::floor(static_cast<double>(xs[d]) * scales[i]);
            STOF_CHECK(size <= static_cast<double>(kMaxElements),
                       "{}: scale {} makes dimension {} of size {}, more than "
                       "stofc handles (2^40)",
                       n.label(), scales[i], d, size);
            p.scale[d] = scales[i];
            p.out[d] = static_cast<int64_t>(size);
        }
    }
    return p;
}

// Source coordinate of output position x, in fp32 like onnxruntime (rounding
// ties in nearest mode depend on it).
namespace {

double original_coordinate(const std::string& mode, double x_d, double scale_d, int64_t in_len, int64_t out_len) {
    const auto x = static_cast<float>(x_d), scale = static_cast<float>(scale_d);
    const auto in_f = static_cast<float>(in_len), out_f = static_cast<float>(out_len);
    if (mode == "half_pixel") return (x + 0.5f) / scale - 0.5f;
    if (mode == "pytorch_half_pixel") return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    if (mode == "align_corners") return out_len == 1 ? 0.0f : x * (in_f - 1) / (out_f - 1);
    if (mode == "asymmetric") return x / scale;
    if (mode == "tf_half_pixel_for_nn") return (x + 0.5f) / scale;
    // half_pixel_symmetric
    const float adj = out_f / (scale * in_f);
    const float center = in_f / 2.0f;
    return center * (1.0f - adj) + (x + 0.5f) / scale - 0.5f;
}

std::vector<double> cubic_coeffs(double r, double a) {
    return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a, ((a + 2) * r - (a + 3)) * r * r + 1,
            ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1, ((a * (2 - r) - 5 * a) * (2 - r) + 8 * a) * (2 - r) - 4 * a};
}

}  // namespace

std::vector<std::vector<Tap>> axis_taps(const Node& n, int64_t in_len, int64_t out_len, double scale) {
    const std::string mode = n.attrs.s("mode", "nearest");
    const std::string coord = n.attrs.s("coordinate_transformation_mode", "half_pixel");
    STOF_CHECK(coord == "half_pixel" || coord == "pytorch_half_pixel" || coord == "align_corners" || coord == "asymmetric" ||
                   coord == "tf_half_pixel_for_nn" || coord == "half_pixel_symmetric",
               "{}: coordinate_transformation_mode '{}' is not supported", n.label(), coord);
    STOF_CHECK(mode == "nearest" || mode == "linear" || mode == "cubic", "{}: mode '{}' is not supported", n.label(), mode);
    const std::string nearest = n.attrs.s("nearest_mode", "round_prefer_floor");
    const double a = n.attrs.f("cubic_coeff_a", -0.75);
    const bool exclude = n.attrs.i("exclude_outside", 0) != 0;
    auto clamp = [&](int64_t i) { return std::min(std::max<int64_t>(i, 0), in_len - 1); };
    // Up to 4 taps per output position, each list a heap block of its own.
    check_memory(static_cast<uint64_t>(out_len) * (sizeof(std::vector<Tap>) + 4 * sizeof(Tap) + 16),
                 fmt::format("{}: the interpolation taps of {} output positions", n.label(), out_len));
    std::vector<std::vector<Tap>> taps(static_cast<size_t>(out_len));
    for (int64_t o = 0; o < out_len; ++o) {
        const double x = original_coordinate(coord, static_cast<double>(o), scale, in_len, out_len);
        std::vector<Tap>& t = taps[static_cast<size_t>(o)];
        if (mode == "nearest") {
            int64_t i;
            if (nearest == "floor") i = static_cast<int64_t>(std::floor(x));
            else if (nearest == "ceil") i = static_cast<int64_t>(std::ceil(x));
            else if (nearest == "round_prefer_ceil") i = static_cast<int64_t>(std::floor(x + 0.5));
            else {
                STOF_CHECK(nearest == "round_prefer_floor", "{}: nearest_mode '{}' is not supported", n.label(), nearest);
                i = static_cast<int64_t>(std::ceil(x - 0.5));
            }
            t.push_back({clamp(i), 1.0});
        } else if (mode == "linear") {
            const double xc = std::min(std::max(x, 0.0), static_cast<double>(in_len - 1));
            const auto x1 = static_cast<int64_t>(std::floor(xc));
            const int64_t x2 = std::min(x1 + 1, in_len - 1);
            const double w2 = xc - static_cast<double>(x1);
            t.push_back({x1, 1.0 - w2});
            t.push_back({x2, w2});
        } else {
            const auto xi = static_cast<int64_t>(std::floor(x));
            const std::vector<double> c = cubic_coeffs(x - static_cast<double>(xi), a);
            double sum = 0;
            for (int k = 0; k < 4; ++k) {
                const int64_t idx = xi - 1 + k;
                if (exclude && (idx < 0 || idx >= in_len)) continue;
                t.push_back({clamp(idx), c[static_cast<size_t>(k)]});
                sum += c[static_cast<size_t>(k)];
            }
            if (exclude && sum != 0)
                for (Tap& tap : t) tap.weight /= sum;
        }
    }
    return taps;
}

std::vector<TensorType> infer_Resize(const Node& n, const std::vector<InferInput>& in) {
    STOF_CHECK(is_float(in[0].dtype), "{}: needs a float input", n.label());
    return {{in[0].dtype, resize_plan(n, in).out}};
}

std::vector<Tensor> eval_Resize(const Node& n, const std::vector<const Tensor*>& args, const std::vector<TensorType>& out) {
    std::vector<InferInput> in(args.size());
    for (size_t k = 0; k < args.size(); ++k)
        if (args[k]) in[k] = {true, args[k]->dtype, args[k]->shape, args[k]};
    const ResizePlan plan = resize_plan(n, in);
    Shape cur = args[0]->shape;
    std::vector<double> data(static_cast<size_t>(args[0]->numel()));
    for (size_t i = 0; i < data.size(); ++i) data[i] = args[0]->get_f64(static_cast<int64_t>(i));
    for (size_t d = 0; d < cur.size(); ++d) {
        if (plan.out[d] == cur[d] && plan.scale[d] == 1.0) continue;
        const auto taps = axis_taps(n, cur[d], plan.out[d], plan.scale[d]);
        int64_t outer = 1, inner = 1;
        for (size_t k = 0; k < d; ++k) outer *= cur[k];
        for (size_t k = d + 1; k < cur.size(); ++k) inner *= cur[k];
        std::vector<double> next(static_cast<size_t>(outer * plan.out[d] * inner), 0.0);
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t j = 0; j < plan.out[d]; ++j)
                for (const Tap& t : taps[static_cast<size_t>(j)])
                    for (int64_t i = 0; i < inner; ++i)
                        next[static_cast<size_t>((o * plan.out[d] + j) * inner + i)] +=
                            t.weight * data[static_cast<size_t>((o * cur[d] + t.index) * inner + i)];
        data.swap(next);
        cur[d] = plan.out[d];
    }
    Tensor r(out[0].dtype, out[0].shape);
    for (size_t i = 0; i < data.size(); ++i) r.set_f64(static_cast<int64_t>(i), data[i]);
    return {r};
}

}  // namespace stof::ir::ops
