#include "ops/op_util.hpp"

namespace stof::ir::ops {

int64_t normalize_axis(int64_t axis, int64_t rank, const Node& n) {
    STOF_CHECK(axis >= -rank && axis < rank, "{}: axis {} is out of range for rank {}", n.label(), axis, rank);
    return axis < 0 ? axis + rank : axis;
}

Shape broadcast_shapes(const std::vector<const Shape*>& shapes, const Node& n) {
    size_t rank = 0;
    for (const Shape* s : shapes) rank = std::max(rank, s->size());
    Shape out(rank, 1);
    for (const Shape* s : shapes) {
        const size_t off = rank - s->size();
        for (size_t d = 0; d < s->size(); ++d) {
            const int64_t a = out[off + d], b = (*s)[d];
            if (a == b || b == 1) continue;
            STOF_CHECK(a == 1, "{}: shapes cannot be broadcast together ({})", n.label(), [&] {
                std::string all;
                for (const Shape* t : shapes) all += (all.empty() ? "" : " and ") + shape_str(*t);
                return all;
            }());
            out[off + d] = b;
        }
    }
    return out;
}

std::vector<int64_t> strides_of(const Shape& shape) {
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
    return s;
}

std::vector<int64_t> known_ints(const std::vector<InferInput>& in, size_t i, const Node& n, const char* what) {
    STOF_CHECK(i < in.size() && in[i].present, "{}: the {} input is missing", n.label(), what);
    STOF_CHECK(in[i].data != nullptr,
               "{}: the {} (input {}) is computed at run time; stofc needs it at compile time. Bind every symbolic "
               "input dimension with --shape so that shape computations fold to constants",
               n.label(), what, i);
    const Tensor& t = *in[i].data;
    STOF_CHECK(is_integer(t.dtype), "{}: the {} must be an integer tensor, got {}", n.label(), what, t.describe());
    std::vector<int64_t> v(static_cast<size_t>(t.numel()));
    for (size_t k = 0; k < v.size(); ++k) v[k] = t.get_i64(static_cast<int64_t>(k));
    return v;
}

Broadcast::Broadcast(const Shape& out, const std::vector<const Shape*>& ins) : out_(out) {
    for (const Shape* s : ins) {
        std::vector<int64_t> st(out.size(), 0);
        const std::vector<int64_t> own = strides_of(*s);
        const size_t off = out.size() - s->size();
        for (size_t d = 0; d < s->size(); ++d) st[off + d] = (*s)[d] == 1 ? 0 : own[d];
        strides_.push_back(std::move(st));
    }
}

std::vector<float> to_f32(const Tensor& t) {
    std::vector<float> v(static_cast<size_t>(t.numel()));
    if (t.dtype == DType::f32) {
        std::copy(t.data<float>(), t.data<float>() + v.size(), v.begin());
    } else {
        for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(t.get_f64(static_cast<int64_t>(i)));
    }
    return v;
}

Tensor from_f32(const std::vector<float>& v, DType dt, const Shape& shape) {
    Tensor t(dt, shape);
    if (dt == DType::f32) {
        std::copy(v.begin(), v.end(), t.data<float>());
    } else {
        for (size_t i = 0; i < v.size(); ++i) t.set_f64(static_cast<int64_t>(i), v[i]);
    }
    return t;
}

}  // namespace stof::ir::ops
