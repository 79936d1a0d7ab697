// decompose-attention: in a plan, the SparseAttention nodes the sparse kernels
// cannot run (head dims they lack, a bias that varies over batch) are
// rewritten into the ops they stand for (seq-major operands,
// ops/attention_layout.hpp, transposed to heads-major first):
//   s = MatMul(q, Transpose(k)) · scale [+ bias];  s = Where(keep ∧ valid, s, −inf)
//   p = Softmax(s);  p = Where(IsNaN(p), 0, p)     (rows without a kept key: 0)
//   o = MatMul(p, v)                                  (k, v repeated over heads for GQA)
#include "ops/attention_layout.hpp"
#include "passes/passes.hpp"
#include "stof/kernels/attention_instances.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

namespace stof::passes {

namespace {

struct Builder {
    ir::Graph& g;
    std::vector<ir::Node>& out;
    const std::string base;

    ir::ValueId value(DType dt, const Shape& s, const std::string& hint) {
        ir::Value v;
        v.name = g.unique_name(base + "_" + hint);
        v.dtype = dt;
        v.shape = s;
        v.shape_known = true;
        return g.add_value(v);
    }
    ir::ValueId node(ir::Op op, std::vector<ir::ValueId> in, DType dt, const Shape& s, const std::string& hint,
                     ir::Attrs attrs = {}, ir::ValueId result = ir::kNoValue) {
        ir::Node n;
        n.op = op;
        n.name = g.unique_name(base + "_" + hint);
        n.inputs = std::move(in);
        n.outputs = {result == ir::kNoValue ? value(dt, s, hint) : result};
        n.attrs = std::move(attrs);
        out.push_back(n);
        return n.outputs[0];
    }
    ir::ValueId shape_const(const Shape& s) {
        Tensor t(DType::i64, {static_cast<int64_t>(s.size())});
        for (size_t i = 0; i < s.size(); ++i) t.set_i64(static_cast<int64_t>(i), s[i]);
        return g.add_constant(t, base + "_shape");
    }
    ir::ValueId scalar(DType dt, double x, const std::string& hint) {
        Tensor t(dt, {});
        t.set_f64(0, x);
        return g.add_constant(t, base + "_" + hint);
    }
    // [B,Hk,S,D] → [B,Hk·r,S,D], each KV head repeated r times.
    ir::ValueId repeat_heads(ir::ValueId x, int64_t r) {
        if (r == 1) return x;
        const Shape s = g.value(x).shape;
        const DType dt = g.value(x).dtype;
        const Shape s5{s[0], s[1], 1, s[2], s[3]}, e5{s[0], s[1], r, s[2], s[3]}, full{s[0], s[1] * r, s[2], s[3]};
        ir::ValueId y = node(ir::Op::Reshape, {x, shape_const(s5)}, dt, s5, "kv5");
        y = node(ir::Op::Expand, {y, shape_const(e5)}, dt, e5, "kv_expand");
        return node(ir::Op::Reshape, {y, shape_const(full)}, dt, full, "kv_heads");
    }
};

// Why node n cannot run on the sparse attention kernels in a plan of precision p, or "".
std::string off_kernels_reason(const ir::Graph& g, const ir::Node& n) {
    const int64_t d = g.value(n.inputs[0]).shape[3];
    if (!kernels::is_attention_head_dim(d))
        return fmt::format("head dim {} is not one of the kernels' {}", d, kernels::attention_head_dims_text());
    if (n.inputs.size() > 4 && n.inputs[4] != ir::kNoValue && g.value(n.inputs[4]).shape[0] != 1)
        return "its bias varies over batch and the kernels broadcast it over batch only";
    return "";
}

}  // namespace

void decompose_attention(ir::Graph& g, const PassOptions& opt) {
    if (!opt.plan_precision) return;
    std::vector<ir::Node> nodes;
    const std::vector<ir::Node> old = g.nodes;
    for (const ir::Node& n : old) {
        const std::string why = n.op == ir::Op::SparseAttention ? off_kernels_reason(g, n) : "";
        if (why.empty()) {
            nodes.push_back(n);
            continue;
        }
        const std::string note = fmt::format("{}: runs as dense MatMul/Softmax, not on the sparse attention kernels: {}",
                                             n.label(), why);
        spdlog::warn("{}", note);
        if (opt.note) opt.note(note);
        Builder b{g, nodes, n.name};
        const ir::AttentionLayout layout = ir::attention_layout(n);
        const ir::AttentionHeads heads = ir::attention_heads(n, g.value(n.inputs[0]).shape, g.value(n.inputs[1]).shape, layout);
        const DType dt = g.value(n.inputs[0]).dtype;
        ir::Attrs swap_sh;  // [B,S,H,D] <-> [B,H,S,D]
        swap_sh.set("perm", std::vector<int64_t>{0, 2, 1, 3});
        // Operand i's used heads, as [B,H,S,D].
        auto heads_major = [&](int i, char l, int64_t used, const std::string& hint) {
            ir::ValueId x = n.inputs[static_cast<size_t>(i)];
            Shape s = g.value(x).shape;
            const int axis = l == 's' ? 2 : 1;
            if (heads.offset[i] != 0 || s[static_cast<size_t>(axis)] != used) {
                auto ints = [&](int64_t v) {
                    Tensor t(DType::i64, {1});
                    t.set_i64(0, v);
                    return g.add_constant(t, n.name + "_" + hint + "_slice");
                };
                s[static_cast<size_t>(axis)] = used;
                x = b.node(ir::Op::Slice, {x, ints(heads.offset[i]), ints(heads.offset[i] + used), ints(axis)}, dt, s,
                           hint + "_heads");
            }
            if (l == 'h') return x;
            return b.node(ir::Op::Transpose, {x}, dt, {s[0], s[2], s[1], s[3]}, hint, swap_sh);
        };
        const ir::ValueId q = heads_major(0, layout.q, heads.heads, "q"), k0 = heads_major(1, layout.k, heads.kv_heads, "k"),
                          v0 = heads_major(2, layout.v, heads.kv_heads, "v");
        const Shape qs = g.value(q).shape, ks = g.value(k0).shape;
        const int64_t B = qs[0], H = qs[1], Sq = qs[2], Sk = ks[2];
        const Shape ss{B, H, Sq, Sk};
        ir::Attrs perm;
        perm.set("perm", std::vector<int64_t>{0, 1, 3, 2});
        const ir::ValueId k = b.repeat_heads(k0, H / ks[1]), v = b.repeat_heads(v0, H / ks[1]);
        const ir::ValueId kt = b.node(ir::Op::Transpose, {k}, dt, {B, H, ks[3], Sk}, "kt", perm);
        ir::ValueId s = b.node(ir::Op::MatMul, {q, kt}, dt, ss, "scores");
        s = b.node(ir::Op::Mul, {s, b.scalar(dt, n.attrs.f("scale", 1.0), "scale")}, dt, ss, "scaled");
        if (n.inputs.size() > 4 && n.inputs[4] != ir::kNoValue) s = b.node(ir::Op::Add, {s, n.inputs[4]}, dt, ss, "biased");
        ir::ValueId keep = n.inputs.size() > 3 ? n.inputs[3] : ir::kNoValue;
        if (const ir::MaskTilesAttr t = n.attrs.mask_tiles("keep_tiles")) {  // dense ops need it densely
            Tensor dense(DType::boolean, {t->mask_batch, t->mask_heads, t->rows, t->cols});
            const size_t plane = static_cast<size_t>(t->rows) * static_cast<size_t>(t->cols);
            for (int32_t p = 0; p < t->patterns(); ++p) {
                const std::vector<uint8_t> d = to_dense(*t, p);
                std::copy(d.begin(), d.end(), dense.bytes.begin() + static_cast<std::ptrdiff_t>(p * plane));
            }
            keep = g.add_constant(std::move(dense), n.name + "_keep");
        }
        if (n.inputs.size() > 5 && n.inputs[5] != ir::kNoValue) {
            ir::Attrs to_bool;
            to_bool.set("to", static_cast<int64_t>(9));  // ONNX BOOL
            ir::ValueId valid = b.node(ir::Op::Cast, {n.inputs[5]}, DType::boolean, {B, Sk}, "valid", to_bool);
            valid = b.node(ir::Op::Reshape, {valid, b.shape_const({B, 1, 1, Sk})}, DType::boolean, {B, 1, 1, Sk}, "valid4");
            if (keep == ir::kNoValue) {
                keep = valid;
            } else {
                Shape ks4 = g.value(keep).shape;
                if (ks4.size() == 2) ks4.insert(ks4.begin(), {1, 1});
                const Shape both{B, ks4[1], Sq, Sk};
                keep = b.node(ir::Op::And, {keep, valid}, DType::boolean, both, "kept");
            }
        }
        if (keep != ir::kNoValue)
            s = b.node(ir::Op::Where, {keep, s, b.scalar(dt, -std::numeric_limits<double>::infinity(), "neg_inf")}, dt, ss,
                       "masked");
        ir::Attrs axis;
        axis.set("axis", static_cast<int64_t>(-1));
        ir::ValueId p = b.node(ir::Op::Softmax, {s}, dt, ss, "probs", axis);
        const ir::ValueId nan = b.node(ir::Op::IsNaN, {p}, DType::boolean, ss, "empty_rows");
        p = b.node(ir::Op::Where, {nan, b.scalar(dt, 0.0, "zero"), p}, dt, ss, "probs_or_zero");
        if (layout.o == 'h') {
            b.node(ir::Op::MatMul, {p, v}, dt, g.value(n.outputs[0]).shape, "out", {}, n.outputs[0]);
        } else {
            const ir::ValueId o = b.node(ir::Op::MatMul, {p, v}, dt, {B, H, Sq, qs[3]}, "out_heads");
            b.node(ir::Op::Transpose, {o}, dt, g.value(n.outputs[0]).shape, "out", swap_sh, n.outputs[0]);
        }
    }
    g.nodes = std::move(nodes);
}

}  // namespace stof::passes
