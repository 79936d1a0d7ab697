// fuse-attention: every exported spelling of scaled dot-product attention
// becomes one SparseAttention node (compiler/ops/attention.cpp).
//
// Matched, from the Softmax (last axis) outward:
//   scores  MatMul(q', kᵀ') with q' = q·c1 and kᵀ' = kᵀ·c2 optional scalar
//           constant factors, then an optional ·c3 or /c3 on the scores
//           (scale = c1·c2·c3, or /c3);
//   mask    up to four Add(x, M) / Where(C, x, F) / Where(C, F, x) between
//           the scores x and the Softmax (M, C, F: the mask side, which no
//           MatMul feeds);
//   output  Softmax → optional Where(IsNaN(p), 0, p) → MatMul(p, v).
// q [B,H,Sq,D], kᵀ [B,Hk,D,Sk], v [B,Hk,Sk,D]; every intermediate value has no
// other consumer. The mask side must depend on constants and at most one graph
// input: [B,Sk] (a padding mask) or [1|B,1|H,Sq,Sk] (a full mask, converted to
// the sparse format on the GPU every run). Its meaning is found by evaluating
// it with the reference interpreter, the input all ones, the scores replaced by
// 0 and by 1: where both results are <= -1e4 the key is masked, where they
// differ by 1 the first is an additive bias (masked too when <= -1e4), anything
// else is no mask. Then two random 0/1 inputs must give exactly that pattern and
// bias with the entries at their zeros masked (nonzero = keep). Otherwise the
// attention is left as it is (logged).
// `--mask SPEC` (PassOptions::masks) is intersected with what the graph computes.
//
// Operands are read in place: q, k and v are traced back through layout ops
// (Reshape, Transpose, Unsqueeze, Squeeze, Flatten, Expand; Split, Slice and
// scalar Gather, which pick heads) to the farthest value they are heads of a
// [B,S,Ht,D] or [B,Ht,S,D] view of (the projection before the head split, one
// fused QKV projection, the KV heads before a grouped-query repeat), and an
// output that only a [0,2,1,3] Transpose reads is written as [B,S,H,D] in its
// place (attributes layout, heads, kv_heads, head_offsets:
// ops/attention_layout.hpp).
#include "interp/interpreter.hpp"
#include "mask/mask_eval.hpp"
#include "mask/mask_file.hpp"
#include "mask/mask_spec.hpp"
#include "ops/attention_layout.hpp"
#include "passes/passes.hpp"
#include "stof/error.hpp"
#include "stof/plan_format.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>

namespace stof::passes {

namespace {

using ir::Op;
using ir::ValueId;

constexpr double kMasked = -1e4;  // additive terms at or below this remove the key
constexpr int kMaxMaskNodes = 4;  // Add / Where nodes between the scores and the Softmax

struct Match {
    int softmax = -1, isnan = -1, where = -1, out_mm = -1, score_mm = -1;
    std::vector<int> removed;  // nodes replaced by the fused node
    ValueId q = ir::kNoValue, kt = ir::kNoValue, v = ir::kNoValue, out = ir::kNoValue;
    ValueId scores = ir::kNoValue;  // the (scaled) scores the mask nodes combine with
    std::vector<int> mask_nodes;    // Add / Where nodes from the scores' consumer to the Softmax's input
    double scale = 1;
};

struct Context {
    ir::Graph& g;
    std::vector<int> producer;
    std::vector<std::vector<int>> consumers;

