// Matrix products: MatMul (numpy semantics), Gemm, Conv (1-D and 2-D).
// fp32 accumulation; inputs of any float dtype.
#include "ops/conv_geometry.hpp"
#include "ops/op_functions.hpp"
#include "ops/op_util.hpp"

namespace stof::ir::ops {

namespace {

using Inputs = std::vector<const Tensor*>;
using Types = std::vector<TensorType>;

// C[m,n] += A[m,k] * B[k,n], row-major with leading dimensions.
void matmul_acc(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                int64_t ldc) {
    for (int64_t i = 0; i < m; ++i) {
        float* crow = c + i * ldc;
        for (int64_t p = 0; p < k; ++p) {
            const float av = a[i * lda + p];
            const float* brow = b + p * ldb;
            for (int64_t j = 0; j < n; ++j) crow[j] += av * brow[j];
        }
    }
}

struct MatMulDims {
    Shape a, b;   // operands promoted to rank >= 2
    Shape batch;  // broadcast batch dims
    Shape out;    // final output shape (1-D promotions removed)
    int64_t m, k, n;
};

MatMulDims matmul_dims(const Node& n, const Shape& a0, const Shape& b0) {
    STOF_CHECK(!a0.empty() && !b0.empty(), "{}: operands must have rank >= 1", n.label());
    MatMulDims d;
    d.a = a0.size() == 1 ? Shape{1, a0[0]} : a0;
    d.b = b0.size() == 1 ? Shape{b0[0], 1} : b0;
    d.m = d.a[d.a.size() - 2];
    d.k = d.a.back();
    d.n = d.b.back();
    STOF_CHECK(d.k == d.b[d.b.size() - 2], "{}: inner dimensions differ ({} and {})", n.label(), shape_str(a0), shape_str(b0));
    const Shape ba(d.a.begin(), d.a.end() - 2), bb(d.b.begin(), d.b.end() - 2);
    d.batch = broadcast_shapes({&ba, &bb}, n);
    d.out = d.batch;
    if (a0.size() > 1) d.out.push_back(d.m);
    if (b0.size() > 1) d.out.push_back(d.n);
    return d;
}

}  // namespace

std::vector<TensorType> infer_MatMul(const Node& n, const std::vector<InferInput>& in) {
    STOF_CHECK(is_float(in[0].dtype) && in[0].dtype == in[1].dtype, "{}: needs two float inputs of one type, got {} and {}",
               n.label(), dtype_name(in[0].dtype), dtype_name(in[1].dtype));
    return {{in[0].dtype, matmul_dims(n, in[0].shape, in[1].shape).out}};
}

std::vector<Tensor> eval_MatMul(const Node& n, const Inputs& in, const Types& out) {
    const MatMulDims d = matmul_dims(n, in[0]->shape, in[1]->shape);
    const std::vector<float> a = to_f32(*in[0]), b = to_f32(*in[1]);
    std::vector<float> c(static_cast<size_t>(numel(d.out)), 0.0f);
    const Shape ba(d.a.begin(), d.a.end() - 2), bb(d.b.begin(), d.b.end() - 2);
    const int64_t mk = d.m * d.k, kn = d.k * d.n, mn = d.m * d.n;
    Broadcast(d.batch, {&ba, &bb}).run([&](int64_t o, const int64_t* idx) {
        matmul_acc(a.data() + idx[0] * mk, b.data() + idx[1] * kn, c.data() + o * mn, d.m, d.n, d.k, d.k, d.n, d.n);
    });
    return {from_f32(c, out[0].dtype, out[0].shape)};
}

std::vector<TensorType> infer_Gemm(const Node& n, const std::vector<InferInput>& in) {
    STOF_CHECK(in[0].shape.size() == 2 && in[1].shape.size() == 2, "{}: A and B must be 2-D, got {} and {}", n.label(),
               shape_str(in[0].shape), shape_str(in[1].shape));
    const bool ta = n.attrs.i("transA", 0) != 0, tb = n.attrs.i("transB", 0) != 0;
    const int64_t m = in[0].shape[ta ? 1 : 0], k = in[0].shape[ta ? 0 : 1];
    const int64_t kb = in[1].shape[tb ? 1 : 0], nn = in[1].shape[tb ? 0 : 1];
    STOF_CHECK(k == kb, "{}: inner dimensions differ ({} and {})", n.label(), k, kb);
    const Shape out{m, nn};
    if (in.size() > 2 && in[2].present)
        STOF_CHECK(broadcast_shapes({&out, &in[2].shape}, n) == out, "{}: C of shape {} does not broadcast to {}", n.label(),
                   shape_str(in[2].shape), shape_str(out));
    return {{in[0].dtype, out}};
}

std::vector<Tensor> eval_Gemm(const Node& n, const Inputs& in, const Types& out) {
    const bool ta = n.attrs.i("transA", 0) != 0, tb = n.attrs.i("transB", 0) != 0;
    const double alpha = n.attrs.f("alpha", 1.0), beta = n.attrs.f("beta", 1.0);
    const int64_t m = out[0].shape[0], nn = out[0].shape[1], k = in[0]->shape[ta ? 0 : 1];
    const std::vector<float> a = to_f32(*in[0]), b = to_f32(*in[1]);
    std::vector<float> at(static_cast<size_t>(m * k)), bt(static_cast<size_t>(k * nn));
    for (int64_t i = 0; i < m; ++i)
        for (int64_t p = 0; p < k; ++p)
            at[static_cast<size_t>(i * k + p)] = ta ? a[static_cast<size_t>(p * m + i)] : a[static_cast<size_t>(i * k + p)];
    for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < nn; ++j)
            bt[static_cast<size_t>(p * nn + j)] = tb ? b[static_cast<size_t>(j * k + p)] : b[static_cast<size_t>(p * nn + j)];
    std::vector<float> c(static_cast<size_t>(m * nn), 0.0f);
    matmul_acc(at.data(), bt.data(), c.data(), m, nn, k, k, nn, nn);
    for (float& v : c) v = static_cast<float>(alpha * v);
    if (in.size() > 2 && in[2]) {
        Broadcast(out[0].shape, {&in[2]->shape}).run([&](int64_t o, const int64_t* idx) {
            c[static_cast<size_t>(o)] += static_cast<float>(beta * in[2]->get_f64(idx[0]));
        });
    }
    return {from_f32(c, out[0].dtype, out[0].shape)};
}

