#include "ir/strided_view.hpp"

#include <algorithm>
#include <deque>

namespace stof::ir {

StridedView contiguous_view(const Shape& s) {
    StridedView v;
    v.dims.resize(s.size());
    int64_t stride = 1;
    for (size_t i = s.size(); i-- > 0;) {
        if (s[i] != 1) v.dims[i] = {{s[i], stride}};
        stride *= s[i];
    }
    return v;
}

void normalize(StridedView& v) {
    for (auto& d : v.dims) {
        std::vector<StridedDim> r;
        for (const StridedDim& s : d) {
            if (!r.empty() && r.back().stride == s.stride * s.size) {
                r.back() = {r.back().size * s.size, s.stride};
            } else {
                r.push_back(s);
            }
        }
        d = std::move(r);
    }
}

std::optional<StridedView> reshape_view(const StridedView& v, const Shape& shape) {
    std::deque<StridedDim> subs;
    for (const auto& d : v.dims) subs.insert(subs.end(), d.begin(), d.end());
    StridedView r;
    r.offset = v.offset;
    r.dims.resize(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) {
        int64_t left = shape[i];
        while (left > 1) {
            if (subs.empty()) return std::nullopt;
            StridedDim& s = subs.front();
            if (left % s.size == 0) {
                r.dims[i].push_back(s);
                left /= s.size;
                subs.pop_front();
            } else if (s.size % left == 0) {
                r.dims[i].push_back({left, s.stride * (s.size / left)});
                s.size /= left;
                left = 1;
            } else {
                return std::nullopt;
            }
        }
    }
    if (!subs.empty()) return std::nullopt;
    return r;
}

std::optional<StridedView> narrow(StridedView v, size_t axis, int64_t start, int64_t size) {
    if (axis >= v.dims.size()) return std::nullopt;
    auto& d = v.dims[axis];
    if (d.size() != 1 || start < 0 || start + size > d[0].size) return std::nullopt;
    v.offset += start * d[0].stride;
    d = size == 1 ? std::vector<StridedDim>{} : std::vector<StridedDim>{{size, d[0].stride}};
    return v;
}

bool is_layout_op(Op op) {
    return op == Op::Reshape || op == Op::Unsqueeze || op == Op::Squeeze || op == Op::Flatten || op == Op::Identity ||
           op == Op::Transpose || op == Op::Expand || op == Op::Split || op == Op::Slice || op == Op::Gather;
}

std::optional<StridedView> apply_layout(const Graph& g, const Node& n, size_t output, const StridedView& v) {
    const Shape& in = g.value(n.inputs[0]).shape;
    const Shape& out = g.value(n.outputs[output]).shape;
    auto axis_of = [&](int64_t a) { return static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(in.size()) : a); };
    std::optional<StridedView> r;
    switch (n.op) {
        case Op::Reshape:
        case Op::Unsqueeze:
        case Op::Squeeze:
        case Op::Flatten:
        case Op::Identity: r = reshape_view(v, out); break;
        case Op::Transpose: {
            const size_t rank = v.dims.size();
            std::vector<int64_t> perm(rank);
            for (size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(rank - 1 - d);
            perm = n.attrs.ints("perm", perm);
            if (perm.size() != rank) return std::nullopt;
            StridedView t;
            t.offset = v.offset;
            for (int64_t p : perm) {
                if (p < 0) p += static_cast<int64_t>(rank);
                if (p < 0 || p >= static_cast<int64_t>(rank)) return std::nullopt;
                t.dims.push_back(v.dims[static_cast<size_t>(p)]);
            }
            r = t;
            break;
        }
        case Op::Expand: {
            if (out.size() < v.dims.size()) return std::nullopt;
            StridedView t;
            t.offset = v.offset;
            t.dims.resize(out.size() - v.dims.size());
            t.dims.insert(t.dims.end(), v.dims.begin(), v.dims.end());
            for (size_t d = 0; d < out.size(); ++d)
                if (t.dims[d].empty() && out[d] > 1) t.dims[d] = {{out[d], 0}};
            r = t;
            break;
        }
        case Op::Split: {
            const size_t axis = axis_of(n.attrs.i("axis", 0));
            if (axis >= in.size()) return std::nullopt;
            int64_t start = 0;
            for (size_t k = 0; k < output; ++k) start += g.value(n.outputs[k]).shape[axis];
            r = narrow(v, axis, start, out[axis]);
            break;
        }
        case Op::Slice: {
            // Constant starts / ends / axes, steps of 1.
            const Tensor* starts = g.value(n.inputs[1]).data.get();
            const Tensor* axes = n.inputs.size() > 3 && n.inputs[3] != kNoValue ? g.value(n.inputs[3]).data.get() : nullptr;
            const Tensor* steps = n.inputs.size() > 4 && n.inputs[4] != kNoValue ? g.value(n.inputs[4]).data.get() : nullptr;
            if (!starts) return std::nullopt;
            r = v;
            for (int64_t k = 0; k < starts->numel() && r; ++k) {
                if (steps && steps->get_i64(k) != 1) return std::nullopt;
                const size_t axis = axis_of(axes ? axes->get_i64(k) : k);
                if (axis >= in.size()) return std::nullopt;
                int64_t start = starts->get_i64(k);
                if (start < 0) start += in[axis];
                start = std::clamp<int64_t>(start, 0, in[axis]);
                r = narrow(*r, axis, start, out[axis]);
            }
            break;
        }
        case Op::Gather: {
            // A scalar constant index: the dim goes.
            const Tensor* idx = g.value(n.inputs[1]).data.get();
            const size_t axis = axis_of(n.attrs.i("axis", 0));
            if (!idx || !idx->shape.empty() || axis >= in.size()) return std::nullopt;
            int64_t at = idx->get_i64(0);
            if (at < 0) at += in[axis];
            r = narrow(v, axis, at, 1);
            if (r) r->dims.erase(r->dims.begin() + static_cast<std::ptrdiff_t>(axis));
            break;
        }
        default: return std::nullopt;
    }
    if (r) normalize(*r);
    return r;
}

}  // namespace stof::ir
