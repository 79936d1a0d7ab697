// fuse-attention: every exported spelling of scaled dot-product attention
// becomes one SparseAttention node (compiler/ops/attention.cpp).
//   matched     passes/attention_match.hpp (scores, scale, mask nodes, output);
//   its mask    passes/attention_mask.hpp (keep pattern, bias, padding or full
//               mask input), intersected with `--mask [LAYERS=]SPEC`: a pattern
//               classified tile by tile stays in the sparse format (attribute
//               keep_tiles, mask/mask_intersect.hpp), one evaluated entry by
//               entry a bool constant (mask/layer_masks.hpp);
//   not fused   a mask that cannot be expressed, or an attention-like Softmax
//               (MatMul scores, read by a MatMul) the matcher refuses, leaves
//               the attention as it is: a warning and a note in the plan (why);
//   operands    q, k and v read in place of the projections they are heads of
//               (passes/attention_operands.hpp), and an output that only a
//               [0,2,1,3] Transpose reads written as [B,S,H,D] in its place.
// Attention layers are numbered from 0 in graph order (attribute `layer`).
// Layers with the same mask share its keep and bias constants and the bool
// conversion of the input it depends on.
#include "mask/layer_masks.hpp"
#include "mask/mask_builder.hpp"
#include "mask/mask_intersect.hpp"
#include "mask/mask_spec.hpp"
#include "ops/attention_layout.hpp"
#include "passes/attention_mask.hpp"
#include "passes/attention_operands.hpp"
#include "passes/passes.hpp"
#include "stof/error.hpp"
#include "stof/progress.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <set>

namespace stof::passes {

namespace {

using ir::Op;
using ir::ValueId;

class AttentionFuser {
public:
    AttentionFuser(ir::Graph& g, const std::vector<LayerMask>& masks, const PassOptions& opt)
        : g_(g), m_(g), masks_(masks), note_(opt.note), opt_(opt) {}

    // Fuses every attention block; returns how many.
    int run() {
        std::set<std::string> rejected;  // Softmax nodes already found unfusable
        std::set<std::string> reported;  // attention-like Softmax nodes the matcher refused, warned about once
        for (size_t si = 0; si < g_.nodes.size(); ++si) {
            const ir::Node& sm = g_.nodes[si];
            if (sm.op != Op::Softmax || rejected.count(sm.name)) continue;
            std::string why;
            const std::optional<AttentionMatch> a = match_attention(m_, sm, &why);
            if (!a) {
                if (!why.empty() && reported.insert(sm.name).second) report(sm, why);
                continue;
            }
            if (!fuse(*a)) {
                rejected.insert(sm.name);
                continue;
            }
            m_.commit();
            ++layer_;
            si = static_cast<size_t>(-1);  // indices moved: rescan from the start (++si wraps to 0)
        }
        return layer_;
    }

private:
    // The operands' sources: q, k, v.
    struct Operands {
        OperandSource q, k, v;
    };

    // An attention-like block left to dense ops: a warning and a note in the plan.
    void report(const ir::Node& softmax, const std::string& why) {
        const std::string text = fmt::format("attention at {} is not fused (dense MatMul/Softmax): {}", softmax.label(), why);
        spdlog::warn("{}", text);
        if (note_) note_(text);
    }
    bool fuse(const AttentionMatch& a);
    Operands trace_operands(const AttentionMatch& a, int64_t B, int64_t H, int64_t Sk, int64_t D);
    ValueId add_node(Op op, ValueId in, const Shape& shape, const std::string& hint, ir::Attrs attrs);
    ValueId as_bool(ValueId x);
    ValueId constant(const std::string& key, const std::string& what, const Tensor& t, DType as = DType::undefined);

