// fuse-attention: every exported spelling of scaled dot-product attention
// becomes one SparseAttention node (compiler/ops/attention.cpp).
//
// Matched, from the Softmax (last axis) outward:
//   scores  MatMul(q', kᵀ') with q' = q·c1 and kᵀ' = kᵀ·c2 optional scalar
//           constant factors, then an optional ·c3 or /c3 on the scores
//           (scale = c1·c2·c3, or /c3);
//   mask    an optional Add of an additive term M (either operand order);
//   output  Softmax → optional Where(IsNaN(p), 0, p) → MatMul(p, v).
// q [B,H,Sq,D], kᵀ [B,Hk,D,Sk], v [B,Hk,Sk,D]; every intermediate value has no
// other consumer. M must depend on constants and at most one graph input of
// shape [B,Sk] (the padding mask). Its meaning is found by evaluating it with
// the reference interpreter: with all keys valid, entries <= -1e4 are masked
// and the others are an additive bias; then two random paddings must give
// exactly that pattern and bias with the padded keys masked. Otherwise the
// attention is left as it is (logged). `--mask SPEC` (PassOptions::masks) is
// intersected with what the graph computes.
#include "interp/interpreter.hpp"
#include "mask/mask_eval.hpp"
#include "mask/mask_file.hpp"
#include "mask/mask_spec.hpp"
#include "passes/passes.hpp"
#include "stof/error.hpp"

#include <spdlog/spdlog.h>

#include <cmath>
#include <optional>
#include <random>

namespace stof::passes {

namespace {

using ir::Op;
using ir::ValueId;

constexpr double kMasked = -1e4;  // additive terms at or below this remove the key

struct Match {
    int softmax = -1, isnan = -1, where = -1, out_mm = -1, score_mm = -1;
    std::vector<int> removed;  // nodes replaced by the fused node
    ValueId q = ir::kNoValue, kt = ir::kNoValue, v = ir::kNoValue, additive = ir::kNoValue, out = ir::kNoValue;
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

