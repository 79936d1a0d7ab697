// fuse-linear: every exported spelling of a linear layer with a constant
// weight becomes the canonical form
//   out = Add(MatMul(x, W), b)       x [..., K] (rank >= 2), W constant [K, N],
//                                    b constant [N], the Add optional
// with the MatMul read only by the Add. codegen/lower.cpp maps exactly this
// form onto one cuBLASLt GEMM over all rows of x with a bias epilogue (and a
// following Relu or tanh-Gelu into the same epilogue); this pass only brings
// other spellings to it:
//   Gemm(A, B, C) with constant B and transA=0   W = alpha·op(B), b = beta·C (C a
//                                                row vector or absent)
//   Reshape(x → [M, K]) → MatMul/Gemm → [+ b] → Reshape(→ [..., N])
//                                                the reshapes dropped (GPT-2 Conv1D)
//   Add(b, y), b of shape [1, ..., N] or [1]     operands reordered, b as [N]
// Every intermediate value is read only inside the pattern.
#include "passes/match.hpp"
#include "passes/passes.hpp"

#include <spdlog/spdlog.h>

namespace stof::passes {

namespace {

using ir::Op;

// W for Gemm(A, B) with B constant: alpha·op(B) as [K, N].
Tensor gemm_weight(const ir::Node& n, const Tensor& b) {
    const bool tb = n.attrs.i("transB", 0) != 0;
    const double alpha = n.attrs.f("alpha", 1.0);
    const int64_t k = b.shape[tb ? 1 : 0], nn = b.shape[tb ? 0 : 1];
    Tensor w(b.dtype, {k, nn});
    for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < nn; ++j) w.set_f64(i * nn + j, alpha * b.get_f64(tb ? j * k + i : i * nn + j));
    return w;
}

bool match_at(Matcher& m, const ir::Node& mm) {
    ir::ValueId x = mm.inputs[0], w = mm.inputs[1];
    const ir::Value& wv = m.g.value(w);
    const ir::Value& xv = m.g.value(x);
    if (!wv.data || wv.shape.size() != 2 || !is_float(wv.dtype) || xv.shape.size() < 2) return false;
    const DType dt = xv.dtype;
    const int64_t n_out = mm.op == Op::Gemm && mm.attrs.i("transB", 0) != 0 ? wv.shape[0] : wv.shape[1];
    std::optional<Tensor> weight, bias;
    bool changed = false;
    if (mm.op == Op::Gemm) {
        if (mm.attrs.i("transA", 0) != 0) return false;
        if (mm.attrs.i("transB", 0) != 0 || mm.attrs.f("alpha", 1.0) != 1.0) weight = gemm_weight(mm, *wv.data);
        const double beta = mm.attrs.f("beta", 1.0);
        if (mm.inputs.size() > 2 && mm.inputs[2] != ir::kNoValue && beta != 0.0) {
            bias = row_vector(m, mm.inputs[2], n_out, dt);
            if (!bias) return false;
            for (int64_t i = 0; i < n_out; ++i) bias->set_f64(i, beta * bias->get_f64(i));
        }
        changed = true;
    }
    std::vector<const ir::Node*> drop{&mm};
    ir::ValueId cur = mm.outputs[0];
    auto take_bias = [&] {
        const ir::Node* add = m.sole_consumer(cur, Op::Add);
        if (bias || !add || m.g.value(add->outputs[0]).shape != m.g.value(cur).shape) return;
        const ir::ValueId b = other_input(*add, cur);
        bias = row_vector(m, b, n_out, dt);
        if (!bias) return;
        changed = changed || add->inputs[0] != cur || m.g.value(b).shape != Shape{n_out};
        drop.push_back(add);
        cur = add->outputs[0];
    };
    take_bias();
    // Reshape(x_nd → [M, K]) ... Reshape(→ x_nd[:-1] + [N]): multiply x_nd directly.
    const ir::Node* in_r = m.producer(x, Op::Reshape);
    const ir::Node* out_r = m.sole_consumer(cur, Op::Reshape);
    if (in_r && out_r && xv.shape.size() == 2) {
        const ir::ValueId x_nd = in_r->inputs[0];
        Shape want = m.g.value(x_nd).shape;
        if (want.size() >= 2 && want.back() == xv.shape[1]) {
            want.back() = n_out;
            if (m.g.value(out_r->outputs[0]).shape == want) {
                if (m.used_only_by(x, {&mm})) drop.push_back(in_r);
                drop.push_back(out_r);
                x = x_nd;
                cur = out_r->outputs[0];
                changed = true;
                take_bias();
            }
        }
    }
    if (!changed) return false;

    const ir::Node& last = *drop.back();
    Shape mm_shape = m.g.value(x).shape;
    mm_shape.back() = n_out;
    std::vector<ir::Node> add(1);
    ir::Node& matmul = add[0];
    matmul.op = Op::MatMul;
    matmul.name = m.node_name(mm, "MatMul");
    const ir::ValueId wc = weight ? m.g.add_constant(*weight, matmul.name + ".weight") : w;
    const ir::ValueId y = bias ? m.new_value(matmul.name + "_output", dt, mm_shape) : cur;
    matmul.inputs = {x, wc};
    matmul.outputs = {y};
    if (bias) {
        ir::Node b;
        b.op = Op::Add;
        b.name = m.node_name(mm, "Add");
        b.inputs = {y, m.g.add_constant(*bias, b.name + ".bias")};
        b.outputs = {cur};
        add.push_back(std::move(b));
    }
    return m.replace(drop, last, std::move(add));
}

}  // namespace

void fuse_linear(ir::Graph& g, const PassOptions&) {
    Matcher m(g);
    for (const ir::Node& n : g.nodes)
        if ((n.op == Op::MatMul || n.op == Op::Gemm) && !m.claimed(n)) match_at(m, n);
    const int rewritten = m.commit();
    if (rewritten) spdlog::debug("fuse-linear: {} linear layers canonicalised", rewritten);
}

}  // namespace stof::passes
