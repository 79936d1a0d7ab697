// Layout ops: pure data movement, dtype-agnostic (elements copied as bytes).
#include "ops/op_functions.hpp"
#include "ops/op_util.hpp"

#include <cstring>
#include <limits>
#include <numeric>

namespace stof::ir::ops {

namespace {

using Inputs = std::vector<const Tensor*>;
using Types = std::vector<TensorType>;

// dst[o] = src[base + sum_d idx_d * stride_d] for every element o of out_shape.
void strided_copy(const Tensor& src, Tensor& dst, int64_t base, const std::vector<int64_t>& stride) {
    const size_t es = dtype_size(src.dtype), rank = dst.shape.size();
    const int64_t total = dst.numel();
    std::vector<int64_t> counter(rank, 0);
    int64_t at = base;
    for (int64_t o = 0; o < total; ++o) {
        std::memcpy(dst.bytes.data() + static_cast<size_t>(o) * es, src.bytes.data() + static_cast<size_t>(at) * es, es);
        for (size_t d = rank; d-- > 0;) {
            if (++counter[d] < dst.shape[d]) {
                at += stride[d];
                break;
            }
            at -= stride[d] * (dst.shape[d] - 1);
            counter[d] = 0;
        }
    }
}

// dst [cols, rows] = src [rows, cols] transposed, in 64 x 64 blocks that stay in cache on
// both sides (a weight stored [out, in] is folded this way at compile time).
template <class E> void transpose_2d(const E* src, E* dst, int64_t rows, int64_t cols) {
    constexpr int64_t kBlock = 64;
    for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
        for (int64_t c0 = 0; c0 < cols; c0 += kBlock)
            for (int64_t c = c0; c < std::min(cols, c0 + kBlock); ++c)
                for (int64_t r = r0; r < std::min(rows, r0 + kBlock); ++r) dst[c * rows + r] = src[r * cols + c];
}

int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); }

struct SliceAxis {
    int64_t start = 0, step = 1, len = 0;
};

// Per-axis start/step/length of a Slice, following the ONNX clamping rules.
std::vector<SliceAxis> slice_axes(const Node& n, const Shape& shape, const std::vector<int64_t>& starts,
                                  const std::vector<int64_t>& ends, const std::vector<int64_t>* axes_in,
                                  const std::vector<int64_t>* steps_in) {
    const auto rank = static_cast<int64_t>(shape.size());
    STOF_CHECK(starts.size() == ends.size(), "{}: starts and ends have different lengths", n.label());
    std::vector<int64_t> axes(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
    if (axes_in) axes = *axes_in;
    std::vector<int64_t> steps(starts.size(), 1);
    if (steps_in) steps = *steps_in;
    STOF_CHECK(axes.size() == starts.size() && steps.size() == starts.size(),
               "{}: starts, ends, axes and steps have different lengths", n.label());
    std::vector<SliceAxis> out(shape.size());
    std::vector<char> seen(shape.size(), 0);
    for (size_t d = 0; d < shape.size(); ++d) out[d] = {0, 1, shape[d]};
    for (size_t i = 0; i < axes.size(); ++i) {
        const auto a = static_cast<size_t>(normalize_axis(axes[i], rank, n));
        STOF_CHECK(!seen[a], "{}: axis {} is sliced twice", n.label(), a);
        seen[a] = 1;
        const int64_t dim = shape[a], step = steps[i];
        STOF_CHECK(step != 0, "{}: step 0", n.label());
        int64_t s = starts[i], e = ends[i];
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        int64_t len;
        if (step > 0) {
            s = clamp(s, 0, dim);
            e = clamp(e, 0, dim);
            len = e > s ? (e - s + step - 1) / step : 0;
        } else {
            s = clamp(s, 0, dim - 1);
            e = clamp(e, -1, dim - 1);
            len = s > e ? (s - e + (-step) - 1) / (-step) : 0;
        }
        out[a] = {s, step, len};
    }
    return out;
}

std::vector<SliceAxis> slice_from_tensors(const Node& n, const Shape& shape, const Inputs& in) {
    auto ints = [](const Tensor* t) {
        std::vector<int64_t> v(static_cast<size_t>(t->numel()));
        for (size_t k = 0; k < v.size(); ++k) v[k] = t->get_i64(static_cast<int64_t>(k));
        return v;
    };
    const std::vector<int64_t> starts = ints(in[1]), ends = ints(in[2]);
    std::vector<int64_t> axes, steps;
    if (in.size() > 3 && in[3]) axes = ints(in[3]);
    if (in.size() > 4 && in[4]) steps = ints(in[4]);
    return slice_axes(n, shape, starts, ends, in.size() > 3 && in[3] ? &axes : nullptr,
                      in.size() > 4 && in[4] ? &steps : nullptr);
}

}  // namespace