    explicit Context(ir::Graph& graph) : g(graph) { refresh(); }
    void refresh() {
        producer = g.producers();
        consumers.assign(g.values.size(), {});
        for (size_t i = 0; i < g.nodes.size(); ++i)
            for (ValueId v : g.nodes[i].inputs)
                if (v != ir::kNoValue) consumers[static_cast<size_t>(v)].push_back(static_cast<int>(i));
    }
    const ir::Node* prod(ValueId v) const {
        const int p = producer[static_cast<size_t>(v)];
        return p < 0 ? nullptr : &g.nodes[static_cast<size_t>(p)];
    }
    // Only `node` reads v, and v is no graph output.
    bool sole_use(ValueId v, int node) const {
        for (ValueId o : g.outputs)
            if (o == v) return false;
        const auto& c = consumers[static_cast<size_t>(v)];
        return c.size() == 1 && c[0] == node;
    }
    std::optional<double> scalar(ValueId v) const {
        const ir::Value& val = g.value(v);
        if (!val.data || val.data->numel() != 1 || !is_float(val.dtype)) return std::nullopt;
        return val.data->get_f64(0);
    }
    // Whether a MatMul or Gemm computes v (depth-first, stops at the first one).
    bool reaches_matmul(ValueId v) const {
        std::vector<char> seen(g.values.size(), 0);
        std::vector<ValueId> work{v};
        while (!work.empty()) {
            const ValueId x = work.back();
            work.pop_back();
            if (seen[static_cast<size_t>(x)]) continue;
            seen[static_cast<size_t>(x)] = 1;
            const ir::Node* p = prod(x);
            if (!p) continue;
            if (p->op == Op::MatMul || p->op == Op::Gemm) return true;
            for (ValueId in : p->inputs)
                if (in != ir::kNoValue) work.push_back(in);
        }
        return false;
    }
};

// Peels x = y·c / c·y / y/c (c a scalar constant, x used only by `user`).
ValueId peel_scale(const Context& cx, ValueId x, int user, double& scale, std::vector<int>& removed) {
    const int p = cx.producer[static_cast<size_t>(x)];
    if (p < 0 || !cx.sole_use(x, user)) return x;
    const ir::Node& n = cx.g.nodes[static_cast<size_t>(p)];
    if (n.op != Op::Mul && n.op != Op::Div) return x;
    for (int side = 0; side < 2; ++side) {
        if (n.op == Op::Div && side == 0) {
            if (auto c = cx.scalar(n.inputs[1])) {
                scale /= *c;
                removed.push_back(p);
                return n.inputs[0];
            }
            return x;
        }
        if (auto c = cx.scalar(n.inputs[static_cast<size_t>(1 - side)])) {
            scale *= *c;
            removed.push_back(p);
            return n.inputs[static_cast<size_t>(side)];
        }
    }
    return x;
}

// The score MatMul behind `x` (through one scale), or nothing.
std::optional<Match> match_scores(const Context& cx, ValueId x, int user) {
    Match m;
    const ValueId s = peel_scale(cx, x, user, m.scale, m.removed);
    const int p = cx.producer[static_cast<size_t>(s)];
    const int s_user = s == x ? user : m.removed.back();
    if (p < 0 || cx.g.nodes[static_cast<size_t>(p)].op != Op::MatMul || !cx.sole_use(s, s_user)) return std::nullopt;
    m.score_mm = p;
    m.removed.push_back(p);
    const ir::Node& mm = cx.g.nodes[static_cast<size_t>(p)];
    m.q = peel_scale(cx, mm.inputs[0], p, m.scale, m.removed);
    m.kt = peel_scale(cx, mm.inputs[1], p, m.scale, m.removed);
    m.scores = x;
    return m;
}

std::optional<Match> match_at_softmax(const Context& cx, int si) {
    const ir::Node& sm = cx.g.nodes[static_cast<size_t>(si)];
    const ir::Value& sv = cx.g.value(sm.outputs[0]);
    const int64_t axis = sm.attrs.i("axis", -1);
    if (sv.shape.size() != 4 || (axis != -1 && axis != 3) || !is_float(sv.dtype)) return std::nullopt;
    // Output side.
    ValueId p = sm.outputs[0];
    int isnan = -1, where = -1;
    const auto& pc = cx.consumers[static_cast<size_t>(p)];
    if (pc.size() == 2) {
        for (int c : pc)
            if (cx.g.nodes[static_cast<size_t>(c)].op == Op::IsNaN) isnan = c;
        for (int c : pc)
            if (c != isnan && cx.g.nodes[static_cast<size_t>(c)].op == Op::Where) where = c;
        if (isnan < 0 || where < 0) return std::nullopt;
        const ir::Node& w = cx.g.nodes[static_cast<size_t>(where)];
        const auto zero = cx.scalar(w.inputs[1]);
        if (w.inputs[0] != cx.g.nodes[static_cast<size_t>(isnan)].outputs[0] || !zero || *zero != 0.0 || w.inputs[2] != p ||
            !cx.sole_use(w.inputs[0], where))
            return std::nullopt;
        p = w.outputs[0];
    } else if (pc.size() != 1) {
        return std::nullopt;
    }
    const auto& outc = cx.consumers[static_cast<size_t>(p)];
    if (outc.size() != 1 || !cx.sole_use(p, outc[0])) return std::nullopt;
    const ir::Node& out = cx.g.nodes[static_cast<size_t>(outc[0])];
    if (out.op != Op::MatMul || out.inputs[0] != p) return std::nullopt;

    // Input side: the scores, through up to kMaxMaskNodes Add / Where nodes.
    ValueId s = sm.inputs[0];
    int user = si;
    std::vector<int> mask_nodes;
    std::optional<Match> m;
    for (int depth = 0; !(m = match_scores(cx, s, user)); ++depth) {
        const int sp = cx.producer[static_cast<size_t>(s)];
        if (depth == kMaxMaskNodes || sp < 0 || !cx.sole_use(s, user)) return std::nullopt;
        const ir::Node& n = cx.g.nodes[static_cast<size_t>(sp)];
        std::vector<size_t> sides;
        if (n.op == Op::Add) sides = {0, 1};
        else if (n.op == Op::Where) sides = {1, 2};
        else return std::nullopt;
        // The score side is the one a MatMul feeds; the other inputs are the mask side.
        std::optional<size_t> score_side;
        for (size_t k : sides)
            if (cx.reaches_matmul(n.inputs[k])) {
                if (score_side || n.inputs[k] == n.inputs[sides[0] == k ? sides[1] : sides[0]]) return std::nullopt;
                score_side = k;
            }
        if (!score_side || (n.op == Op::Where && cx.reaches_matmul(n.inputs[0]))) return std::nullopt;
        mask_nodes.insert(mask_nodes.begin(), sp);
        s = n.inputs[*score_side];
        user = sp;
    }
    m->softmax = si;
    m->isnan = isnan;
    m->where = where;
    m->out_mm = outc[0];
    m->v = out.inputs[1];
    m->out = out.outputs[0];
    m->mask_nodes = mask_nodes;
    for (int n : mask_nodes) m->removed.push_back(n);
    for (int n : {si, isnan, where, outc[0]})
        if (n >= 0) m->removed.push_back(n);
    // Shapes: q [B,H,Sq,D], kᵀ [B,Hk,D,Sk], v [B,Hk,Sk,D].
    const Shape &q = cx.g.value(m->q).shape, &kt = cx.g.value(m->kt).shape, &v = cx.g.value(m->v).shape;
    if (q.size() != 4 || kt.size() != 4 || v.size() != 4 || kt[0] != q[0] || v[0] != q[0] || kt[1] != v[1] ||
        q[1] % kt[1] != 0 || kt[2] != q[3] || v[3] != q[3] || v[2] != kt[3] || sv.shape != Shape({q[0], q[1], q[2], kt[3]}))
        return std::nullopt;
    const DType dt = cx.g.value(m->q).dtype;
    if (cx.g.value(m->kt).dtype != dt || cx.g.value(m->v).dtype != dt) return std::nullopt;
    return m;
}

// ---- the mask side ----------------------------------------------------------

// What the mask nodes mean: keep pattern, bias, padding input.
struct MaskMeaning {
    std::optional<Tensor> keep;  // bool [1|B,1|H,Sq,Sk]
    std::optional<Tensor> bias;  // f32 [1|B,1|H,Sq,Sk]
    ValueId padding = ir::kNoValue;  // [B,Sk] input
    ValueId full = ir::kNoValue;     // [1|B,1|H,Sq,Sk] input
    std::string why_not;         // non-empty: the mask cannot be expressed
};

// `t` ([..., Sq, Sk], rank <= 4, broadcastable) as doubles of shape [b, h, Sq, Sk].
std::vector<double> expand4(const Tensor& t, int64_t b, int64_t h, int64_t sq, int64_t sk) {
    Shape s(4 - std::min<size_t>(4, t.shape.size()), 1);
    s.insert(s.end(), t.shape.begin(), t.shape.end());
    std::vector<double> r(static_cast<size_t>(b * h * sq * sk));
    for (int64_t x = 0; x < b; ++x)
        for (int64_t y = 0; y < h; ++y)
            for (int64_t i = 0; i < sq; ++i)
                for (int64_t j = 0; j < sk; ++j) {
                    const int64_t at = (((s[0] == 1 ? 0 : x) * s[1] + (s[1] == 1 ? 0 : y)) * s[2] + (s[2] == 1 ? 0 : i)) * s[3] +
                                       (s[3] == 1 ? 0 : j);
                    r[static_cast<size_t>(((x * h + y) * sq + i) * sk + j)] = t.get_f64(at);
                }
    return r;
}

// [b,h,Sq,Sk] values as a tensor, with batch and head dims collapsed to 1 where
// every slice is equal.
Tensor collapse(const std::vector<double>& a, DType dt, int64_t b, int64_t h, int64_t sq, int64_t sk) {
    const int64_t plane = sq * sk;
    auto same = [&](int64_t x0, int64_t y0, int64_t x1, int64_t y1) {
        for (int64_t k = 0; k < plane; ++k)
            if (a[static_cast<size_t>((x0 * h + y0) * plane + k)] != a[static_cast<size_t>((x1 * h + y1) * plane + k)]) return false;
        return true;
    };
    bool batch_same = true, head_same = true;
    for (int64_t x = 1; x < b && batch_same; ++x)
        for (int64_t y = 0; y < h && batch_same; ++y) batch_same = same(x, y, 0, y);
    for (int64_t y = 1; y < h && head_same; ++y)
        for (int64_t x = 0; x < b && head_same; ++x) head_same = same(x, y, x, 0);
    const int64_t ob = batch_same ? 1 : b, oh = head_same ? 1 : h;
    Tensor t(dt, {ob, oh, sq, sk});
    for (int64_t x = 0; x < ob; ++x)
        for (int64_t y = 0; y < oh; ++y)
            for (int64_t k = 0; k < plane; ++k) {
                const double v = a[static_cast<size_t>((x * h + y) * plane + k)];
                if (dt == DType::boolean) t.set_i64((x * oh + y) * plane + k, v != 0);
                else t.set_f64((x * oh + y) * plane + k, v);
            }
    return t;
}

// The mask nodes as text with the sizes: ops, attributes and inputs, an input
// being the scores, an earlier mask node's result, a constant (type, shape,
// checksum), a graph input (its name) or, recursively, the node computing it.
// Layers with equal keys have equal mask meanings, also where each layer
// recomputes the same mask from the padding input.
std::string mask_key(const ir::Graph& g, const Context& cx, const Match& m, int64_t B, int64_t H, int64_t Sq, int64_t Sk) {
    std::map<ValueId, std::string> memo;
    for (size_t i = 0; i < m.mask_nodes.size(); ++i)
        memo[g.nodes[static_cast<size_t>(m.mask_nodes[i])].outputs[0]] = fmt::format("t{}", i);
    memo[m.scores] = "s";
    std::function<std::string(ValueId)> text = [&](ValueId v) -> std::string {
        if (v == ir::kNoValue) return "-";
        if (auto it = memo.find(v); it != memo.end()) return it->second;
        std::string r;
        const ir::Value& x = g.value(v);
        if (x.data) {
            r = fmt::format("c{}{}:{:08x}", dtype_name(x.dtype), shape_str(x.shape), plan::checksum(x.data->bytes.data(), x.data->bytes.size()));
        } else if (const ir::Node* n = cx.prod(v)) {
            r = fmt::format("{}(", ir::op_name(n->op));
            for (const auto& [name, value] : n->attrs.all()) r += name + "=" + ir::attr_str(value) + ";";
            for (ValueId in : n->inputs) r += text(in) + ",";
            const auto out = std::find(n->outputs.begin(), n->outputs.end(), v) - n->outputs.begin();
            r += fmt::format(")#{}", out);
        } else {
            r = "in:" + x.name;
        }
        return memo[v] = r;
    };
    std::string k = fmt::format("{}x{}x{}x{}", B, H, Sq, Sk);
    for (int n : m.mask_nodes) {
        const ir::Node& node = g.nodes[static_cast<size_t>(n)];
        k += fmt::format("|{}(", ir::op_name(node.op));
        for (const auto& [name, value] : node.attrs.all()) k += name + "=" + ir::attr_str(value) + ";";
        for (ValueId in : node.inputs) k += text(in) + ",";
        k += ")";
    }
    return k;
}

MaskMeaning analyse_mask(const ir::Graph& g, const Match& m, int64_t B, int64_t H, int64_t Sq, int64_t Sk) {
    MaskMeaning r;
    if (m.mask_nodes.empty()) return r;
    // Which graph inputs does the mask side depend on?
    const std::vector<int> producer = g.producers();
    std::vector<char> seen(g.values.size(), 0);
    std::vector<ValueId> work, inputs;
    for (int n : m.mask_nodes)
        for (ValueId in : g.nodes[static_cast<size_t>(n)].inputs)
            if (in != ir::kNoValue && in != m.scores) work.push_back(in);
    while (!work.empty()) {
        const ValueId x = work.back();
        work.pop_back();
        if (seen[static_cast<size_t>(x)]) continue;
        seen[static_cast<size_t>(x)] = 1;
        const int p = producer[static_cast<size_t>(x)];
        if (p >= 0 && std::find(m.mask_nodes.begin(), m.mask_nodes.end(), p) != m.mask_nodes.end()) continue;
        if (p >= 0) {
            for (ValueId in : g.nodes[static_cast<size_t>(p)].inputs)
                if (in != ir::kNoValue) work.push_back(in);
        } else if (!g.value(x).data) {
            inputs.push_back(x);
        }
    }
    if (inputs.size() > 1) {
        r.why_not = "the mask depends on more than one model input";
        return r;
    }
    const ValueId input = inputs.empty() ? ir::kNoValue : inputs[0];
    ValueId pad = input, full = ir::kNoValue;
    if (input != ir::kNoValue && g.value(input).shape != Shape({B, Sk})) {
        const Shape& s = g.value(input).shape;
        if (s.size() != 4 || (s[0] != 1 && s[0] != B) || (s[1] != 1 && s[1] != H) || s[2] != Sq || s[3] != Sk) {
            r.why_not = "the mask depends on input '" + g.value(input).name +
                        "', which is neither a [batch, keys] padding mask nor a [1|batch, 1|heads, queries, keys] mask";
            return r;
        }
        full = input;
        pad = ir::kNoValue;
    }
    // The mask nodes alone, the scores replaced by a scalar input (the probe),
    // shapes inferred anew (so a [B,1,1,Sk] padding term stays that small).
    ir::Graph sub = g;
    const ir::Node& last = g.nodes[static_cast<size_t>(m.mask_nodes.back())];
    ir::Value probe_value;
    probe_value.name = sub.unique_name("attention_score_probe");
    probe_value.dtype = g.value(m.scores).dtype;
    probe_value.shape_known = true;
    const std::string probe_name = probe_value.name;
    const ValueId probe = sub.add_value(probe_value);
    sub.inputs.push_back(probe);
    for (int n : m.mask_nodes)
        for (ValueId& in : sub.nodes[static_cast<size_t>(n)].inputs)
            if (in == m.scores) in = probe;
    sub.outputs = {last.outputs[0]};
    eliminate_dead_code(sub, {});
    infer_shapes(sub, {});
    const std::string out_name = g.value(last.outputs[0]).name;
    Shape rs = sub.value(sub.outputs[0]).shape;
    rs.insert(rs.begin(), 4 - std::min<size_t>(4, rs.size()), 1);
    if (rs.size() != 4 || (rs[0] != 1 && rs[0] != B) || (rs[1] != 1 && rs[1] != H)) {
        r.why_not = "the mask of shape " + shape_str(rs) + " does not broadcast to the scores";
        return r;
    }
    const int64_t mb = rs[0], mh = rs[1];
    // Evaluated for one padding: the additive equivalent, -inf where masked; nullopt when
    // the scores are not combined with the mask additively.
    auto evaluate = [&](const std::vector<uint8_t>& valid) -> std::optional<std::vector<double>> {
        TensorMap feeds;
        for (ValueId in : sub.inputs) {
            const ir::Value& v = sub.value(in);
            Tensor t(v.dtype, v.shape);
            if (input != ir::kNoValue && v.name == g.value(input).name)
                for (int64_t k = 0; k < t.numel(); ++k) t.set_i64(k, valid[static_cast<size_t>(k)]);
            feeds[v.name] = std::move(t);
        }
        std::vector<double> at[2];
        for (int s = 0; s < 2; ++s) {
            feeds[probe_name].set_f64(0, s);
            at[s] = expand4(interpret(sub, feeds).at(out_name), mb, mh, Sq, Sk);
        }
        std::vector<double> eq(at[0].size());
        for (size_t k = 0; k < eq.size(); ++k) {
            const double m0 = at[0][k], m1 = at[1][k];
            if (m0 <= kMasked && m1 <= kMasked) eq[k] = -std::numeric_limits<double>::infinity();
            else if (std::abs(m1 - m0 - 1) <= 4e-3 * std::max(1.0, std::abs(m0))) eq[k] = m0;  // fp16 models too
            else return std::nullopt;
        }
        return eq;
    };
    const int64_t input_size = input == ir::kNoValue ? 0 : numel(g.value(input).shape);
    const auto base = evaluate(std::vector<uint8_t>(static_cast<size_t>(input_size), 1));
    if (!base) {
        r.why_not = "the scores are not combined with the mask by addition or selection";
        return r;
    }
    std::vector<double> keep(base->size()), bias(base->size());
    bool any_masked = false, any_bias = false;
    for (size_t k = 0; k < base->size(); ++k) {
        keep[k] = (*base)[k] > kMasked;
        bias[k] = keep[k] != 0 ? (*base)[k] : 0.0;
        any_masked = any_masked || keep[k] == 0;
        any_bias = any_bias || bias[k] != 0;
    }
    if (pad != ir::kNoValue) {
        if (mb != B) {
            r.why_not = "the mask does not vary over batch with input '" + g.value(pad).name + "'";
            return r;
        }
        std::mt19937_64 rng(0x5eed);
        for (int probe_run = 0; probe_run < 2; ++probe_run) {
            std::vector<uint8_t> valid(static_cast<size_t>(B * Sk));
            for (auto& x : valid) x = static_cast<uint8_t>(rng() & 1);
            const auto got = evaluate(valid);
            const int64_t per_batch = mh * Sq * Sk;
            for (int64_t b = 0; b < B && got; ++b)
                for (int64_t k = 0; k < per_batch; ++k) {
                    const size_t at = static_cast<size_t>(b * per_batch + k);
                    const bool kept = keep[at] != 0 && valid[static_cast<size_t>(b * Sk + k % Sk)] != 0;
                    const double x = (*got)[at], want = (*base)[at];
                    const bool ok = kept ? std::abs(x - want) <= 1e-6 * std::max(1.0, std::abs(want)) : x <= kMasked;
                    if (!ok) {
                        r.why_not = "the mask is not a key padding mask of input '" + g.value(pad).name + "'";
                        return r;
                    }
                }
            if (!got) {
                r.why_not = "the scores are not combined with the mask by addition or selection";
                return r;
            }
        }
        r.padding = pad;
    }
    if (full != ir::kNoValue) {
        const Shape& fs = g.value(full).shape;
        if ((fs[0] != 1 && mb != B) || (fs[1] != 1 && mh != H)) {
            r.why_not = "the mask does not vary like input '" + g.value(full).name + "'";
            return r;
        }
        std::mt19937_64 rng(0x5eed);
        for (int probe_run = 0; probe_run < 2; ++probe_run) {
            std::vector<uint8_t> valid(static_cast<size_t>(input_size));
            for (auto& x : valid) x = static_cast<uint8_t>(rng() & 1);
            const auto got = evaluate(valid);
            if (!got) {
                r.why_not = "the scores are not combined with the mask by addition or selection";
                return r;
            }
            for (int64_t b = 0; b < mb; ++b)
                for (int64_t h = 0; h < mh; ++h)
                    for (int64_t ij = 0; ij < Sq * Sk; ++ij) {
                        const size_t at = static_cast<size_t>((b * mh + h) * Sq * Sk + ij);
                        const int64_t in_at = ((fs[0] == 1 ? 0 : b) * fs[1] + (fs[1] == 1 ? 0 : h)) * Sq * Sk + ij;
                        const bool kept = keep[at] != 0 && valid[static_cast<size_t>(in_at)] != 0;
                        const double x = (*got)[at], want = (*base)[at];
                        if (!(kept ? std::abs(x - want) <= 1e-6 * std::max(1.0, std::abs(want)) : x <= kMasked)) {
                            r.why_not = "the mask is not the nonzero entries of input '" + g.value(full).name + "'";
                            return r;
                        }
                    }
        }
        r.full = full;
    }
    if (any_masked) r.keep = collapse(keep, DType::boolean, mb, mh, Sq, Sk);
    if (any_bias) r.bias = collapse(bias, DType::f32, mb, mh, Sq, Sk);
    return r;
}

// ---- operands read in place -------------------------------------------------

// A strided view of a contiguous value: per dim, (size, stride) sub-dims,
// outermost first, size-1 sub-dims left out (so a size-1 dim has none), from
// element `offset` on.
struct Sub {
    int64_t size, stride;
};
struct View {
    std::vector<std::vector<Sub>> dims;
    int64_t offset = 0;
};

View contiguous_view(const Shape& s) {
    View v;
    v.dims.resize(s.size());
    int64_t stride = 1;
    for (size_t i = s.size(); i-- > 0;) {
        if (s[i] != 1) v.dims[i] = {{s[i], stride}};
        stride *= s[i];
    }
    return v;
}

// Adjacent sub-dims that step like one merged.
void normalize(View& v) {
    for (auto& d : v.dims) {
        std::vector<Sub> r;
        for (const Sub& s : d) {
            if (!r.empty() && r.back().stride == s.stride * s.size) {
                r.back() = {r.back().size * s.size, s.stride};
            } else {
                r.push_back(s);
            }
        }
        d = std::move(r);
    }
}

// v read row-major as `shape`; nullopt when a sub-dim would have to be cut unevenly.
std::optional<View> reshape_view(const View& v, const Shape& shape) {
    std::deque<Sub> subs;
    for (const auto& d : v.dims) subs.insert(subs.end(), d.begin(), d.end());
    View r;
    r.offset = v.offset;
    r.dims.resize(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) {
        int64_t left = shape[i];
        while (left > 1) {
            if (subs.empty()) return std::nullopt;
            Sub& s = subs.front();
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

// Dim `axis` of v narrowed to [start, start + size); nullopt unless it is one sub-dim.
std::optional<View> narrow(View v, size_t axis, int64_t start, int64_t size) {
    if (axis >= v.dims.size()) return std::nullopt;
    auto& d = v.dims[axis];
    if (d.size() != 1 || start < 0 || start + size > d[0].size) return std::nullopt;
    v.offset += start * d[0].stride;
    d = size == 1 ? std::vector<Sub>{} : std::vector<Sub>{{size, d[0].stride}};
    return v;
}

// One layout step: node `n`, whose output `output` the chain continues with.
struct LayoutStep {
    const ir::Node* n;
    size_t output;
};

// The view after a layout step (data input 0), or nullopt.
std::optional<View> apply_layout(const ir::Graph& g, const LayoutStep& step, const View& v) {
    const ir::Node& n = *step.n;
    const Shape& in = g.value(n.inputs[0]).shape;
    const Shape& out = g.value(n.outputs[step.output]).shape;
    auto axis_of = [&](int64_t a) { return static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(in.size()) : a); };
    std::optional<View> r;
    switch (n.op) {
        case Op::Reshape: case Op::Unsqueeze: case Op::Squeeze: case Op::Flatten: case Op::Identity:
            r = reshape_view(v, out);
            break;
        case Op::Transpose: {
            const size_t rank = v.dims.size();
            std::vector<int64_t> perm(rank);
            for (size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(rank - 1 - d);
            perm = n.attrs.ints("perm", perm);
            if (perm.size() != rank) return std::nullopt;
            View t;
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
            View t;
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
            for (size_t k = 0; k < step.output; ++k) start += g.value(n.outputs[k]).shape[axis];
            r = narrow(v, axis, start, out[axis]);
            break;
        }
        case Op::Slice: {
            // Constant starts / ends / axes, steps of 1.
            const Tensor* starts = g.value(n.inputs[1]).data.get();
            const Tensor* axes = n.inputs.size() > 3 && n.inputs[3] != ir::kNoValue ? g.value(n.inputs[3]).data.get() : nullptr;
            const Tensor* steps = n.inputs.size() > 4 && n.inputs[4] != ir::kNoValue ? g.value(n.inputs[4]).data.get() : nullptr;
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

bool is_layout_op(Op op) {
    return op == Op::Reshape || op == Op::Unsqueeze || op == Op::Squeeze || op == Op::Flatten || op == Op::Identity ||
           op == Op::Transpose || op == Op::Expand || op == Op::Split || op == Op::Slice || op == Op::Gather;
}

// An operand read in place: heads [head_offset, head_offset + heads) of
// `source` viewed with `layout` as tensor_heads heads.
struct InPlace {
    ValueId source = ir::kNoValue;
    char layout = 'h';
    int64_t heads = 0, tensor_heads = 0, head_offset = 0;
};

// Whether view v of `source` is operand dims (b, h, s, d) = v's dims `order`
// with B, H, S, D sizes, as heads of a contiguous [B,S,Ht,D] or [B,Ht,S,D]
// (source head h / (H / Hk) for operand head h). need_heads: the Hk wanted,
// or 0 for any.
std::optional<InPlace> classify(const View& v, const std::array<int, 4>& order, const ir::Value& source, int64_t B,
                                int64_t H, int64_t S, int64_t D, int64_t need_heads) {
    const auto& db = v.dims[static_cast<size_t>(order[0])];
    const auto& dh = v.dims[static_cast<size_t>(order[1])];
    const auto& ds = v.dims[static_cast<size_t>(order[2])];
    const auto& dd = v.dims[static_cast<size_t>(order[3])];
    // The stride of a dim that is one sub-dim of `size`; -1 for a size-1 dim (any stride).
    auto single = [](const std::vector<Sub>& d, int64_t size) -> std::optional<int64_t> {
        if (size == 1) return d.empty() ? std::optional<int64_t>(-1) : std::nullopt;
        if (d.size() == 1 && d[0].size == size) return d[0].stride;
        return std::nullopt;
    };
    const auto sb = single(db, B), ss = single(ds, S), sd = single(dd, D);
    if (!sb || !ss || !sd || (D > 1 && *sd != 1)) return std::nullopt;
    int64_t hk = H;
    std::optional<int64_t> sh = single(dh, H);
    if (!sh && dh.size() == 2 && dh[1].stride == 0 && dh[0].size * dh[1].size == H) {
        hk = dh[0].size;
        sh = dh[0].stride;
    } else if (!sh && dh.size() == 1 && dh[0].stride == 0 && dh[0].size == H) {
        hk = 1;
        sh = -1;
    }
    if (!sh || (need_heads && hk != need_heads)) return std::nullopt;
    const int64_t n = numel(source.shape);
    if (n % (B * S * D) != 0) return std::nullopt;
    const int64_t ht = n / (B * S * D);
    for (char layout : {'h', 's'}) {
        const ir::AttentionStrides c = ir::attention_strides({B, ht, S, D}, layout);
        auto fits = [](std::optional<int64_t> got, int64_t want) { return *got == -1 || *got == want; };
        if (!fits(sb, c.b) || !(hk == 1 || fits(sh, c.h)) || !fits(ss, c.s) || v.offset % c.h != 0) continue;
        const int64_t first = v.offset / c.h;
        if (first + hk <= ht) return InPlace{ir::kNoValue, layout, hk, ht, first};
    }
    return std::nullopt;
}

// The farthest value along the layout ops behind `x` that x is an in-place view
// of (see classify; `order` maps x's dims to b, h, s, d), or nullopt.
std::optional<InPlace> trace_operand(const Context& cx, ValueId x, const std::array<int, 4>& order, int64_t B, int64_t H,
                                     int64_t S, int64_t D, int64_t need_heads) {
    std::vector<ValueId> chain{x};  // chain[k + 1] is the data input of steps[k]'s node
    std::vector<LayoutStep> steps;
    for (const ir::Node* p = cx.prod(x); p && is_layout_op(p->op) && chain.size() < 16; p = cx.prod(chain.back())) {
        bool constant_args = true;
        for (size_t k = 1; k < p->inputs.size(); ++k)
            constant_args = constant_args && (p->inputs[k] == ir::kNoValue || cx.g.value(p->inputs[k]).data);
        if (!constant_args || cx.g.value(p->inputs[0]).data) break;
        const size_t output = static_cast<size_t>(
            std::find(p->outputs.begin(), p->outputs.end(), chain.back()) - p->outputs.begin());
        steps.push_back({p, output});
        chain.push_back(p->inputs[0]);
    }
    for (size_t far = chain.size(); far-- > 0;) {
        std::optional<View> v = contiguous_view(cx.g.value(chain[far]).shape);
        for (size_t k = far; k-- > 0 && v;) v = apply_layout(cx.g, steps[k], *v);
        if (!v || v->dims.size() != 4) continue;
        if (auto r = classify(*v, order, cx.g.value(chain[far]), B, H, S, D, need_heads)) {
            r->source = chain[far];
            return r;
        }
    }
    return std::nullopt;
}

// --mask [LAYERS=]SPEC: the spec for attention layer `layer`, or nullopt.
std::optional<std::string> spec_for_layer(const std::vector<std::string>& masks, int layer) {
    std::optional<std::string> found;
    for (const std::string& m : masks) {
        const size_t eq = m.find('=');
        const size_t colon = m.find(':');
        if (eq == std::string::npos || (colon != std::string::npos && colon < eq)) {
            found = m;
            continue;
        }
        const std::string range = m.substr(0, eq);
        const size_t dash = range.find('-');
        int lo = 0, hi = 0;
        try {
            size_t used = 0;
            lo = std::stoi(range.substr(0, dash), &used);
            STOF_CHECK(used == (dash == std::string::npos ? range.size() : dash), "");
            hi = dash == std::string::npos ? lo : std::stoi(range.substr(dash + 1), &used);
            STOF_CHECK(dash == std::string::npos || used == range.size() - dash - 1, "");
        } catch (const std::exception&) {
            STOF_FAIL("--mask {}: '{}' is no layer range (use N or N-M, e.g. 0-5=sliding:64)", m, range);
        }
        STOF_CHECK(lo >= 0 && lo <= hi, "--mask {}: empty layer range {}", m, range);
        if (layer >= lo && layer <= hi) found = m.substr(eq + 1);
    }
    return found;
}

// The keep mask of `spec_text` & `model_keep` (null: keeps all) as a bool
// [Bm, Hm, Sq, Sk], Bm and Hm the broadcast of the model's mask and the spec's files.
Tensor intersect_spec(const std::string& spec_text, const Tensor* model_keep, int64_t B, int64_t H, int64_t Sq, int64_t Sk) {
    MaskSpec spec = parse_mask_spec(spec_text);
    load_mask_files(spec, Sq, Sk, H, B);
    const auto [fb, fh] = mask_pattern_dims(spec);
    const Shape ms = model_keep ? model_keep->shape : Shape{1, 1, Sq, Sk};
    const Shape ks{std::max(ms[0], fb), std::max(ms[1], fh), Sq, Sk};
    Tensor keep(DType::boolean, ks);
    for (int64_t x = 0; x < ks[0]; ++x)
        for (int64_t y = 0; y < ks[1]; ++y)
            for (int64_t i = 0; i < Sq; ++i)
                for (int64_t j = 0; j < Sk; ++j) {
                    bool k = eval_keep(spec, i, j, Sk, x, y);
                    if (k && model_keep)
                        k = model_keep->get_i64((((ms[0] == 1 ? 0 : x) * ms[1] + (ms[1] == 1 ? 0 : y)) * Sq + i) * Sk + j) != 0;
                    keep.set_i64(((x * ks[1] + y) * Sq + i) * Sk + j, k);
                }
    return keep;
}

// A node name no node has yet.
std::string unique_node_name(const ir::Graph& g, const std::string& hint) {
    std::set<std::string> used;
    for (const ir::Node& n : g.nodes) used.insert(n.name);
    std::string name = hint;
    for (int k = 1; used.count(name); ++k) name = hint + "_" + std::to_string(k);
    return name;
}

}  // namespace

void fuse_attention(ir::Graph& g, const PassOptions& opt) {
    for (const std::string& m : opt.masks) spec_for_layer({m}, 0);  // reject malformed ranges up front
    Context cx(g);
    int layer = 0;
    std::set<std::string> rejected;  // Softmax nodes already found unfusable
    std::map<ValueId, ValueId> valid_keys;  // mask input -> the bool the attention nodes read
    std::map<std::string, MaskMeaning> meanings;  // mask_key -> what the mask nodes mean
    std::map<std::string, ValueId> constants;     // mask_key and --mask text -> the keep / bias constant
    std::map<std::string, Tensor> spec_keeps;     // mask_key and --mask text -> the model's keep & the spec
    for (size_t si = 0; si < g.nodes.size(); ++si) {
        if (g.nodes[si].op != Op::Softmax || rejected.count(g.nodes[si].name)) continue;
        const std::optional<Match> m = match_at_softmax(cx, static_cast<int>(si));
        if (!m) continue;
        const Shape& q = g.value(m->q).shape;
        const int64_t B = q[0], H = q[1], Sq = q[2], D = q[3], Sk = g.value(m->kt).shape[3];
        // Layers usually share their mask: evaluated once, its constants added once.
        const std::string key = mask_key(g, cx, *m, B, H, Sq, Sk);
        auto known = meanings.find(key);
        if (known == meanings.end()) {
            if (Sq * Sk >= (int64_t{1} << 22)) spdlog::info("evaluating the attention mask of {} ({}x{})", g.nodes[si].label(), Sq, Sk);
            known = meanings.emplace(key, analyse_mask(g, *m, B, H, Sq, Sk)).first;
        }
        MaskMeaning mean = known->second;
        if (!mean.why_not.empty()) {
            spdlog::info("attention at {} left unfused: {}", g.nodes[si].label(), mean.why_not);
            rejected.insert(g.nodes[si].name);
            continue;
        }
        std::string description = mean.keep ? "from the model" : "dense";
        if (mean.full != ir::kNoValue) description = "input '" + g.value(mean.full).name + "'" + (mean.keep ? " & the model's" : "");
        if (const auto spec_text = spec_for_layer(opt.masks, layer)) {
            auto [it, fresh] = spec_keeps.try_emplace(key + "|" + *spec_text);
            if (fresh) it->second = intersect_spec(*spec_text, mean.keep ? &*mean.keep : nullptr, B, H, Sq, Sk);
            description = (mean.full != ir::kNoValue ? description : mean.keep ? "from the model" : "") +
                          (mean.full != ir::kNoValue || mean.keep ? " & " : "") + *spec_text;
            mean.keep = it->second;
        }

        // Operands in place where the layout ops before them allow; k and v with
        // the same KV heads (else both with all H heads).
        const ir::Node& out_mm = g.nodes[static_cast<size_t>(m->out_mm)];
        const std::string base = out_mm.name;
        const std::array<int, 4> bhsd{0, 1, 2, 3}, bhds{0, 1, 3, 2};
        // (The operands' own KV heads Hx are H, or 1 when the MatMuls broadcast them.)
        const int64_t Hx = g.value(m->v).shape[1];
        InPlace qi = trace_operand(cx, m->q, bhsd, B, H, Sq, D, H).value_or(InPlace{m->q, 'h', H, H, 0});
        std::optional<InPlace> ki = trace_operand(cx, m->kt, bhds, B, Hx, Sk, D, 0);
        std::optional<InPlace> vi = trace_operand(cx, m->v, bhsd, B, Hx, Sk, D, 0);
        if (!ki || !vi || ki->heads != vi->heads) {
            ki = trace_operand(cx, m->kt, bhds, B, Hx, Sk, D, Hx);
            vi = trace_operand(cx, m->v, bhsd, B, Hx, Sk, D, Hx).value_or(InPlace{m->v, 'h', Hx, Hx, 0});
        }
        std::vector<ir::Node> added;  // placed before the fused node
        auto add_node = [&](Op op, ValueId in, const Shape& shape, const std::string& hint, ir::Attrs attrs) {
            ir::Value val;
            val.name = g.unique_name(base + "_" + hint);
            val.dtype = g.value(in).dtype;
            val.shape = shape;
            val.shape_known = true;
            ir::Node n;
            n.op = op;
            n.name = unique_node_name(g, val.name);
            n.outputs = {g.add_value(val)};
            n.inputs = {in};
            n.attrs = std::move(attrs);
            if (op == Op::Reshape) {
                Tensor t(DType::i64, {static_cast<int64_t>(shape.size())});
                for (size_t k = 0; k < shape.size(); ++k) t.set_i64(static_cast<int64_t>(k), shape[k]);
                n.inputs.push_back(g.add_constant(t, val.name + "_shape"));
            }
            added.push_back(n);
            return n.outputs[0];
        };
        if (!ki) {
            ir::Attrs perm;
            perm.set("perm", std::vector<int64_t>{0, 1, 3, 2});
            const Shape& kts = g.value(m->kt).shape;
            const ValueId k = add_node(Op::Transpose, m->kt, {kts[0], kts[1], kts[3], kts[2]}, "k", perm);
            ki = InPlace{k, 'h', kts[1], kts[1], 0};
        }
        // Each source as the operands' 4-D shape (a Reshape: a view, no copy), named
        // after the operands it holds ("qkv" for a fused projection).
        struct Reshaped {
            std::string roles;
            ValueId value = ir::kNoValue;
        };
        std::map<std::pair<ValueId, Shape>, Reshaped> reshaped;
        const std::pair<const InPlace*, int64_t> operands[3] = {{&qi, Sq}, {&*ki, Sk}, {&*vi, Sk}};
        for (int i = 0; i < 3; ++i) {
            const InPlace& p = *operands[i].first;
            const Shape shape = ir::attention_shape({B, p.tensor_heads, operands[i].second, D}, p.layout);
            if (g.value(p.source).shape != shape) reshaped[{p.source, shape}].roles += "qkv"[i];
        }
        auto as_4d = [&](int i) {
            const InPlace& p = *operands[i].first;
            const Shape shape = ir::attention_shape({B, p.tensor_heads, operands[i].second, D}, p.layout);
            if (g.value(p.source).shape == shape) return p.source;
            Reshaped& r = reshaped.at({p.source, shape});
            if (r.value == ir::kNoValue) r.value = add_node(Op::Reshape, p.source, shape, r.roles, {});
            return r.value;
        };
        const ValueId qv = as_4d(0), k = as_4d(1), vv = as_4d(2);
        // The output: in place of a [0,2,1,3] Transpose that alone reads it.
        ValueId out = m->out;
        char o_layout = 'h';
        int drop_transpose = -1;
        const auto& oc = cx.consumers[static_cast<size_t>(m->out)];
        if (oc.size() == 1 && cx.sole_use(m->out, oc[0])) {
            const ir::Node& t = g.nodes[static_cast<size_t>(oc[0])];
            const bool graph_output = std::find(g.outputs.begin(), g.outputs.end(), t.outputs[0]) != g.outputs.end();
            if (t.op == Op::Transpose && t.attrs.ints("perm", {}) == std::vector<int64_t>{0, 2, 1, 3} && !graph_output) {
                out = t.outputs[0];
                o_layout = 's';
                drop_transpose = oc[0];
            }
        }

        ir::Node att;
        att.op = Op::SparseAttention;
        att.name = unique_node_name(g, base + "_attention");
        att.inputs = {qv, k, vv, ir::kNoValue, ir::kNoValue, ir::kNoValue};
        // An input the mask depends on, as the bool the kernels read (nonzero = keep), converted once for all layers.
        auto as_bool = [&](ValueId x) {
            ValueId& b = valid_keys.try_emplace(x, ir::kNoValue).first->second;
            if (b != ir::kNoValue) return b;
            if (g.value(x).dtype == DType::boolean) return b = x;
            ir::Attrs to;
            to.set("to", static_cast<int64_t>(DType::boolean));
            b = add_node(Op::Cast, x, g.value(x).shape, "keep", to);
            g.value(b).dtype = DType::boolean;
            return b;
        };
        // The keep and bias constants, shared by the layers whose mask and --mask are the same.
        auto constant = [&](const std::string& what, const Tensor& t) {
            const std::string ck = key + "|" + spec_for_layer(opt.masks, layer).value_or("") + "|" + what + dtype_name(t.dtype);
            auto [it, fresh] = constants.try_emplace(ck, ir::kNoValue);
            if (fresh) it->second = g.add_constant(t, base + "_" + what);
            return it->second;
        };
        if (mean.full != ir::kNoValue) {  // computed at run time: the input, and the constant pattern if any
            ValueId keep = as_bool(mean.full);
            if (mean.keep) {
                const Shape &fs = g.value(keep).shape, &cs = mean.keep->shape;
                keep = add_node(Op::And, keep, {std::max(fs[0], cs[0]), std::max(fs[1], cs[1]), Sq, Sk}, "kept", {});
                added.back().inputs.push_back(constant("keep", *mean.keep));
            }
            att.inputs[3] = keep;
        } else if (mean.keep) {
            att.inputs[3] = constant("keep", *mean.keep);
        }
        if (mean.bias) att.inputs[4] = constant("bias", cast(*mean.bias, g.value(m->q).dtype));
        if (mean.padding != ir::kNoValue)  // a float one (1 = valid) read as bool; integers as they are
            att.inputs[5] = is_float(g.value(mean.padding).dtype) ? as_bool(mean.padding) : mean.padding;
        while (!att.inputs.empty() && att.inputs.back() == ir::kNoValue) att.inputs.pop_back();
        att.outputs = {out};
        const std::string layout{qi.layout, ki->layout, vi->layout, o_layout};
        att.attrs.set("scale", m->scale);
        att.attrs.set("mask", description + (mean.padding != ir::kNoValue ? " & padding" : ""));
        att.attrs.set("layer", static_cast<int64_t>(layer));
        if (layout != "hhhh") att.attrs.set("layout", layout);
        if (qi.tensor_heads != H || ki->tensor_heads != ki->heads || vi->tensor_heads != vi->heads) {
            att.attrs.set("heads", H);
            att.attrs.set("kv_heads", ki->heads);
        }
        if (qi.head_offset || ki->head_offset || vi->head_offset)
            att.attrs.set("head_offsets", std::vector<int64_t>{qi.head_offset, ki->head_offset, vi->head_offset});
        spdlog::info("attention layer {}: {} heads x {} (kv {}), {} x {}, scale {:.6g}, layout {} (q, k, v, o; s = [B,S,H,D] "
                     "in place), mask {}{}{}",
                     layer, H, D, ki->heads, Sq, Sk, m->scale, layout, description,
                     mean.padding != ir::kNoValue ? " & padding '" + g.value(mean.padding).name + "'" : "",
                     mean.bias ? ", additive bias" : "");

        // Replace: the removed nodes go, the new ones take the output MatMul's place.
        std::vector<char> drop(g.nodes.size(), 0);
        for (int n : m->removed) drop[static_cast<size_t>(n)] = 1;
        if (drop_transpose >= 0) drop[static_cast<size_t>(drop_transpose)] = 1;
        std::vector<ir::Node> nodes;
        for (size_t n = 0; n < g.nodes.size(); ++n) {
            if (static_cast<int>(n) == m->out_mm) {
                nodes.insert(nodes.end(), added.begin(), added.end());
                nodes.push_back(att);
            }
            if (!drop[n]) nodes.push_back(std::move(g.nodes[n]));
        }
        g.nodes = std::move(nodes);
        cx.refresh();
        ++layer;
        si = static_cast<size_t>(-1);  // indices moved: rescan from the start (++si wraps to 0)
    }
    STOF_CHECK(opt.masks.empty() || layer > 0,
               "--mask was given, but no attention in the model could be recognised (run with -v to see why)");
}

}  // namespace stof::passes