namespace {

// [batch, cout, (oh,) ow] of a (transposed) convolution; checks the optional bias.
std::vector<TensorType> conv_output(const Node& n, const std::vector<InferInput>& in, const ConvGeom& g) {
    if (in.size() > 2 && in[2].present)
        STOF_CHECK(in[2].shape == Shape{g.cout}, "{}: bias must be [{}], got {}", n.label(), g.cout, shape_str(in[2].shape));
    Shape out{g.batch, g.cout};
    if (in[0].shape.size() == 4) out.push_back(g.oh);
    out.push_back(g.ow);
    return {{in[0].dtype, out}};
}

}  // namespace

std::vector<TensorType> infer_Conv(const Node& n, const std::vector<InferInput>& in) {
    return conv_output(n, in, conv_geometry(n, in[0].shape, in[1].shape));
}

std::vector<Tensor> eval_Conv(const Node& n, const Inputs& in, const Types& out) {
    const ConvGeom g = conv_geometry(n, in[0]->shape, in[1]->shape);
    const std::vector<float> x = to_f32(*in[0]), w = to_f32(*in[1]);
    const std::vector<float> bias = in.size() > 2 && in[2] ? to_f32(*in[2])
                                                           : std::vector<float>(static_cast<size_t>(g.cout), 0.0f);
    std::vector<float> y(static_cast<size_t>(numel(out[0].shape)));
    const int64_t cin_g = g.cin / g.group, cout_g = g.cout / g.group;
    for (int64_t b = 0; b < g.batch; ++b)
        for (int64_t oc = 0; oc < g.cout; ++oc) {
            const int64_t grp = oc / cout_g;
            for (int64_t oy = 0; oy < g.oh; ++oy)
                for (int64_t ox = 0; ox < g.ow; ++ox) {
                    float acc = bias[static_cast<size_t>(oc)];
                    for (int64_t ic = 0; ic < cin_g; ++ic) {
                        const int64_t c = grp * cin_g + ic;
                        for (int64_t ky = 0; ky < g.kh; ++ky) {
                            const int64_t iy = oy * g.sh - g.pt + ky * g.dh;
                            if (iy < 0 || iy >= g.h) continue;
                            for (int64_t kx = 0; kx < g.kw; ++kx) {
                                const int64_t ix = ox * g.sw - g.pl + kx * g.dw;
                                if (ix < 0 || ix >= g.w) continue;
                                acc += x[static_cast<size_t>(((b * g.cin + c) * g.h + iy) * g.w + ix)] *
                                       w[static_cast<size_t>(((oc * cin_g + ic) * g.kh + ky) * g.kw + kx)];
                            }
                        }
                    }
                    y[static_cast<size_t>(((b * g.cout + oc) * g.oh + oy) * g.ow + ox)] = acc;
                }
        }
    return {from_f32(y, out[0].dtype, out[0].shape)};
}