// --- reshapes (one eval for all: the bytes do not move) ----------------------

std::vector<Tensor> eval_Reshape(const Node&, const Inputs& in, const Types& out) {
    Tensor r = *in[0];
    r.shape = out[0].shape;
    return {r};
}

std::vector<TensorType> infer_Reshape(const Node& n, const std::vector<InferInput>& in) {
    const std::vector<int64_t> target = known_ints(in, 1, n, "target shape");
    const bool allowzero = n.attrs.i("allowzero", 0) != 0;
    Shape out;
    int64_t infer_at = -1, known = 1;
    for (size_t d = 0; d < target.size(); ++d) {
        int64_t v = target[d];
        if (v == 0 && !allowzero) {
            STOF_CHECK(d < in[0].shape.size(), "{}: target dim {} copies a dimension the input does not have", n.label(), d);
            v = in[0].shape[d];
        }
        if (v == -1) {
            STOF_CHECK(infer_at < 0, "{}: target shape {} has more than one -1", n.label(), shape_str(target));
            infer_at = static_cast<int64_t>(d);
            out.push_back(1);
            continue;
        }
        STOF_CHECK(v >= 0, "{}: target shape {} has a negative dimension", n.label(), shape_str(target));
        known = size_mul(known, v, n.label() + ": target shape " + shape_str(target));
        out.push_back(v);
    }
    const int64_t total = numel(in[0].shape);
    if (infer_at >= 0) {
        STOF_CHECK(known != 0 && total % known == 0, "{}: cannot reshape {} to {}", n.label(), shape_str(in[0].shape),
                   shape_str(target));
        out[static_cast<size_t>(infer_at)] = total / known;
    }
    STOF_CHECK(numel(out) == total, "{}: cannot reshape {} ({} elements) to {}", n.label(), shape_str(in[0].shape), total,
               shape_str(out));
    return {{in[0].dtype, out}};
}

std::vector<TensorType> infer_Unsqueeze(const Node& n, const std::vector<InferInput>& in) {
    const std::vector<int64_t> axes = known_ints(in, 1, n, "axes");
    const auto rank = static_cast<int64_t>(in[0].shape.size() + axes.size());
    std::vector<char> ones(static_cast<size_t>(rank), 0);
    for (int64_t a : axes) {
        const auto k = static_cast<size_t>(normalize_axis(a, rank, n));
        STOF_CHECK(!ones[k], "{}: axis {} repeated", n.label(), a);
        ones[k] = 1;
    }
    Shape out;
    size_t src = 0;
    for (size_t d = 0; d < ones.size(); ++d) out.push_back(ones[d] ? 1 : in[0].shape[src++]);
    return {{in[0].dtype, out}};
}

std::vector<TensorType> infer_Squeeze(const Node& n, const std::vector<InferInput>& in) {
    const auto rank = static_cast<int64_t>(in[0].shape.size());
    std::vector<char> drop(in[0].shape.size(), 0);
    if (in.size() > 1 && in[1].present) {
        for (int64_t a : known_ints(in, 1, n, "axes")) {
            const auto k = static_cast<size_t>(normalize_axis(a, rank, n));
            STOF_CHECK(in[0].shape[k] == 1, "{}: cannot squeeze axis {} of size {}", n.label(), a, in[0].shape[k]);
            drop[k] = 1;
        }
    } else {
        for (size_t d = 0; d < drop.size(); ++d) drop[d] = in[0].shape[d] == 1;
    }
    Shape out;
    for (size_t d = 0; d < drop.size(); ++d)
        if (!drop[d]) out.push_back(in[0].shape[d]);
    return {{in[0].dtype, out}};
}

