// Elementwise ops: shape inference and reference evaluation.
// Float dtypes compute in double and round to the output dtype; integer and
// bool dtypes compute exactly in int64.
#include "ops/op_functions.hpp"
#include "ops/op_util.hpp"

#include <cmath>
#include <limits>

namespace stof::ir::ops {

namespace {

using Inputs = std::vector<const Tensor*>;
using Types = std::vector<TensorType>;

template <class FF, class FI> Tensor map_unary(const Tensor& x, const TensorType& out, FF ff, FI fi) {
    Tensor r(out.dtype, out.shape);
    const int64_t n = x.numel();
    if (is_float(x.dtype)) {
        for (int64_t i = 0; i < n; ++i) r.set_f64(i, ff(x.get_f64(i)));
    } else {
        for (int64_t i = 0; i < n; ++i) r.set_i64(i, fi(x.get_i64(i)));
    }
    return r;
}

template <class FF> Tensor map_float(const Node& n, const Tensor& x, const TensorType& out, FF ff) {
    STOF_CHECK(is_float(x.dtype), "{}: needs a float input, got {}", n.label(), x.describe());
    return map_unary(x, out, ff, [](int64_t v) { return v; });
}

// Applies ff (float inputs) or fi (integer/bool inputs) across broadcast inputs.
template <class FF, class FI> Tensor map_nary(const Inputs& in, const TensorType& out, FF ff, FI fi) {
    std::vector<const Shape*> shapes;
    for (const Tensor* t : in) shapes.push_back(&t->shape);
    Tensor r(out.dtype, out.shape);
    const bool flt = is_float(in[0]->dtype);
    Broadcast(out.shape, shapes).run([&](int64_t o, const int64_t* idx) {
        if (flt) {
            double v[3];
            for (size_t k = 0; k < in.size() && k < 3; ++k) v[k] = in[k]->get_f64(idx[k]);
            const double res = ff(v, idx);
            if (is_float(out.dtype)) r.set_f64(o, res);
            else r.set_i64(o, static_cast<int64_t>(res));
        } else {
            int64_t v[3];
            for (size_t k = 0; k < in.size() && k < 3; ++k) v[k] = in[k]->get_i64(idx[k]);
            r.set_i64(o, fi(v, idx));
        }
    });
    return r;
}

template <class FF, class FI> std::vector<Tensor> binary(const Inputs& in, const Types& out, FF ff, FI fi) {
    return {map_nary(
        in, out[0], [&](const double* v, const int64_t*) { return ff(v[0], v[1]); },
        [&](const int64_t* v, const int64_t*) { return fi(v[0], v[1]); })};
}

void check_same_dtypes(const Node& n, const std::vector<InferInput>& in) {
    for (const InferInput& x : in)
        if (x.present)
            STOF_CHECK(x.dtype == in[0].dtype, "{}: inputs have different element types ({} and {})", n.label(),
                       dtype_name(in[0].dtype), dtype_name(x.dtype));
}

std::vector<const Shape*> present_shapes(const std::vector<InferInput>& in) {
    std::vector<const Shape*> s;
    for (const InferInput& x : in)
        if (x.present) s.push_back(&x.shape);
    return s;
}

}  // namespace

std::vector<TensorType> infer_unary(const Node&, const std::vector<InferInput>& in) { return {{in[0].dtype, in[0].shape}}; }

std::vector<TensorType> infer_unary_bool(const Node&, const std::vector<InferInput>& in) {
    return {{DType::boolean, in[0].shape}};
}

std::vector<TensorType> infer_broadcast(const Node& n, const std::vector<InferInput>& in) {
    if (n.op != Op::Pow) check_same_dtypes(n, in);
    return {{in[0].dtype, broadcast_shapes(present_shapes(in), n)}};
}

std::vector<TensorType> infer_broadcast_bool(const Node& n, const std::vector<InferInput>& in) {
    check_same_dtypes(n, in);
    if (n.op == Op::And || n.op == Op::Or || n.op == Op::Xor)
        STOF_CHECK(in[0].dtype == DType::boolean, "{}: needs bool inputs, got {}", n.label(), dtype_name(in[0].dtype));
    return {{DType::boolean, broadcast_shapes(present_shapes(in), n)}};
}

std::vector<TensorType> infer_Where(const Node& n, const std::vector<InferInput>& in) {
    STOF_CHECK(in[0].dtype == DType::boolean, "{}: the condition must be bool, got {}", n.label(), dtype_name(in[0].dtype));
    STOF_CHECK(in[1].dtype == in[2].dtype, "{}: the two branches have different element types ({} and {})", n.label(),
               dtype_name(in[1].dtype), dtype_name(in[2].dtype));
    return {{in[1].dtype, broadcast_shapes(present_shapes(in), n)}};
}

std::vector<TensorType> infer_Cast(const Node& n, const std::vector<InferInput>& in) {
    return {{static_cast<DType>(n.attrs.i("to", 0)), in[0].shape}};
}

std::vector<TensorType> infer_CastLike(const Node&, const std::vector<InferInput>& in) { return {{in[1].dtype, in[0].shape}}; }

// --- unary ----------------------------------------------------------------

std::vector<Tensor> eval_Identity(const Node&, const Inputs& in, const Types&) { return {*in[0]}; }

std::vector<Tensor> eval_Abs(const Node&, const Inputs& in, const Types& out) {
    return {map_unary(
        *in[0], out[0], [](double x) { return std::fabs(x); }, [](int64_t x) { return x < 0 ? -x : x; })};
}

std::vector<Tensor> eval_Neg(const Node&, const Inputs& in, const Types& out) {
    return {map_unary(
        *in[0], out[0], [](double x) { return -x; }, [](int64_t x) { return -x; })};
}

std::vector<Tensor> eval_Sign(const Node&, const Inputs& in, const Types& out) {
    return {map_unary(
        *in[0], out[0], [](double x) { return std::isnan(x) ? x : static_cast<double>((x > 0) - (x < 0)); },
        [](int64_t x) -> int64_t { return (x > 0) - (x < 0); })};
}

std::vector<Tensor> eval_Relu(const Node&, const Inputs& in, const Types& out) {
    return {map_unary(
        *in[0], out[0], [](double x) { return x < 0 ? 0.0 : x; }, [](int64_t x) { return x < 0 ? int64_t{0} : x; })};
}

#define STOF_FLOAT_UNARY(NAME, EXPR)                                                     \
    std::vector<Tensor> eval_##NAME(const Node& n, const Inputs& in, const Types& out) { \
        return {map_float(n, *in[0], out[0], [](double x) { return EXPR; })};            \
    }
