// Shape computations: Shape, Size, ConstantOfShape, Range. Their outputs
// depend only on input shapes or compile-time constants, so they fold away.
#include "ops/op_functions.hpp"
#include "ops/op_util.hpp"

#include <cmath>

namespace stof::ir::ops {

namespace {
using Inputs = std::vector<const Tensor*>;
using Types = std::vector<TensorType>;

std::pair<int64_t, int64_t> shape_range(const Node& n, int64_t rank) {
    int64_t start = n.attrs.i("start", 0), end = n.attrs.i("end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::min(std::max<int64_t>(start, 0), rank);
    end = std::min(std::max<int64_t>(end, 0), rank);
    return {start, std::max(start, end)};
}
}  // namespace

std::vector<TensorType> infer_Shape(const Node& n, const std::vector<InferInput>& in) {
    const auto [s, e] = shape_range(n, static_cast<int64_t>(in[0].shape.size()));
    return {{DType::i64, {e - s}}};
}

std::vector<Tensor> eval_Shape(const Node& n, const Inputs& in, const Types& out) {
    const auto [s, e] = shape_range(n, static_cast<int64_t>(in[0]->shape.size()));
    Tensor r(out[0].dtype, out[0].shape);
    for (int64_t d = s; d < e; ++d) r.set_i64(d - s, in[0]->shape[static_cast<size_t>(d)]);
    return {r};
}

std::vector<TensorType> infer_Size(const Node&, const std::vector<InferInput>&) { return {{DType::i64, {}}}; }

std::vector<Tensor> eval_Size(const Node&, const Inputs& in, const Types& out) {
    Tensor r(out[0].dtype, out[0].shape);
    r.set_i64(0, in[0]->numel());
    return {r};
}

std::vector<TensorType> infer_ConstantOfShape(const Node& n, const std::vector<InferInput>& in) {
    const Shape shape = known_ints(in, 0, n, "target shape");
    checked_numel(shape, n.label() + ": target shape");
    const Tensor* value = n.attrs.tensor("value");
    if (value) STOF_CHECK(value->numel() == 1, "{}: value must hold one element", n.label());
    return {{value ? value->dtype : DType::f32, shape}};
}

std::vector<Tensor> eval_ConstantOfShape(const Node& n, const Inputs&, const Types& out) {
    Tensor r(out[0].dtype, out[0].shape);
    const Tensor* value = n.attrs.tensor("value");
    if (value) {
        const size_t es = dtype_size(r.dtype);
        for (int64_t i = 0; i < r.numel(); ++i)
            std::memcpy(r.bytes.data() + static_cast<size_t>(i) * es, value->bytes.data(), es);
    }
    return {r};
}

std::vector<TensorType> infer_Range(const Node& n, const std::vector<InferInput>& in) {
    for (size_t k = 0; k < 3; ++k) {
        STOF_CHECK(in[k].data != nullptr,
                   "{}: start, limit and delta must be known at compile time; bind symbolic dimensions with --shape",
                   n.label());
        STOF_CHECK(in[k].data->numel() == 1, "{}: start, limit and delta must be scalars", n.label());
    }
    const double start = in[0].data->get_f64(0), limit = in[1].data->get_f64(0), delta = in[2].data->get_f64(0);
    STOF_CHECK(delta != 0, "{}: delta is 0", n.label());
    const double count = std::max(0.0, std::ceil((limit - start) / delta));
    STOF_CHECK(std::isfinite(count) && count <= static_cast<double>(kMaxElements),
               "{}: start {}, limit {}, delta {} make {} elements, more than stofc handles (2^40)", n.label(), start, limit,
               delta, count);
    const auto len = static_cast<int64_t>(count);
    return {{in[0].dtype, {len}}};
}

std::vector<Tensor> eval_Range(const Node&, const Inputs& in, const Types& out) {
    Tensor r(out[0].dtype, out[0].shape);
    if (is_float(r.dtype)) {
        const double start = in[0]->get_f64(0), delta = in[2]->get_f64(0);
        for (int64_t i = 0; i < r.numel(); ++i) r.set_f64(i, start + static_cast<double>(i) * delta);
    } else {
        const int64_t start = in[0]->get_i64(0), delta = in[2]->get_i64(0);
        for (int64_t i = 0; i < r.numel(); ++i) r.set_i64(i, start + i * delta);
    }
    return {r};
}

}  // namespace stof::ir::ops