std::vector<TensorType> infer_Flatten(const Node& n, const std::vector<InferInput>& in) {
    const auto rank = static_cast<int64_t>(in[0].shape.size());
    int64_t axis = n.attrs.i("axis", 1);
    STOF_CHECK(axis >= -rank && axis <= rank, "{}: axis {} out of range for rank {}", n.label(), axis, rank);
    if (axis < 0) axis += rank;
    int64_t a = 1, b = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? a : b) *= in[0].shape[static_cast<size_t>(d)];
    return {{in[0].dtype, {a, b}}};
}

// --- transpose, slice, concat, split -----------------------------------------

namespace {
std::vector<int64_t> transpose_perm(const Node& n, size_t rank) {
    std::vector<int64_t> perm(rank);
    for (size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(rank - 1 - d);
    perm = n.attrs.ints("perm", perm);
    STOF_CHECK(perm.size() == rank, "{}: perm has {} entries for rank {}", n.label(), perm.size(), rank);
    std::vector<char> seen(rank, 0);
    for (int64_t& p : perm) {
        p = normalize_axis(p, static_cast<int64_t>(rank), n);
        STOF_CHECK(!seen[static_cast<size_t>(p)], "{}: perm is not a permutation", n.label());
        seen[static_cast<size_t>(p)] = 1;
    }
    return perm;
}
}  // namespace

std::vector<TensorType> infer_Transpose(const Node& n, const std::vector<InferInput>& in) {
    const std::vector<int64_t> perm = transpose_perm(n, in[0].shape.size());
    Shape out;
    for (int64_t p : perm) out.push_back(in[0].shape[static_cast<size_t>(p)]);
    return {{in[0].dtype, out}};
}

std::vector<Tensor> eval_Transpose(const Node& n, const Inputs& in, const Types& out) {
    const std::vector<int64_t> perm = transpose_perm(n, in[0]->shape.size());
    const std::vector<int64_t> st = strides_of(in[0]->shape);
    std::vector<int64_t> stride;
    for (int64_t p : perm) stride.push_back(st[static_cast<size_t>(p)]);
    std::vector<Tensor> res;  // filled in place: a folded weight is not copied
    Tensor& r = res.emplace_back(out[0].dtype, out[0].shape);
    const Shape& sh = in[0]->shape;
    const bool two_d = perm == std::vector<int64_t>{1, 0};
    switch (two_d ? dtype_size(r.dtype) : 0) {
        case 1: transpose_2d(in[0]->data<uint8_t>(), r.data<uint8_t>(), sh[0], sh[1]); break;
        case 2: transpose_2d(in[0]->data<uint16_t>(), r.data<uint16_t>(), sh[0], sh[1]); break;
        case 4: transpose_2d(in[0]->data<uint32_t>(), r.data<uint32_t>(), sh[0], sh[1]); break;
        case 8: transpose_2d(in[0]->data<uint64_t>(), r.data<uint64_t>(), sh[0], sh[1]); break;
        default: strided_copy(*in[0], r, 0, stride);
    }
    return res;
}

std::vector<TensorType> infer_Slice(const Node& n, const std::vector<InferInput>& in) {
    const std::vector<int64_t> starts = known_ints(in, 1, n, "starts"), ends = known_ints(in, 2, n, "ends");
    std::vector<int64_t> axes, steps;
    const bool has_axes = in.size() > 3 && in[3].present, has_steps = in.size() > 4 && in[4].present;
    if (has_axes) axes = known_ints(in, 3, n, "axes");
    if (has_steps) steps = known_ints(in, 4, n, "steps");
    Shape out;
    for (const SliceAxis& s : slice_axes(n, in[0].shape, starts, ends, has_axes ? &axes : nullptr, has_steps ? &steps : nullptr))
        out.push_back(s.len);
    return {{in[0].dtype, out}};
}

std::vector<Tensor> eval_Slice(const Node& n, const Inputs& in, const Types& out) {
    const std::vector<SliceAxis> ax = slice_from_tensors(n, in[0]->shape, in);
    const std::vector<int64_t> st = strides_of(in[0]->shape);
    int64_t base = 0;
    std::vector<int64_t> stride(ax.size());
    for (size_t d = 0; d < ax.size(); ++d) {
        base += ax[d].start * st[d];
        stride[d] = ax[d].step * st[d];
    }
    Tensor r(out[0].dtype, out[0].shape);
    if (r.numel() > 0) strided_copy(*in[0], r, base, stride);
    return {r};
}

std::vector<TensorType> infer_Concat(const Node& n, const std::vector<InferInput>& in) {
    const auto rank = static_cast<int64_t>(in[0].shape.size());
    STOF_CHECK(rank > 0, "{}: cannot concatenate scalars", n.label());
    const auto axis = static_cast<size_t>(normalize_axis(n.attrs.i("axis", 0), rank, n));
    Shape out = in[0].shape;
    out[axis] = 0;
    for (const InferInput& x : in) {
        STOF_CHECK(x.dtype == in[0].dtype, "{}: inputs have different element types", n.label());
        STOF_CHECK(x.shape.size() == out.size(), "{}: inputs have different ranks", n.label());
        for (size_t d = 0; d < out.size(); ++d)
            STOF_CHECK(d == axis || x.shape[d] == out[d], "{}: input shapes {} and {} differ off the concat axis", n.label(),
                       shape_str(in[0].shape), shape_str(x.shape));
        out[axis] += x.shape[axis];
    }
    return {{in[0].dtype, out}};
}

std::vector<Tensor> eval_Concat(const Node& n, const Inputs& in, const Types& out) {
    const Shape& os = out[0].shape;
    const auto axis = static_cast<size_t>(normalize_axis(n.attrs.i("axis", 0), static_cast<int64_t>(os.size()), n));
    const size_t es = dtype_size(out[0].dtype);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis; ++d) outer *= os[d];
    for (size_t d = axis + 1; d < os.size(); ++d) inner *= os[d];
    Tensor r(out[0].dtype, os);
    int64_t offset = 0;
    for (const Tensor* t : in) {
        const int64_t chunk = t->shape[axis] * inner;
        for (int64_t o = 0; o < outer; ++o)
            std::memcpy(r.bytes.data() + static_cast<size_t>(o * os[axis] * inner + offset) * es,
                        t->bytes.data() + static_cast<size_t>(o * chunk) * es, static_cast<size_t>(chunk) * es);
        offset += chunk;
    }
    return {r};
}

