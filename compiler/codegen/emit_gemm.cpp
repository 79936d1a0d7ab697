// MatMul and Gemm as GEMM steps (plan::GemmStep), row-major: cuBLASLt, or the fused GEMM + bias +
// GELU kernel for an epilogue ending in the exact Gelu, or the fused GEMM + SwiGLU kernel for an
// epilogue gating the halves of the result (fusion::fused_swiglu_gemm: Split, Sigmoid, Mul, Mul;
// the weight's gate and up columns interleaved at compile time), or the fused GEMM + rotary
// embedding kernel for an epilogue that is the Rotary op (fusion::fused_rotary_gemm).
#include "codegen/emitters.hpp"
#include "precision.hpp"
#include "ops/op_util.hpp"
#include "stof/error.hpp"
#include "stof/kernels/gemm_swiglu.hpp"

#include <algorithm>

namespace stof::codegen {

namespace {

// Batch stride of an operand whose batch dims are `b` against the output's `ob`:
// the matrix size when they match, 0 when the operand is shared, -1 when it
// broadcasts partially (the caller materializes it).
int64_t batch_stride(const Shape& b, const Shape& ob, int64_t matrix) {
    Shape padded(ob.size() - std::min(ob.size(), b.size()), 1);
    padded.insert(padded.end(), b.begin(), b.end());
    if (padded == ob) return matrix;
    if (numel(b) == 1) return 0;
    return -1;
}

// Operand `t` (batch dims `b`, matrix `rows`×`cols`) with batch stride for the
// output batch `ob`, broadcast into a new tensor first where strides cannot express it.
int64_t operand_stride(LowerState& st, int32_t& t, const Shape& b, const Shape& ob, int64_t rows, int64_t cols) {
    const int64_t s = batch_stride(b, ob, rows * cols);
    if (s >= 0) return s;
    Shape full = ob;
    full.push_back(rows);
    full.push_back(cols);
    t = emit_broadcast(st, t, full);
    return rows * cols;
}

// Whether n's result is read only by a Split into two equal halves (a merged gate|up
// projection, merge-sibling-linear).
bool split_in_halves(const ir::Graph& g, const ir::Node& n) {
    const ir::Node* split = nullptr;
    for (const ir::Node& x : g.nodes)
        for (ir::ValueId v : x.inputs)
            if (v == n.outputs[0]) {
                if (split) return false;
                split = &x;
            }
    return split && split->op == ir::Op::Split && split->outputs.size() == 2 &&
           g.value(split->outputs[0]).shape == g.value(split->outputs[1]).shape &&
           std::find(g.outputs.begin(), g.outputs.end(), n.outputs[0]) == g.outputs.end();
}

}  // namespace

void emit_gemm(LowerState& st, const ir::Node& n, const std::vector<const ir::Node*>& epilogue_nodes, int algo) {
    const ir::Graph& g = st.g;
    plan::GemmStep gs;
    gs.algo = static_cast<uint8_t>(algo);
    // cuBLASLt multiplies operands of one type: the plan's float storage type.
    const DType compute = float_dtype(st.precision);
    const bool swiglu = epilogue_nodes.size() == 4 && epilogue_nodes[0]->op == ir::Op::Split;
    const bool rotary = epilogue_nodes.size() == 1 && epilogue_nodes[0]->op == ir::Op::Rotary;
    gs.a = st.tensor(n.inputs[0]);
    if (swiglu) {  // the weight [K, 2F] = [gate | up] with its columns interleaved: gate j, up j, ...
        const ir::Value& w = g.value(n.inputs[1]);
        STOF_CHECK(n.op == ir::Op::MatMul && w.data && w.shape.size() == 2 && w.shape[1] % 2 == 0 && compute != DType::f32,
                   "{}: the SwiGLU gate folds into a 16-bit GEMM by a constant [K, 2F] weight only", n.label());
        const Tensor halves = to_plan_precision(*w.data, st.precision);
        Tensor interleaved(compute, halves.shape);
        const int64_t f = w.shape[1] / 2;
        const auto es = static_cast<int>(dtype_size(compute));
        kernels::interleave_gate_up(halves.bytes.data(), halves.bytes.data() + f * es, 2 * f, interleaved.bytes.data(),
                                    w.shape[0], f, es);
        gs.b = st.add_weight(interleaved, n.name + "_gate_up_interleaved");
    } else if (st.placeholder_weights && g.value(n.inputs[1]).data && split_in_halves(g, n)) {
        // A merged gate|up weight keeps its values in a tuning plan (no placeholder): the fused
        // SwiGLU GEMM reads it interleaved, and its unfused reference must see the same numbers.
        gs.b = st.add_weight(to_plan_precision(*g.value(n.inputs[1]).data, st.precision), g.value(n.inputs[1]).name);
    } else {
        gs.b = st.tensor(n.inputs[1]);
    }
    if (st.plan.tensors[static_cast<size_t>(gs.a)].dtype != compute) gs.a = emit_convert(st, gs.a, compute);
    if (st.plan.tensors[static_cast<size_t>(gs.b)].dtype != compute) gs.b = emit_convert(st, gs.b, compute);
    const ir::ValueId result = epilogue_nodes.empty() ? n.outputs[0] : epilogue_nodes.back()->outputs[0];
    gs.d = st.tensor(result);
    // A result stored in another type (an fp32 graph output of a 16-bit plan) is
    // produced in the compute type, then converted into place.
    const int32_t final_d = gs.d;
    if (st.plan.tensors[static_cast<size_t>(gs.d)].dtype != compute) {
        const plan::TensorDesc out = st.plan.tensors[static_cast<size_t>(gs.d)];
        gs.d = st.add_tensor(out.name + "_" + dtype_name(compute), compute, out.shape, plan::TensorRole::intermediate);
    }
    const Shape& as = g.value(n.inputs[0]).shape;
    const Shape& bs = g.value(n.inputs[1]).shape;

    if (n.op == ir::Op::MatMul) {
        const Shape a2 = as.size() == 1 ? Shape{1, as[0]} : as;
        const Shape b2 = bs.size() == 1 ? Shape{bs[0], 1} : bs;
        const int64_t m = a2[a2.size() - 2], k = a2.back(), nn = b2.back();
        gs.k = k;
        gs.n = nn;
        gs.lda = k;
        gs.ldb = nn;
        gs.ldd = nn;
        const Shape ba(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
        if (numel(bb) == 1) {
            gs.m = m * numel(ba);  // B shared by every batch: one GEMM over all rows of A
        } else {
            const Shape ob = ir::ops::broadcast_shapes({&ba, &bb}, n);
            gs.m = m;
            gs.batch = numel(ob);
            gs.batch_stride_a = operand_stride(st, gs.a, ba, ob, m, k);
            gs.batch_stride_b = operand_stride(st, gs.b, bb, ob, k, nn);
            gs.batch_stride_d = m * nn;
        }
    } else {  // Gemm: 2-D, optional transposes, alpha, beta, C
        gs.trans_a = n.attrs.i("transA", 0) != 0;
        gs.trans_b = n.attrs.i("transB", 0) != 0;
        gs.m = as[gs.trans_a ? 1 : 0];
        gs.k = as[gs.trans_a ? 0 : 1];
        gs.n = bs[gs.trans_b ? 0 : 1];
        gs.lda = as[1];
        gs.ldb = bs[1];
        gs.ldd = gs.n;
        gs.alpha = static_cast<float>(n.attrs.f("alpha", 1.0));
        const float beta = static_cast<float>(n.attrs.f("beta", 1.0));
        if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue && beta != 0.0f) {
            const ir::Value& c = g.value(n.inputs[2]);
            const bool row_vector = c.shape.empty() || c.shape.back() == 1 ? numel(c.shape) == 1 : numel(c.shape) == gs.n;
            if (row_vector && c.data) {
                Tensor bias(DType::f32, {gs.n});
                for (int64_t i = 0; i < gs.n; ++i) bias.set_f64(i, beta * c.data->get_f64(numel(c.shape) == 1 ? 0 : i));
                gs.bias = st.add_weight(cast(bias, compute), n.name + "_bias");
                gs.epilogue = plan::Epilogue::bias;
            } else if (c.data) {  // a constant C of another broadcastable shape: stored as [m, n]
                Tensor full(DType::f32, {gs.m, gs.n});
                const Shape cs = c.shape.size() == 1 ? Shape{1, c.shape[0]} : c.shape;
                for (int64_t i = 0; i < gs.m; ++i)
                    for (int64_t j = 0; j < gs.n; ++j)
                        full.set_f64(i * gs.n + j, c.data->get_f64((cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j)));
                gs.c = st.add_weight(cast(full, compute), n.name + "_c");
                gs.ldc = gs.n;
                gs.beta = beta;
            } else {
                STOF_CHECK(c.shape == Shape({gs.m, gs.n}), "{}: C of shape {} must be [{}] or [{},{}] in a plan", n.label(),
                           shape_str(c.shape), gs.n, gs.m, gs.n);
                gs.c = st.tensor(n.inputs[2]);
                if (st.plan.tensors[static_cast<size_t>(gs.c)].dtype != compute) gs.c = emit_convert(st, gs.c, compute);
                gs.ldc = gs.n;
                gs.beta = beta;
            }
        }
    }

    std::vector<const ir::Node*> nodes{&n};
    if (swiglu) {
        STOF_CHECK(gs.batch == 1, "{}: the SwiGLU gate folds into one GEMM over every row only", n.label());
        gs.epilogue = plan::Epilogue::swiglu;
        gs.ldd = gs.n / 2;
        nodes.insert(nodes.end(), epilogue_nodes.begin(), epilogue_nodes.end());
    } else if (rotary) {  // Rotary(x, cos [rows, head_dim], sin) {head_dim, rot_cols}
        const ir::Node& r = *epilogue_nodes[0];
        STOF_CHECK(n.op == ir::Op::MatMul && gs.batch == 1 && compute != DType::f32,
                   "{}: the rotary embedding folds into one 16-bit GEMM over every row only", r.label());
        gs.epilogue = plan::Epilogue::rotary;
        gs.rotary.cos = st.tensor(r.inputs[1]);
        gs.rotary.sin = st.tensor(r.inputs[2]);
        for (int32_t* t : {&gs.rotary.cos, &gs.rotary.sin})
            if (st.plan.tensors[static_cast<size_t>(*t)].dtype != compute) *t = emit_convert(st, *t, compute);
        gs.rotary.rows = g.value(r.inputs[1]).shape.at(0);
        gs.rotary.cols = r.attrs.i("rot_cols", 0);
        gs.rotary.head_dim = static_cast<int32_t>(r.attrs.i("head_dim", 0));
        nodes.push_back(&r);
    }
    for (const ir::Node* e : swiglu || rotary ? std::vector<const ir::Node*>{} : epilogue_nodes) {
        nodes.push_back(e);
        const ir::ValueId other = e->op == ir::Op::Add
                                      ? (e->inputs[0] == nodes[nodes.size() - 2]->outputs[0] ? e->inputs[1] : e->inputs[0])
                                      : ir::kNoValue;
        if (other != ir::kNoValue && !g.value(other).data) {  // a residual: D = A·B (+ bias) + C
            gs.c = st.tensor(other);
            if (st.plan.tensors[static_cast<size_t>(gs.c)].dtype != compute) gs.c = emit_convert(st, gs.c, compute);
            gs.ldc = gs.ldd;
            gs.batch_stride_c = gs.batch_stride_d;
            gs.beta = 1.0f;
        } else if (other != ir::kNoValue) {
            const ir::ValueId bias_v = other;
            Tensor bias(DType::f32, {gs.n});
            const Tensor& src = *g.value(bias_v).data;
            for (int64_t i = 0; i < gs.n; ++i) bias.set_f64(i, src.get_f64(src.numel() == 1 ? 0 : i));
            gs.bias = st.add_weight(cast(bias, compute), e->name + "_bias");
            gs.epilogue = plan::Epilogue::bias;
        } else if (e->op == ir::Op::Relu) {
            gs.epilogue = gs.epilogue == plan::Epilogue::bias ? plan::Epilogue::bias_relu : plan::Epilogue::relu;
        } else if (e->attrs.s("approximate", "none") == "none") {  // the exact Gelu: the fused kernel's
            STOF_CHECK(gs.epilogue == plan::Epilogue::bias && gs.batch == 1 && compute != DType::f32,
                       "{}: the exact Gelu folds into a 16-bit GEMM with a bias only", e->label());
            gs.epilogue = plan::Epilogue::bias_gelu_erf;
        } else {
            gs.epilogue = gs.epilogue == plan::Epilogue::bias ? plan::Epilogue::bias_gelu : plan::Epilogue::gelu;
        }
    }
    plan::Step s;
    s.kind = plan::StepKind::gemm;
    s.label = "gemm";
    s.nodes = node_names(nodes);
    s.gemm = gs;
    st.add_step(std::move(s));
    if (gs.d != final_d) emit_convert_into(st, gs.d, final_d);
}

}  // namespace stof::codegen