std::vector<TensorType> infer_ConvTranspose(const Node& n, const std::vector<InferInput>& in) {
    return conv_output(n, in, conv_transpose_geometry(n, in[0].shape, in[1].shape));
}

std::vector<Tensor> eval_ConvTranspose(const Node& n, const std::vector<const Tensor*>& in, const std::vector<TensorType>& out) {
    const ConvGeom g = conv_transpose_geometry(n, in[0]->shape, in[1]->shape);
    const std::vector<float> x = to_f32(*in[0]), w = to_f32(*in[1]);
    std::vector<float> y(static_cast<size_t>(numel(out[0].shape)), 0.0f);
    const int64_t cin_g = g.cin / g.group, cout_g = g.cout / g.group;
    for (int64_t b = 0; b < g.batch; ++b)
        for (int64_t c = 0; c < g.cin; ++c) {
            const int64_t grp = c / cin_g;
            for (int64_t iy = 0; iy < g.h; ++iy)
                for (int64_t ix = 0; ix < g.w; ++ix) {
                    const float xv = x[static_cast<size_t>(((b * g.cin + c) * g.h + iy) * g.w + ix)];
                    for (int64_t oc = 0; oc < cout_g; ++oc)
                        for (int64_t ky = 0; ky < g.kh; ++ky) {
                            const int64_t oy = iy * g.sh - g.pt + ky * g.dh;
                            if (oy < 0 || oy >= g.oh) continue;
                            for (int64_t kx = 0; kx < g.kw; ++kx) {
                                const int64_t ox = ix * g.sw - g.pl + kx * g.dw;
                                if (ox < 0 || ox >= g.ow) continue;
                                y[static_cast<size_t>(((b * g.cout + grp * cout_g + oc) * g.oh + oy) * g.ow + ox)] +=
                                    xv * w[static_cast<size_t>(((c * cout_g + oc) * g.kh + ky) * g.kw + kx)];
                            }
                        }
                }
        }
    if (in.size() > 2 && in[2]) {
        const int64_t plane = g.oh * g.ow;
        for (size_t i = 0; i < y.size(); ++i)
            y[i] += static_cast<float>(in[2]->get_f64((static_cast<int64_t>(i) / plane) % g.cout));
    }
    return {from_f32(y, out[0].dtype, out[0].shape)};
}

}  // namespace stof::ir::ops