namespace {
std::vector<int64_t> split_sizes(const Node& n, const Shape& shape, int64_t axis, const std::vector<int64_t>* split) {
    const int64_t dim = shape[static_cast<size_t>(axis)];
    const auto nout = static_cast<int64_t>(n.outputs.size());
    if (split) {
        STOF_CHECK(static_cast<int64_t>(split->size()) == nout, "{}: split has {} sizes for {} outputs", n.label(),
                   split->size(), nout);
        int64_t sum = 0;
        for (int64_t s : *split) sum += s;
        STOF_CHECK(sum == dim, "{}: split sizes sum to {}, axis has {}", n.label(), sum, dim);
        return *split;
    }
    const int64_t parts = n.attrs.i("num_outputs", nout);
    STOF_CHECK(parts == nout && parts > 0, "{}: num_outputs {} but {} outputs", n.label(), parts, nout);
    const int64_t chunk = (dim + parts - 1) / parts;
    std::vector<int64_t> sizes;
    for (int64_t k = 0; k < parts; ++k) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - k * chunk)));
    return sizes;
}
}  // namespace

std::vector<TensorType> infer_Split(const Node& n, const std::vector<InferInput>& in) {
    const int64_t axis = normalize_axis(n.attrs.i("axis", 0), static_cast<int64_t>(in[0].shape.size()), n);
    std::vector<int64_t> split;
    const bool has = in.size() > 1 && in[1].present;
    if (has) split = known_ints(in, 1, n, "split");
    std::vector<TensorType> out;
    for (int64_t s : split_sizes(n, in[0].shape, axis, has ? &split : nullptr)) {
        Shape sh = in[0].shape;
        sh[static_cast<size_t>(axis)] = s;
        out.push_back({in[0].dtype, sh});
    }
    return out;
}