STOF_FLOAT_UNARY(Sqrt, std::sqrt(x))
STOF_FLOAT_UNARY(Reciprocal, 1.0 / x)
STOF_FLOAT_UNARY(Log, std::log(x))
STOF_FLOAT_UNARY(Exp, std::exp(x))
STOF_FLOAT_UNARY(Erf, std::erf(x))
STOF_FLOAT_UNARY(Tanh, std::tanh(x))
STOF_FLOAT_UNARY(Sigmoid, x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)))
STOF_FLOAT_UNARY(Sin, std::sin(x))
STOF_FLOAT_UNARY(Cos, std::cos(x))
STOF_FLOAT_UNARY(Floor, std::floor(x))
STOF_FLOAT_UNARY(Ceil, std::ceil(x))
STOF_FLOAT_UNARY(Softplus, x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)))
STOF_FLOAT_UNARY(Softsign, x / (1.0 + std::fabs(x)))
#undef STOF_FLOAT_UNARY

std::vector<Tensor> eval_Gelu(const Node& n, const Inputs& in, const Types& out) {
    const std::string approx = n.attrs.s("approximate", "none");
    STOF_CHECK(approx == "none" || approx == "tanh", "{}: approximate='{}' is not 'none' or 'tanh'", n.label(), approx);
    if (approx == "tanh") {
        return {map_float(n, *in[0], out[0], [](double x) {
            return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
        })};
    }
    return {map_float(n, *in[0], out[0], [](double x) { return 0.5 * x * (1.0 + std::erf(x * 0.7071067811865476)); })};
}

std::vector<Tensor> eval_IsNaN(const Node& n, const Inputs& in, const Types& out) {
    return {map_float(n, *in[0], out[0], [](double x) { return std::isnan(x) ? 1.0 : 0.0; })};
}

std::vector<Tensor> eval_IsInf(const Node& n, const Inputs& in, const Types& out) {
    const bool neg = n.attrs.i("detect_negative", 1) != 0, pos = n.attrs.i("detect_positive", 1) != 0;
    return {map_float(n, *in[0], out[0],
                      [=](double x) { return std::isinf(x) && ((x > 0 && pos) || (x < 0 && neg)) ? 1.0 : 0.0; })};
}

std::vector<Tensor> eval_Not(const Node& n, const Inputs& in, const Types& out) {
    STOF_CHECK(in[0]->dtype == DType::boolean, "{}: needs a bool input", n.label());
    return {map_unary(
        *in[0], out[0], [](double x) { return x == 0; }, [](int64_t x) -> int64_t { return x == 0; })};
}