    // Input side: [Add(scores, M)] or scores.
    const ValueId s = sm.inputs[0];
    std::optional<Match> m;
    ValueId additive = ir::kNoValue;
    const int sp = cx.producer[static_cast<size_t>(s)];
    if (sp >= 0 && cx.g.nodes[static_cast<size_t>(sp)].op == Op::Add && cx.sole_use(s, si)) {
        const ir::Node& add = cx.g.nodes[static_cast<size_t>(sp)];
        for (int side = 0; side < 2 && !m; ++side) {
            m = match_scores(cx, add.inputs[static_cast<size_t>(side)], sp);
            if (m) additive = add.inputs[static_cast<size_t>(1 - side)];
        }
        if (m) m->removed.push_back(sp);
    } else {
        m = match_scores(cx, s, si);
    }
    if (!m) return std::nullopt;
    m->softmax = si;
    m->isnan = isnan;
    m->where = where;
    m->out_mm = outc[0];
    m->v = out.inputs[1];
    m->out = out.outputs[0];
    m->additive = additive;
    for (int n : {si, isnan, where, outc[0]})
        if (n >= 0) m->removed.push_back(n);
    // Shapes: q [B,H,Sq,D], kᵀ [B,Hk,D,Sk], v [B,Hk,Sk,D].
    const Shape &q = cx.g.value(m->q).shape, &kt = cx.g.value(m->kt).shape, &v = cx.g.value(m->v).shape;
    if (q.size() != 4 || kt.size() != 4 || v.size() != 4 || kt[0] != q[0] || v[0] != q[0] || kt[1] != v[1] ||
        q[1] % kt[1] != 0 || kt[2] != q[3] || v[3] != q[3] || v[2] != kt[3])
        return std::nullopt;
    const DType dt = cx.g.value(m->q).dtype;
    if (cx.g.value(m->kt).dtype != dt || cx.g.value(m->v).dtype != dt) return std::nullopt;
    return m;
}

// What an additive mask term means: keep pattern, bias, padding input.
struct MaskMeaning {
    std::optional<Tensor> keep;  // bool [1|B,1|H,Sq,Sk]
    std::optional<Tensor> bias;  // f32 [1|B,1|H,Sq,Sk]
    ValueId padding = ir::kNoValue;
    std::string why_not;         // non-empty: the term cannot be expressed
};

// `t` ([..., Sq, Sk], rank <= 4) broadcast to [b, h, Sq, Sk] as doubles.
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

MaskMeaning analyse_mask(const ir::Graph& g, ValueId m, int64_t B, int64_t H, int64_t Sq, int64_t Sk) {
    MaskMeaning r;
    if (m == ir::kNoValue) return r;
    const ir::Value& mv = g.value(m);
    if (!is_float(mv.dtype) || mv.shape.size() > 4) {
        r.why_not = "the additive term is not a float tensor of rank <= 4";
        return r;
    }
    // Which graph inputs does M depend on?
    const std::vector<int> producer = g.producers();
    std::vector<char> seen(g.values.size(), 0);
    std::vector<ValueId> work{m}, inputs;
    while (!work.empty()) {
        const ValueId x = work.back();
        work.pop_back();
        if (seen[static_cast<size_t>(x)]) continue;
        seen[static_cast<size_t>(x)] = 1;
        const int p = producer[static_cast<size_t>(x)];
        if (p >= 0) {
            for (ValueId in : g.nodes[static_cast<size_t>(p)].inputs)
                if (in != ir::kNoValue) work.push_back(in);
        } else if (!g.value(x).data) {
            inputs.push_back(x);
        }
    }
    if (inputs.size() > 1) {
        r.why_not = "the additive term depends on more than one model input";
        return r;
    }
    ValueId pad = inputs.empty() ? ir::kNoValue : inputs[0];
    if (pad != ir::kNoValue && (g.value(pad).shape != Shape({B, Sk}) || is_float(g.value(pad).dtype))) {
        r.why_not = "the additive term depends on input '" + g.value(pad).name + "', which is no [batch, keys] padding mask";
        return r;
    }
    // Evaluate M alone for a padding pattern.
    ir::Graph sub = g;
    sub.outputs = {m};
    eliminate_dead_code(sub, {});
    auto evaluate = [&](const std::vector<uint8_t>& valid) {
        TensorMap feeds;
        for (ValueId in : sub.inputs) {
            const ir::Value& v = sub.value(in);
            Tensor t(v.dtype, v.shape);
            if (pad != ir::kNoValue && v.name == g.value(pad).name)
                for (int64_t k = 0; k < t.numel(); ++k) t.set_i64(k, valid[static_cast<size_t>(k)]);
            feeds[v.name] = std::move(t);
        }
        return expand4(interpret(sub, feeds).at(mv.name), B, H, Sq, Sk);
    };
    const std::vector<double> base = evaluate(std::vector<uint8_t>(static_cast<size_t>(B * Sk), 1));
    std::vector<double> keep(base.size()), bias(base.size());
    bool any_masked = false, any_bias = false;
    for (size_t k = 0; k < base.size(); ++k) {
        keep[k] = base[k] > kMasked;
        bias[k] = keep[k] != 0 ? base[k] : 0.0;
        any_masked = any_masked || keep[k] == 0;
        any_bias = any_bias || bias[k] != 0;
    }
    if (pad != ir::kNoValue) {
        std::mt19937_64 rng(0x5eed);
        for (int probe = 0; probe < 2; ++probe) {
            std::vector<uint8_t> valid(static_cast<size_t>(B * Sk));
            for (auto& x : valid) x = static_cast<uint8_t>(rng() & 1);
            const std::vector<double> got = evaluate(valid);
            for (int64_t b = 0; b < B; ++b)
                for (int64_t k = 0; k < H * Sq * Sk; ++k) {
                    const size_t at = static_cast<size_t>(b * H * Sq * Sk + k);
                    const bool kept = keep[at] != 0 && valid[static_cast<size_t>(b * Sk + k % Sk)] != 0;
                    const bool ok = kept ? std::abs(got[at] - base[at]) <= 1e-6 * std::max(1.0, std::abs(base[at]))
                                         : got[at] <= kMasked;
                    if (!ok) {
                        r.why_not = "the additive term is not a key padding mask of input '" + g.value(pad).name + "'";
                        return r;
                    }
                }
        }
        r.padding = pad;
    }
    if (any_masked) r.keep = collapse(keep, DType::boolean, B, H, Sq, Sk);
    if (any_bias) r.bias = collapse(bias, DType::f32, B, H, Sq, Sk);
    return r;
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

}  // namespace

void fuse_attention(ir::Graph& g, const PassOptions& opt) {
    for (const std::string& m : opt.masks) spec_for_layer({m}, 0);  // reject malformed ranges up front
    Context cx(g);
    int layer = 0;
    for (size_t si = 0; si < g.nodes.size(); ++si) {
        if (g.nodes[si].op != Op::Softmax) continue;
        const std::optional<Match> m = match_at_softmax(cx, static_cast<int>(si));
        if (!m) continue;
        const Shape& q = g.value(m->q).shape;
        const int64_t B = q[0], H = q[1], Sq = q[2], Sk = g.value(m->kt).shape[3];
        MaskMeaning mean = analyse_mask(g, m->additive, B, H, Sq, Sk);
        if (!mean.why_not.empty()) {
            spdlog::info("attention at {} left unfused: {}", g.nodes[si].label(), mean.why_not);
            continue;
        }
        std::string description = mean.keep ? "from the model" : "dense";
        if (const auto spec_text = spec_for_layer(opt.masks, layer)) {
            MaskSpec spec = parse_mask_spec(*spec_text);
            load_mask_files(spec, Sq, Sk, H, B);
            Shape ks = mean.keep ? mean.keep->shape : Shape{1, 1, Sq, Sk};
            const bool per_head = spec_text->find("file:") != std::string::npos;
            if (per_head) ks = {B, H, Sq, Sk};
            Tensor keep(DType::boolean, ks);
            for (int64_t x = 0; x < ks[0]; ++x)
                for (int64_t y = 0; y < ks[1]; ++y)
                    for (int64_t i = 0; i < Sq; ++i)
                        for (int64_t j = 0; j < Sk; ++j) {
                            const int64_t at = ((x * ks[1] + y) * Sq + i) * Sk + j;
                            bool k = eval_keep(spec, i, j, Sk, x, y);
                            if (k && mean.keep) {
                                const Shape& s = mean.keep->shape;
                                k = mean.keep->get_i64((((s[0] == 1 ? 0 : x) * s[1] + (s[1] == 1 ? 0 : y)) * Sq + i) * Sk + j) != 0;
                            }
                            keep.set_i64(at, k);
                        }
            description = mean.keep ? "from the model & " + *spec_text : *spec_text;
            mean.keep = std::move(keep);
        }

        // k = transpose(kᵀ); the fused node replaces the output MatMul in place.
        const ir::Node& out_mm = g.nodes[static_cast<size_t>(m->out_mm)];
        const std::string base = out_mm.name;
        ir::Value kv;
        kv.name = g.unique_name(base + "_k");
        kv.dtype = g.value(m->kt).dtype;
        const Shape& kts = g.value(m->kt).shape;
        kv.shape = {kts[0], kts[1], kts[3], kts[2]};
        kv.shape_known = true;
        const ValueId k = g.add_value(kv);
        ir::Node tr;
        tr.op = Op::Transpose;
        tr.name = g.unique_name(base + "_k_transpose");
        tr.inputs = {m->kt};
        tr.outputs = {k};
        tr.attrs.set("perm", std::vector<int64_t>{0, 1, 3, 2});
        ir::Node att;
        att.op = Op::SparseAttention;
        att.name = g.unique_name(base + "_attention");
        att.inputs = {m->q, k, m->v, ir::kNoValue, ir::kNoValue, ir::kNoValue};
        if (mean.keep) att.inputs[3] = g.add_constant(*mean.keep, base + "_keep");
        if (mean.bias) att.inputs[4] = g.add_constant(cast(*mean.bias, g.value(m->q).dtype), base + "_bias");
        att.inputs[5] = mean.padding;
        while (!att.inputs.empty() && att.inputs.back() == ir::kNoValue) att.inputs.pop_back();
        att.outputs = {m->out};
        att.attrs.set("scale", m->scale);
        att.attrs.set("mask", description + (mean.padding != ir::kNoValue ? " & padding" : ""));
        att.attrs.set("layer", static_cast<int64_t>(layer));
        spdlog::info("attention layer {}: {} heads x {} (kv {}), {} x {}, scale {:.6g}, mask {}{}{}", layer, H, q[3],
                     g.value(m->kt).shape[1], Sq, Sk, m->scale, description,
                     mean.padding != ir::kNoValue ? " & padding '" + g.value(mean.padding).name + "'" : "",
                     mean.bias ? ", additive bias" : "");

        // Replace: the removed nodes go, the two new ones take the output MatMul's place.
        std::vector<char> drop(g.nodes.size(), 0);
        for (int n : m->removed) drop[static_cast<size_t>(n)] = 1;
        std::vector<ir::Node> nodes;
        for (size_t n = 0; n < g.nodes.size(); ++n) {
            if (static_cast<int>(n) == m->out_mm) {
                nodes.push_back(tr);
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