std::vector<Tensor> eval_Split(const Node& n, const Inputs& in, const Types& out) {
    const Shape& xs = in[0]->shape;
    const auto axis = static_cast<size_t>(normalize_axis(n.attrs.i("axis", 0), static_cast<int64_t>(xs.size()), n));
    const size_t es = dtype_size(in[0]->dtype);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis; ++d) outer *= xs[d];
    for (size_t d = axis + 1; d < xs.size(); ++d) inner *= xs[d];
    std::vector<Tensor> res;
    int64_t offset = 0;
    for (const TensorType& t : out) {
        Tensor r(t.dtype, t.shape);
        const int64_t chunk = t.shape[axis] * inner;
        for (int64_t o = 0; o < outer; ++o)
            std::memcpy(r.bytes.data() + static_cast<size_t>(o * chunk) * es,
                        in[0]->bytes.data() + static_cast<size_t>(o * xs[axis] * inner + offset) * es,
                        static_cast<size_t>(chunk) * es);
        offset += chunk;
        res.push_back(std::move(r));
    }
    return res;
}

// --- broadcasting copies -------------------------------------------------------

std::vector<TensorType> infer_Expand(const Node& n, const std::vector<InferInput>& in) {
    const Shape target = known_ints(in, 1, n, "target shape");
    return {{in[0].dtype, broadcast_shapes({&in[0].shape, &target}, n)}};
}

std::vector<Tensor> eval_Expand(const Node&, const Inputs& in, const Types& out) {
    Tensor r(out[0].dtype, out[0].shape);
    const size_t es = dtype_size(r.dtype);
    Broadcast(out[0].shape, {&in[0]->shape}).run([&](int64_t o, const int64_t* idx) {
        std::memcpy(r.bytes.data() + static_cast<size_t>(o) * es, in[0]->bytes.data() + static_cast<size_t>(idx[0]) * es, es);
    });
    return {r};
}

std::vector<TensorType> infer_Tile(const Node& n, const std::vector<InferInput>& in) {
    const std::vector<int64_t> reps = known_ints(in, 1, n, "repeats");
    STOF_CHECK(reps.size() == in[0].shape.size(), "{}: {} repeats for rank {}", n.label(), reps.size(), in[0].shape.size());
    Shape out = in[0].shape;
    for (size_t d = 0; d < out.size(); ++d) {
        STOF_CHECK(reps[d] >= 0, "{}: negative repeat", n.label());
        out[d] = size_mul(out[d], reps[d], n.label() + ": repeats");
    }
    return {{in[0].dtype, out}};
}

std::vector<Tensor> eval_Tile(const Node&, const Inputs& in, const Types& out) {
    Tensor r(out[0].dtype, out[0].shape);
    const Shape& xs = in[0]->shape;
    const std::vector<int64_t> st = strides_of(xs);
    const size_t es = dtype_size(r.dtype), rank = xs.size();
    std::vector<int64_t> counter(rank, 0);
    for (int64_t o = 0; o < r.numel(); ++o) {
        int64_t at = 0;
        for (size_t d = 0; d < rank; ++d) at += (counter[d] % xs[d]) * st[d];
        std::memcpy(r.bytes.data() + static_cast<size_t>(o) * es, in[0]->bytes.data() + static_cast<size_t>(at) * es, es);
        for (size_t d = rank; d-- > 0;) {
            if (++counter[d] < out[0].shape[d]) break;
            counter[d] = 0;
        }
    }
    return {r};
}

// --- gathers and scatters ------------------------------------------------------

std::vector<TensorType> infer_Gather(const Node& n, const std::vector<InferInput>& in) {
    STOF_CHECK(is_integer(in[1].dtype), "{}: indices must be integers, got {}", n.label(), dtype_name(in[1].dtype));
    const auto axis = static_cast<size_t>(normalize_axis(n.attrs.i("axis", 0), static_cast<int64_t>(in[0].shape.size()), n));
    Shape out(in[0].shape.begin(), in[0].shape.begin() + static_cast<std::ptrdiff_t>(axis));
    out.insert(out.end(), in[1].shape.begin(), in[1].shape.end());
    out.insert(out.end(), in[0].shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, in[0].shape.end());
    return {{in[0].dtype, out}};
}

namespace {
int64_t checked_index(const Node& n, int64_t i, int64_t dim) {
    STOF_CHECK(i >= -dim && i < dim, "{}: index {} is out of range for a dimension of {}", n.label(), i, dim);
    return i < 0 ? i + dim : i;
}
}  // namespace