std::vector<Tensor> eval_Cast(const Node&, const Inputs& in, const Types& out) { return {cast(*in[0], out[0].dtype)}; }
std::vector<Tensor> eval_CastLike(const Node&, const Inputs& in, const Types& out) { return {cast(*in[0], out[0].dtype)}; }

std::vector<Tensor> eval_Clip(const Node& n, const Inputs& in, const Types& out) {
    for (size_t k = 1; k < in.size(); ++k)
        if (in[k]) STOF_CHECK(in[k]->numel() == 1, "{}: min and max must be scalars", n.label());
    if (is_float(in[0]->dtype)) {
        const double lo = in.size() > 1 && in[1] ? in[1]->get_f64(0) : -std::numeric_limits<double>::infinity();
        const double hi = in.size() > 2 && in[2] ? in[2]->get_f64(0) : std::numeric_limits<double>::infinity();
        return {map_float(n, *in[0], out[0], [=](double x) { return std::isnan(x) ? x : std::min(std::max(x, lo), hi); })};
    }
    const int64_t lo = in.size() > 1 && in[1] ? in[1]->get_i64(0) : std::numeric_limits<int64_t>::min();
    const int64_t hi = in.size() > 2 && in[2] ? in[2]->get_i64(0) : std::numeric_limits<int64_t>::max();
    return {map_unary(
        *in[0], out[0], [](double x) { return x; }, [=](int64_t x) { return std::min(std::max(x, lo), hi); })};
}

// --- binary -----------------------------------------------------------------

std::vector<Tensor> eval_Add(const Node&, const Inputs& in, const Types& out) {
    return binary(
        in, out, [](double a, double b) { return a + b; }, [](int64_t a, int64_t b) { return a + b; });
}

std::vector<Tensor> eval_Sub(const Node&, const Inputs& in, const Types& out) {
    return binary(
        in, out, [](double a, double b) { return a - b; }, [](int64_t a, int64_t b) { return a - b; });
}

std::vector<Tensor> eval_Mul(const Node&, const Inputs& in, const Types& out) {
    return binary(
        in, out, [](double a, double b) { return a * b; }, [](int64_t a, int64_t b) { return a * b; });
}

std::vector<Tensor> eval_Div(const Node& n, const Inputs& in, const Types& out) {
    return binary(
        in, out, [](double a, double b) { return a / b; },
        [&](int64_t a, int64_t b) {
            STOF_CHECK(b != 0, "{}: integer division by zero", n.label());
            return a / b;
        });
}

std::vector<Tensor> eval_Pow(const Node& n, const Inputs& in, const Types& out) {
    STOF_CHECK(is_float(in[0]->dtype) || is_integer(in[0]->dtype), "{}: unsupported base type {}", n.label(), in[0]->describe());
    if (is_float(in[0]->dtype) || is_float(in[1]->dtype)) {
        std::vector<const Shape*> shapes{&in[0]->shape, &in[1]->shape};
        Tensor r(out[0].dtype, out[0].shape);
        Broadcast(out[0].shape, shapes).run([&](int64_t o, const int64_t* idx) {
            r.set_f64(o, std::pow(in[0]->get_f64(idx[0]), in[1]->get_f64(idx[1])));
        });
        return {r};
    }
    return binary(
        in, out, [](double a, double b) { return std::pow(a, b); },
        [](int64_t a, int64_t b) {
            int64_t r = 1;
            for (int64_t k = 0; k < b; ++k) r *= a;
            return b < 0 ? int64_t{0} : r;
        });
}

