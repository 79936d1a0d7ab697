#include "passes/attention_match.hpp"

#include <fmt/format.h>

namespace stof::passes {

namespace {

using ir::Op;
using ir::ValueId;

constexpr int kMaxMaskNodes = 4;  // Add / Where nodes between the scores and the Softmax

// A float constant with one element: its value.
std::optional<double> scalar_constant(const Matcher& m, ValueId v) {
    const ir::Value& val = m.g.value(v);
    if (!val.data || val.data->numel() != 1 || !is_float(val.dtype)) return std::nullopt;
    return val.data->get_f64(0);
}

// Whether a MatMul or Gemm computes v (depth-first, stops at the first one).
bool reaches_matmul(const Matcher& m, ValueId v) {
    bool found = false;
    walk_back(m, {v}, [&](ValueId x) {
        const ir::Node* p = m.producer(x);
        found = found || (p && (p->op == Op::MatMul || p->op == Op::Gemm));
        return !found;
    });
    return found;
}

// Peels x = y·c / c·y / y/c (c a scalar constant, x used only by `user`).
ValueId peel_scale(const Matcher& m, ValueId x, const ir::Node& user, double& scale, std::vector<const ir::Node*>& removed) {
    const ir::Node* n = m.producer(x);
    if (!n || m.sole_consumer(x) != &user) return x;
    if (n->op != Op::Mul && n->op != Op::Div) return x;
    for (int side = 0; side < 2; ++side) {
        if (n->op == Op::Div && side == 0) {
            if (auto c = scalar_constant(m, n->inputs[1])) {
                scale /= *c;
                removed.push_back(n);
                return n->inputs[0];
            }
            return x;
        }
        if (auto c = scalar_constant(m, n->inputs[static_cast<size_t>(1 - side)])) {
            scale *= *c;
            removed.push_back(n);
            return n->inputs[static_cast<size_t>(side)];
        }
    }
    return x;
}

// The score MatMul behind `x` (through one scale), or nothing.
std::optional<AttentionMatch> match_scores(const Matcher& m, ValueId x, const ir::Node& user) {
    AttentionMatch a;
    const ValueId s = peel_scale(m, x, user, a.scale, a.removed);
    const ir::Node* mm = m.producer(s, Op::MatMul);
    const ir::Node* s_user = s == x ? &user : a.removed.back();
    if (!mm || m.sole_consumer(s) != s_user) return std::nullopt;
    a.removed.push_back(mm);
    a.q = peel_scale(m, mm->inputs[0], *mm, a.scale, a.removed);
    a.kt = peel_scale(m, mm->inputs[1], *mm, a.scale, a.removed);
    a.scores = x;
    return a;
}

// A Softmax whose input a MatMul computes and whose result (or its IsNaN / Where
// guard) a MatMul reads.
bool looks_like_attention(const Matcher& m, const ir::Node& sm) {
    if (!reaches_matmul(m, sm.inputs[0])) return false;
    std::vector<ValueId> reads{sm.outputs[0]};
    for (int c : m.consumers(sm.outputs[0]))
        if (m.g.nodes[static_cast<size_t>(c)].op == Op::Where) reads.push_back(m.g.nodes[static_cast<size_t>(c)].outputs[0]);
    for (ValueId v : reads)
        for (int c : m.consumers(v))
            if (m.g.nodes[static_cast<size_t>(c)].op == Op::MatMul) return true;
    return false;
}

}  // namespace

std::optional<AttentionMatch> match_attention(const Matcher& m, const ir::Node& sm, std::string* why) {
    const ir::Graph& g = m.g;
    if (sm.op != Op::Softmax) return std::nullopt;
    const ir::Value& sv = g.value(sm.outputs[0]);
    const int64_t axis = sm.attrs.i("axis", -1);
    // A Softmax of MatMul scores read by a MatMul looks like attention: say why it does not match.
    auto fail = [&](const std::string& reason) -> std::optional<AttentionMatch> {
        if (why && looks_like_attention(m, sm)) *why = reason;
        return std::nullopt;
    };
    if (sv.shape.size() != 4)
        return fail(fmt::format("the scores have shape {}, not [batch, heads, queries, keys]", shape_str(sv.shape)));
    if ((axis != -1 && axis != 3) || !is_float(sv.dtype))
        return fail(fmt::format("the softmax is over axis {}, not the keys", axis));
    // Output side.
    ValueId p = sm.outputs[0];
    const ir::Node *isnan = nullptr, *where = nullptr;
    const std::vector<int>& pc = m.consumers(p);
    if (pc.size() == 2) {
        for (int c : pc)
            if (g.nodes[static_cast<size_t>(c)].op == Op::IsNaN) isnan = &g.nodes[static_cast<size_t>(c)];
        for (int c : pc)
            if (&g.nodes[static_cast<size_t>(c)] != isnan && g.nodes[static_cast<size_t>(c)].op == Op::Where)
                where = &g.nodes[static_cast<size_t>(c)];
        if (!isnan || !where) return fail("the softmax's result has two readers other than the IsNaN / Where guard");
        const auto zero = scalar_constant(m, where->inputs[1]);
        if (where->inputs[0] != isnan->outputs[0] || !zero || *zero != 0.0 || where->inputs[2] != p ||
            m.sole_consumer(where->inputs[0]) != where)
            return fail("the IsNaN / Where guard after the softmax is not Where(IsNaN(p), 0, p)");
        p = where->outputs[0];
    } else if (pc.size() != 1) {
        return fail("the softmax's result has more than one reader");
    }
    const ir::Node* out = m.sole_consumer(p);
    if (!out || out->op != Op::MatMul || out->inputs[0] != p)
        return fail("the softmax's result is not read by one MatMul(p, v) alone");

    // Input side: the scores, through up to kMaxMaskNodes Add / Where nodes.
    ValueId s = sm.inputs[0];
    const ir::Node* user = &sm;
    std::vector<const ir::Node*> mask_nodes;
    std::optional<AttentionMatch> a;
    for (int depth = 0; !(a = match_scores(m, s, *user)); ++depth) {
        const ir::Node* n = m.producer(s);
        if (depth == kMaxMaskNodes || !n || m.sole_consumer(s) != user)
            return fail(
                "no MatMul(q, k^T) computes the scores (through a scale and up to four Add / Where mask nodes, each "
                "read once)");
        std::vector<size_t> sides;
        if (n->op == Op::Add) sides = {0, 1};
        else if (n->op == Op::Where) sides = {1, 2};
        else
            return fail(
                fmt::format("{} between the scores and the softmax (only a scale, Add and Where are recognised)", n->label()));
        // The score side is the one a MatMul feeds; the other inputs are the mask side.
        std::optional<size_t> score_side;
        for (size_t k : sides)
            if (reaches_matmul(m, n->inputs[k])) {
                if (score_side || n->inputs[k] == n->inputs[sides[0] == k ? sides[1] : sides[0]])
                    return fail(fmt::format("{} combines two values a MatMul computes", n->label()));
                score_side = k;
            }
        if (!score_side || (n->op == Op::Where && reaches_matmul(m, n->inputs[0])))
            return fail(fmt::format("{}: no side of it is the scores alone", n->label()));
        mask_nodes.insert(mask_nodes.begin(), n);
        s = n->inputs[*score_side];
        user = n;
    }
    a->softmax = &sm;
    a->out_mm = out;
    a->v = out->inputs[1];
    a->out = out->outputs[0];
    a->mask_nodes = mask_nodes;
    a->removed.insert(a->removed.end(), mask_nodes.begin(), mask_nodes.end());
    for (const ir::Node* n : {&sm, isnan, where, out})
        if (n) a->removed.push_back(n);
    // Shapes: q [B,H,Sq,D], kᵀ [B,Hk,D,Sk], v [B,Hk,Sk,D].
    const Shape &q = g.value(a->q).shape, &kt = g.value(a->kt).shape, &v = g.value(a->v).shape;
    if (q.size() != 4 || kt.size() != 4 || v.size() != 4 || kt[0] != q[0] || v[0] != q[0] || kt[1] != v[1] ||
        q[1] % kt[1] != 0 || kt[2] != q[3] || v[3] != q[3] || v[2] != kt[3] || sv.shape != Shape({q[0], q[1], q[2], kt[3]}))
        return fail(fmt::format("q {}, k^T {}, v {} are not [B,H,Sq,D], [B,Hk,D,Sk], [B,Hk,Sk,D]", shape_str(q), shape_str(kt),
                                shape_str(v)));
    const DType dt = g.value(a->q).dtype;
    if (g.value(a->kt).dtype != dt || g.value(a->v).dtype != dt) return fail("q, k and v differ in element type");
    return a;
}

}  // namespace stof::passes