std::vector<Tensor> eval_Gather(const Node& n, const Inputs& in, const Types& out) {
    const Tensor& x = *in[0];
    const Tensor& idx = *in[1];
    const auto axis = static_cast<size_t>(normalize_axis(n.attrs.i("axis", 0), static_cast<int64_t>(x.shape.size()), n));
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis; ++d) outer *= x.shape[d];
    for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
    const int64_t dim = x.shape[axis], ni = idx.numel();
    const size_t es = dtype_size(x.dtype);
    Tensor r(out[0].dtype, out[0].shape);
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < ni; ++j) {
            const int64_t k = checked_index(n, idx.get_i64(j), dim);
            std::memcpy(r.bytes.data() + static_cast<size_t>((o * ni + j) * inner) * es,
                        x.bytes.data() + static_cast<size_t>((o * dim + k) * inner) * es, static_cast<size_t>(inner) * es);
        }
    return {r};
}

std::vector<TensorType> infer_GatherElements(const Node& n, const std::vector<InferInput>& in) {
    STOF_CHECK(in[0].shape.size() == in[1].shape.size(), "{}: data and indices ranks differ", n.label());
    normalize_axis(n.attrs.i("axis", 0), static_cast<int64_t>(in[0].shape.size()), n);
    return {{in[0].dtype, in[1].shape}};
}

std::vector<Tensor> eval_GatherElements(const Node& n, const Inputs& in, const Types& out) {
    const Tensor& x = *in[0];
    const Tensor& idx = *in[1];
    const auto axis = static_cast<size_t>(normalize_axis(n.attrs.i("axis", 0), static_cast<int64_t>(x.shape.size()), n));
    const std::vector<int64_t> xst = strides_of(x.shape);
    const size_t es = dtype_size(x.dtype), rank = x.shape.size();
    Tensor r(out[0].dtype, out[0].shape);
    std::vector<int64_t> counter(rank, 0);
    for (int64_t o = 0; o < r.numel(); ++o) {
        int64_t at = 0;
        for (size_t d = 0; d < rank; ++d)
            at += (d == axis ? checked_index(n, idx.get_i64(o), x.shape[d]) : counter[d]) * xst[d];
        std::memcpy(r.bytes.data() + static_cast<size_t>(o) * es, x.bytes.data() + static_cast<size_t>(at) * es, es);
        for (size_t d = rank; d-- > 0;) {
            if (++counter[d] < idx.shape[d]) break;
            counter[d] = 0;
        }
    }
    return {r};
}

// GatherND: data [b..., d_b..d_r), indices [b..., i..., q] -> [b..., i..., d_{b+q}...].
std::vector<TensorType> infer_GatherND(const Node& n, const std::vector<InferInput>& in) {
    STOF_CHECK(is_integer(in[1].dtype), "{}: indices must be integers, got {}", n.label(), dtype_name(in[1].dtype));
    const Shape& ds = in[0].shape;
    const Shape& is = in[1].shape;
    const int64_t b = n.attrs.i("batch_dims", 0);
    STOF_CHECK(!is.empty() && b >= 0 && b < static_cast<int64_t>(std::min(ds.size(), is.size())),
               "{}: batch_dims {} must be below the ranks of data ({}) and indices ({})", n.label(), b, ds.size(), is.size());
    const int64_t q = is.back();
    STOF_CHECK(q >= 1 && b + q <= static_cast<int64_t>(ds.size()), "{}: index depth {} with batch_dims {} exceeds data rank {}",
               n.label(), q, b, ds.size());
    for (int64_t d = 0; d < b; ++d)
        STOF_CHECK(ds[static_cast<size_t>(d)] == is[static_cast<size_t>(d)], "{}: batch dimension {} differs ({} vs {})",
                   n.label(), d, ds[static_cast<size_t>(d)], is[static_cast<size_t>(d)]);
    Shape out(is.begin(), is.end() - 1);
    out.insert(out.end(), ds.begin() + b + q, ds.end());
    return {{in[0].dtype, out}};
}