    ir::Graph& g_;
    Matcher m_;
    const std::vector<LayerMask>& masks_;
    const std::function<void(const std::string&)>& note_;
    const PassOptions& opt_;
    int layer_ = 0;
    std::string base_;                             // the name new values and nodes of this layer start with
    std::vector<ir::Node> added_;                  // this layer's new nodes, placed before the fused node
    std::map<ValueId, ValueId> valid_keys_;        // mask input -> the bool the attention nodes read
    std::map<std::string, MaskMeaning> meanings_;  // mask_key -> what the mask nodes mean
    std::map<std::string, ValueId> constants_;     // mask_key, --mask text, what -> the keep / bias constant
    std::map<std::string, Tensor> spec_keeps_;     // mask_key and --mask text -> the model's keep & the spec
    std::map<std::string, std::shared_ptr<const SparseMask>> spec_tiles_;  // the same, in the sparse format
};

// A node of this layer: `op` of `in` (and a constant shape for Reshape).
ValueId AttentionFuser::add_node(Op op, ValueId in, const Shape& shape, const std::string& hint, ir::Attrs attrs) {
    ir::Node n;
    n.op = op;
    n.outputs = {m_.new_value(base_ + "_" + hint, g_.value(in).dtype, shape)};
    n.name = m_.unique_node_name(g_.value(n.outputs[0]).name);
    n.inputs = {in};
    n.attrs = std::move(attrs);
    if (op == Op::Reshape) {
        Tensor t(DType::i64, {static_cast<int64_t>(shape.size())});
        for (size_t k = 0; k < shape.size(); ++k) t.set_i64(static_cast<int64_t>(k), shape[k]);
        n.inputs.push_back(g_.add_constant(t, g_.value(n.outputs[0]).name + "_shape"));
    }
    added_.push_back(n);
    return n.outputs[0];
}

// An input the mask depends on, as the bool the kernels read (nonzero = keep), converted once for all layers.
ValueId AttentionFuser::as_bool(ValueId x) {
    ValueId& b = valid_keys_.try_emplace(x, ir::kNoValue).first->second;
    if (b != ir::kNoValue) return b;
    if (g_.value(x).dtype == DType::boolean) return b = x;
    ir::Attrs to;
    to.set("to", static_cast<int64_t>(DType::boolean));
    const ValueId r = add_node(Op::Cast, x, g_.value(x).shape, "keep", to);
    g_.value(r).dtype = DType::boolean;
    return valid_keys_[x] = r;
}

// The keep and bias constants (t as dtype `as` when given), shared by the layers whose mask and --mask are the same.
ValueId AttentionFuser::constant(const std::string& key, const std::string& what, const Tensor& t, DType as) {
    if (as == DType::undefined) as = t.dtype;
    const std::string ck = key + "|" + spec_for_layer(masks_, layer_).value_or("") + "|" + what + dtype_name(as);
    auto [it, fresh] = constants_.try_emplace(ck, ir::kNoValue);
    if (fresh) it->second = g_.add_constant(as == t.dtype ? t : cast(t, as), base_ + "_" + what);
    return it->second;
}

// In place where the layout ops before them allow; k and v with the same KV
// heads (else both with all of their tensor's heads), k transposed when it
// cannot be read in place.
AttentionFuser::Operands AttentionFuser::trace_operands(const AttentionMatch& a, int64_t B, int64_t H, int64_t Sk, int64_t D) {
    const std::array<int, 4> bhsd{0, 1, 2, 3}, bhds{0, 1, 3, 2};
    const int64_t Sq = g_.value(a.q).shape[2];
    // (The operands' own KV heads Hx are H, or 1 when the MatMuls broadcast them.)
    const int64_t Hx = g_.value(a.v).shape[1];
    const OperandSource q = trace_operand(m_, a.q, bhsd, B, H, Sq, D, H).value_or(OperandSource{a.q, 'h', H, H, 0});
    std::optional<OperandSource> k = trace_operand(m_, a.kt, bhds, B, Hx, Sk, D, 0);
    std::optional<OperandSource> v = trace_operand(m_, a.v, bhsd, B, Hx, Sk, D, 0);
    if (!k || !v || k->heads != v->heads) {
        k = trace_operand(m_, a.kt, bhds, B, Hx, Sk, D, Hx);
        v = trace_operand(m_, a.v, bhsd, B, Hx, Sk, D, Hx).value_or(OperandSource{a.v, 'h', Hx, Hx, 0});
    }
    if (!k) {
        ir::Attrs perm;
        perm.set("perm", std::vector<int64_t>{0, 1, 3, 2});
        const Shape kts = g_.value(a.kt).shape;
        k = OperandSource{add_node(Op::Transpose, a.kt, {kts[0], kts[1], kts[3], kts[2]}, "k", perm), 'h', kts[1], kts[1], 0};
    }
    return {q, *k, *v};
}

bool AttentionFuser::fuse(const AttentionMatch& a) {
    const Shape& qs = g_.value(a.q).shape;
    const int64_t B = qs[0], H = qs[1], Sq = qs[2], D = qs[3], Sk = g_.value(a.kt).shape[3];
    // Layers usually share their mask: evaluated once, its constants added once.
    const std::string key = mask_key(m_, a, {B, H, Sq, Sk});
    auto known = meanings_.find(key);
    if (known == meanings_.end()) {
        ProgressPhase phase(fmt::format("classifying the attention mask of {} ({}x{})", a.softmax->label(), Sq, Sk));
        known = meanings_.emplace(key, analyse_mask(m_, a, {B, H, Sq, Sk}, opt_)).first;
    }
    MaskMeaning mean = known->second;
    if (!mean.why_not.empty()) {
        report(*a.softmax, mean.why_not);
        return false;
    }
    const bool model_keeps = mean.keep || mean.tiles;
    std::string description = model_keeps ? "from the model" : "dense";
    if (mean.full != ir::kNoValue)
        description = "input '" + g_.value(mean.full).name + "'" + (mean.keep ? " & the model's" : "");
    if (const auto spec_text = spec_for_layer(masks_, layer_)) {
        if (mean.full == ir::kNoValue && !mean.keep) {  // built and intersected tile by tile
            auto [it, fresh] = spec_tiles_.try_emplace(key + "|" + *spec_text);
            if (fresh) {
                SparseMask spec = build_mask(parse_mask_spec(*spec_text), Sq, Sk, 64, 64, H, B);
                it->second = std::make_shared<const SparseMask>(mean.tiles ? intersect_masks(*mean.tiles, spec)
                                                                           : std::move(spec));
            }
            mean.tiles = it->second;
        } else {
            auto [it, fresh] = spec_keeps_.try_emplace(key + "|" + *spec_text);
            if (fresh) it->second = layer_keep(*spec_text, mean.keep ? &*mean.keep : nullptr, B, H, Sq, Sk);
            mean.keep = it->second;
        }
        description = (mean.full != ir::kNoValue ? description
                       : model_keeps             ? "from the model"
                                                 : "") +
                      (mean.full != ir::kNoValue || model_keeps ? " & " : "") + *spec_text;
    }

    base_ = a.out_mm->name;
    added_.clear();
    const Operands ops = trace_operands(a, B, H, Sk, D);
    // Each source as the operands' 4-D shape (a Reshape: a view, no copy), named
    // after the operands it holds ("qkv" for a fused projection).
    struct Reshaped {
        std::string roles;
        ValueId value = ir::kNoValue;
    };
    std::map<std::pair<ValueId, Shape>, Reshaped> reshaped;
    const std::pair<const OperandSource*, int64_t> operands[3] = {{&ops.q, Sq}, {&ops.k, Sk}, {&ops.v, Sk}};
    auto shape_of = [&](int i) {
        const OperandSource& p = *operands[i].first;
        return ir::attention_shape({B, p.tensor_heads, operands[i].second, D}, p.layout);
    };
    for (int i = 0; i < 3; ++i)
        if (g_.value(operands[i].first->source).shape != shape_of(i))
            reshaped[{operands[i].first->source, shape_of(i)}].roles += "qkv"[i];
    auto as_4d = [&](int i) {
        const OperandSource& p = *operands[i].first;
        const Shape shape = shape_of(i);
        if (g_.value(p.source).shape == shape) return p.source;
        Reshaped& r = reshaped.at({p.source, shape});
        if (r.value == ir::kNoValue) r.value = add_node(Op::Reshape, p.source, shape, r.roles, {});
        return r.value;
    };
    const ValueId qv = as_4d(0), kv = as_4d(1), vv = as_4d(2);
    // The output: in place of a [0,2,1,3] Transpose that alone reads it.
    ValueId out = a.out;
    char o_layout = 'h';
    std::vector<const ir::Node*> drop = a.removed;
    if (const ir::Node* t = m_.sole_consumer(a.out, Op::Transpose);
        t && t->attrs.ints("perm", {}) == std::vector<int64_t>{0, 2, 1, 3} && !m_.is_output(t->outputs[0])) {
        out = t->outputs[0];
        o_layout = 's';
        drop.push_back(t);
    }

    ir::Node att;
    att.op = Op::SparseAttention;
    att.name = m_.unique_node_name(base_ + "_attention");
    att.inputs = {qv, kv, vv, ir::kNoValue, ir::kNoValue, ir::kNoValue};
    if (mean.full != ir::kNoValue) {  // computed at run time: the input, and the constant pattern if any
        ValueId keep = as_bool(mean.full);
        if (mean.keep) {
            const Shape &fs = g_.value(keep).shape, &cs = mean.keep->shape;
            keep = add_node(Op::And, keep, {std::max(fs[0], cs[0]), std::max(fs[1], cs[1]), Sq, Sk}, "kept", {});
            added_.back().inputs.push_back(constant(key, "keep", *mean.keep));
        }
        att.inputs[3] = keep;
    } else if (mean.keep) {
        att.inputs[3] = constant(key, "keep", *mean.keep);
    } else if (mean.tiles) {
        att.attrs.set("keep_tiles", mean.tiles);
    }
    if (mean.bias) att.inputs[4] = constant(key, "bias", *mean.bias, g_.value(a.q).dtype);
    if (mean.padding != ir::kNoValue)  // a float one (1 = valid) read as bool; integers as they are
        att.inputs[5] = is_float(g_.value(mean.padding).dtype) ? as_bool(mean.padding) : mean.padding;
    while (!att.inputs.empty() && att.inputs.back() == ir::kNoValue) att.inputs.pop_back();
    att.outputs = {out};
    const std::string layout{ops.q.layout, ops.k.layout, ops.v.layout, o_layout};
    att.attrs.set("scale", a.scale);
    att.attrs.set("mask", description + (mean.padding != ir::kNoValue ? " & padding" : ""));
    att.attrs.set("layer", static_cast<int64_t>(layer_));
    if (layout != "hhhh") att.attrs.set("layout", layout);
    if (ops.q.tensor_heads != H || ops.k.tensor_heads != ops.k.heads || ops.v.tensor_heads != ops.v.heads) {
        att.attrs.set("heads", H);
        att.attrs.set("kv_heads", ops.k.heads);
    }
    if (ops.q.head_offset || ops.k.head_offset || ops.v.head_offset)
        att.attrs.set("head_offsets", std::vector<int64_t>{ops.q.head_offset, ops.k.head_offset, ops.v.head_offset});
    spdlog::info(
        "attention layer {}: {} heads x {} (kv {}), {} x {}, scale {:.6g}, layout {} (q, k, v, o; s = [B,S,H,D] "
        "in place), mask {}{}{}",
        layer_, H, D, ops.k.heads, Sq, Sk, a.scale, layout, description,
        mean.padding != ir::kNoValue ? " & padding '" + g_.value(mean.padding).name + "'" : "",
        mean.bias ? ", additive bias" : "");

    // The matched nodes go, the new ones take the output MatMul's place.
    added_.push_back(std::move(att));
    const bool scheduled = m_.replace(drop, *a.out_mm, std::move(added_));
    STOF_CHECK(scheduled, "internal: attention at {} overlaps an earlier rewrite", a.softmax->label());
    return true;
}

}  // namespace

void fuse_attention(ir::Graph& g, const PassOptions& opt) {
    const std::vector<LayerMask> masks = parse_layer_masks(opt.masks);  // malformed ranges are rejected up front
    const int layers = AttentionFuser(g, masks, opt).run();
    STOF_CHECK(opt.masks.empty() || layers > 0,
               "--mask was given, but no attention in the model could be recognised (the warnings above say why)");
    for (size_t k = 0; k < masks.size(); ++k)  // a range past the last layer would silently do nothing
        STOF_CHECK(masks[k].every_layer || masks[k].last < layers,
                   "--mask {}: the model has {} attention layer{} (0-{}), none numbered {}", opt.masks[k], layers,
                   layers == 1 ? "" : "s", layers - 1, masks[k].last);
}

}  // namespace stof::passes