std::vector<Tensor> eval_Mod(const Node& n, const Inputs& in, const Types& out) {
    const bool fmod = n.attrs.i("fmod", 0) != 0;
    return binary(
        in, out,
        [=](double a, double b) {
            const double r = std::fmod(a, b);
            return (!fmod && r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
        },
        [&](int64_t a, int64_t b) {
            STOF_CHECK(b != 0, "{}: integer modulo by zero", n.label());
            const int64_t r = a % b;
            return (!fmod && r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
        });
}

namespace {
template <bool IsMax> std::vector<Tensor> min_max(const Inputs& in, const Types& out) {
    std::vector<const Shape*> shapes;
    for (const Tensor* t : in) shapes.push_back(&t->shape);
    Tensor r(out[0].dtype, out[0].shape);
    const bool flt = is_float(in[0]->dtype);
    Broadcast(out[0].shape, shapes).run([&](int64_t o, const int64_t* idx) {
        if (flt) {
            double best = in[0]->get_f64(idx[0]);
            for (size_t k = 1; k < in.size(); ++k) {
                const double v = in[k]->get_f64(idx[k]);
                if (std::isnan(v) || (IsMax ? v > best : v < best)) best = v;
            }
            r.set_f64(o, best);
        } else {
            int64_t best = in[0]->get_i64(idx[0]);
            for (size_t k = 1; k < in.size(); ++k) {
                const int64_t v = in[k]->get_i64(idx[k]);
                best = IsMax ? std::max(best, v) : std::min(best, v);
            }
            r.set_i64(o, best);
        }
    });
    return {r};
}
}  // namespace

std::vector<Tensor> eval_Min(const Node&, const Inputs& in, const Types& out) { return min_max<false>(in, out); }
std::vector<Tensor> eval_Max(const Node&, const Inputs& in, const Types& out) { return min_max<true>(in, out); }

#define STOF_COMPARE(NAME, OP)                                                         \
    std::vector<Tensor> eval_##NAME(const Node&, const Inputs& in, const Types& out) { \
        return binary(                                                                 \
            in, out, [](double a, double b) -> double { return a OP b; },              \
            [](int64_t a, int64_t b) -> int64_t { return a OP b; });                   \
    }
STOF_COMPARE(Equal, ==)
STOF_COMPARE(Less, <)
STOF_COMPARE(LessOrEqual, <=)
STOF_COMPARE(Greater, >)
STOF_COMPARE(GreaterOrEqual, >=)
#undef STOF_COMPARE

std::vector<Tensor> eval_And(const Node&, const Inputs& in, const Types& out) {
    return binary(
        in, out, [](double a, double b) { return a != 0 && b != 0; }, [](int64_t a, int64_t b) -> int64_t { return a && b; });
}

std::vector<Tensor> eval_Or(const Node&, const Inputs& in, const Types& out) {
    return binary(
        in, out, [](double a, double b) { return a != 0 || b != 0; }, [](int64_t a, int64_t b) -> int64_t { return a || b; });
}

std::vector<Tensor> eval_Xor(const Node&, const Inputs& in, const Types& out) {
    return binary(
        in, out, [](double a, double b) { return (a != 0) != (b != 0); },
        [](int64_t a, int64_t b) -> int64_t { return (a != 0) != (b != 0); });
}

std::vector<Tensor> eval_Where(const Node&, const Inputs& in, const Types& out) {
    Tensor r(out[0].dtype, out[0].shape);
    const size_t es = dtype_size(out[0].dtype);
    Broadcast(out[0].shape, {&in[0]->shape, &in[1]->shape, &in[2]->shape}).run([&](int64_t o, const int64_t* idx) {
        const Tensor* src = in[0]->data<uint8_t>()[idx[0]] ? in[1] : in[2];
        const int64_t si = in[0]->data<uint8_t>()[idx[0]] ? idx[1] : idx[2];
        std::memcpy(r.bytes.data() + static_cast<size_t>(o) * es, src->bytes.data() + static_cast<size_t>(si) * es, es);
    });
    return {r};
}

}  // namespace stof::ir::ops

namespace stof::ir::ops {

// BatchNormalization (inference): x [N, C, ...], scale/bias/mean/var [C].
std::vector<TensorType> infer_BatchNormalization(const Node& n, const std::vector<InferInput>& in) {
    STOF_CHECK(in[0].shape.size() >= 2, "{}: input must have rank >= 2", n.label());
    for (size_t k = 1; k < 5; ++k)
        STOF_CHECK(in[k].shape == Shape{in[0].shape[1]}, "{}: parameter {} must be [{}], got {}", n.label(), k, in[0].shape[1],
                   shape_str(in[k].shape));
    return {{in[0].dtype, in[0].shape}};
}

std::vector<Tensor> eval_BatchNormalization(const Node& n, const std::vector<const Tensor*>& in,
                                            const std::vector<TensorType>& out) {
    const Tensor& x = *in[0];
    const double eps = n.attrs.f("epsilon", 1e-5);
    const int64_t channels = x.shape[1];
    int64_t inner = 1;
    for (size_t d = 2; d < x.shape.size(); ++d) inner *= x.shape[d];
    Tensor r(out[0].dtype, out[0].shape);
    for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t c = (i / inner) % channels;
        const double inv = 1.0 / std::sqrt(in[4]->get_f64(c) + eps);
        r.set_f64(i, (x.get_f64(i) - in[3]->get_f64(c)) * inv * in[1]->get_f64(c) + in[2]->get_f64(c));
    }
    return {r};
}

}  // namespace stof::ir::ops