std::vector<Tensor> eval_GatherND(const Node& n, const Inputs& in, const Types& out) {
    const Tensor& x = *in[0];
    const Tensor& idx = *in[1];
    const auto b = static_cast<size_t>(n.attrs.i("batch_dims", 0));
    const auto q = static_cast<size_t>(idx.shape.back());
    const std::vector<int64_t> xst = strides_of(x.shape);
    int64_t inner = 1, per_batch = 1;
    for (size_t d = b + q; d < x.shape.size(); ++d) inner *= x.shape[d];
    for (size_t d = b; d + 1 < idx.shape.size(); ++d) per_batch *= idx.shape[d];
    const size_t es = dtype_size(x.dtype);
    Tensor r(out[0].dtype, out[0].shape);
    const int64_t tuples = idx.numel() / static_cast<int64_t>(q);
    for (int64_t t = 0; t < tuples; ++t) {
        const int64_t batch = t / per_batch;
        int64_t at = 0, rest = batch;
        for (size_t d = b; d-- > 0;) {
            at += rest % x.shape[d] * xst[d];
            rest /= x.shape[d];
        }
        for (size_t k = 0; k < q; ++k)
            at += checked_index(n, idx.get_i64(t * static_cast<int64_t>(q) + static_cast<int64_t>(k)), x.shape[b + k]) *
                  xst[b + k];
        std::memcpy(r.bytes.data() + static_cast<size_t>(t * inner) * es, x.bytes.data() + static_cast<size_t>(at) * es,
                    static_cast<size_t>(inner) * es);
    }
    return {r};
}

std::vector<TensorType> infer_ScatterND(const Node& n, const std::vector<InferInput>& in) {
    STOF_CHECK(!in[1].shape.empty(), "{}: indices must have rank >= 1", n.label());
    const int64_t q = in[1].shape.back();
    STOF_CHECK(q <= static_cast<int64_t>(in[0].shape.size()), "{}: index depth {} exceeds data rank", n.label(), q);
    Shape expect(in[1].shape.begin(), in[1].shape.end() - 1);
    expect.insert(expect.end(), in[0].shape.begin() + q, in[0].shape.end());
    STOF_CHECK(in[2].shape == expect, "{}: updates shape {} should be {}", n.label(), shape_str(in[2].shape), shape_str(expect));
    return {{in[0].dtype, in[0].shape}};
}

std::vector<Tensor> eval_ScatterND(const Node& n, const Inputs& in, const Types&) {
    Tensor r = *in[0];
    const Tensor& idx = *in[1];
    const Tensor& upd = *in[2];
    const std::string red = n.attrs.s("reduction", "none");
    const auto q = static_cast<size_t>(idx.shape.back());
    const std::vector<int64_t> st = strides_of(r.shape);
    int64_t slice = 1;
    for (size_t d = q; d < r.shape.size(); ++d) slice *= r.shape[d];
    const int64_t count = idx.numel() / static_cast<int64_t>(q ? q : 1);
    for (int64_t k = 0; k < count; ++k) {
        int64_t at = 0;
        for (size_t d = 0; d < q; ++d)
            at += checked_index(n, idx.get_i64(k * static_cast<int64_t>(q) + static_cast<int64_t>(d)), r.shape[d]) * st[d];
        for (int64_t e = 0; e < slice; ++e) {
            const double u = upd.get_f64(k * slice + e), v = r.get_f64(at + e);
            double res = u;
            if (red == "add") res = v + u;
            else if (red == "mul") res = v * u;
            else if (red == "max") res = std::max(v, u);
            else if (red == "min") res = std::min(v, u);
            else STOF_CHECK(red == "none", "{}: reduction '{}' is not supported", n.label(), red);
            if (red == "none" && !is_float(r.dtype)) r.set_i64(at + e, upd.get_i64(k * slice + e));
            else r.set_f64(at + e, res);
        }
    }
    return {r};
}

// --- padding and triangles -----------------------------------------------------

namespace {
// Begin/end padding per dim from the pads (and optional axes) inputs.
std::vector<int64_t> full_pads(const Node& n, size_t rank, const std::vector<int64_t>& pads, const std::vector<int64_t>* axes) {
    std::vector<int64_t> ax;
    if (axes) ax = *axes;
    else
        for (size_t d = 0; d < rank; ++d) ax.push_back(static_cast<int64_t>(d));
    STOF_CHECK(pads.size() == 2 * ax.size(), "{}: {} pads for {} axes", n.label(), pads.size(), ax.size());
    std::vector<int64_t> full(2 * rank, 0);
    for (size_t i = 0; i < ax.size(); ++i) {
        const auto a = static_cast<size_t>(normalize_axis(ax[i], static_cast<int64_t>(rank), n));
        full[a] = pads[i];
        full[a + rank] = pads[i + ax.size()];
    }
    return full;
}
}  // namespace

std::vector<TensorType> infer_Pad(const Node& n, const std::vector<InferInput>& in) {
    const std::vector<int64_t> pads = known_ints(in, 1, n, "pads");
    std::vector<int64_t> axes;
    const bool has_axes = in.size() > 3 && in[3].present;
    if (has_axes) axes = known_ints(in, 3, n, "axes");
    const size_t rank = in[0].shape.size();
    const std::vector<int64_t> full = full_pads(n, rank, pads, has_axes ? &axes : nullptr);
    Shape out = in[0].shape;
    for (size_t d = 0; d < rank; ++d) {
        out[d] += full[d] + full[d + rank];
        STOF_CHECK(out[d] >= 0, "{}: padding makes dimension {} negative", n.label(), d);
    }
    return {{in[0].dtype, out}};
}

std::vector<Tensor> eval_Pad(const Node& n, const Inputs& in, const Types& out) {
    const Tensor& x = *in[0];
    const size_t rank = x.shape.size();
    std::vector<int64_t> pads(static_cast<size_t>(in[1]->numel())), axes;
    for (size_t k = 0; k < pads.size(); ++k) pads[k] = in[1]->get_i64(static_cast<int64_t>(k));
    if (in.size() > 3 && in[3])
        for (int64_t k = 0; k < in[3]->numel(); ++k) axes.push_back(in[3]->get_i64(k));
    const std::vector<int64_t> full = full_pads(n, rank, pads, in.size() > 3 && in[3] ? &axes : nullptr);
    const std::string mode = n.attrs.s("mode", "constant");
    STOF_CHECK(mode == "constant" || mode == "edge" || mode == "reflect" || mode == "wrap", "{}: mode '{}' is not supported",
               n.label(), mode);
    const double cval = in.size() > 2 && in[2] ? in[2]->get_f64(0) : 0.0;
    Tensor r(out[0].dtype, out[0].shape);
    const std::vector<int64_t> st = strides_of(x.shape);
    const size_t es = dtype_size(x.dtype);
    std::vector<int64_t> counter(rank, 0);
    for (int64_t o = 0; o < r.numel(); ++o) {
        int64_t at = 0;
        bool inside = true;
        for (size_t d = 0; d < rank; ++d) {
            int64_t i = counter[d] - full[d];
            const int64_t dim = x.shape[d];
            if (i < 0 || i >= dim) {
                if (mode == "constant" || dim == 0) {
                    inside = false;
                    break;
                }
                if (mode == "edge") i = i < 0 ? 0 : dim - 1;
                else if (mode == "wrap") i = ((i % dim) + dim) % dim;
                else {  // reflect
                    const int64_t period = 2 * (dim - 1);
                    i = period == 0 ? 0 : ((i % period) + period) % period;
                    if (i >= dim) i = period - i;
                }
            }
            at += i * st[d];
        }
        if (inside)
            std::memcpy(r.bytes.data() + static_cast<size_t>(o) * es, x.bytes.data() + static_cast<size_t>(at) * es, es);
        else r.set_f64(o, cval);
        for (size_t d = rank; d-- > 0;) {
            if (++counter[d] < r.shape[d]) break;
            counter[d] = 0;
        }
    }
    return {r};
}

std::vector<Tensor> eval_Trilu(const Node& n, const Inputs& in, const Types& out) {
    const Tensor& x = *in[0];
    STOF_CHECK(x.shape.size() >= 2, "{}: input must have rank >= 2", n.label());
    const int64_t k = in.size() > 1 && in[1] ? in[1]->get_i64(0) : 0;
    const bool upper = n.attrs.i("upper", 1) != 0;
    const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
    Tensor r(out[0].dtype, out[0].shape);
    const size_t es = dtype_size(x.dtype);
    for (int64_t o = 0; o < x.numel(); ++o) {
        const int64_t j = o % cols, i = (o / cols) % rows;
        if (upper ? j - i >= k : j - i <= k)
            std::memcpy(r.bytes.data() + static_cast<size_t>(o) * es, x.bytes.data() + static_cast<size_t>(o) * es, es);
    }
    return {r};
}

}  // namespace stof::ir::ops
