#include "passes/attention_mask.hpp"

#include "interp/interpreter.hpp"
#include "passes/mask_tiles.hpp"
#include "passes/passes.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string_view>

namespace stof::passes {

namespace {

using ir::ValueId;

constexpr double kMasked = -1e4;  // additive terms at or below this remove the key

// `t` ([..., Sq, Sk], rank <= 4, broadcastable) as doubles of shape [b, h, Sq, Sk].
std::vector<double> expand4(const Tensor& t, int64_t b, int64_t h, int64_t sq, int64_t sk) {
    Shape s(4 - std::min<size_t>(4, t.shape.size()), 1);
    s.insert(s.end(), t.shape.begin(), t.shape.end());
    std::vector<double> r(static_cast<size_t>(b * h * sq * sk));
    for (int64_t x = 0; x < b; ++x)
        for (int64_t y = 0; y < h; ++y)
            for (int64_t i = 0; i < sq; ++i)
                for (int64_t j = 0; j < sk; ++j) {
                    const int64_t at = (((s[0] == 1 ? 0 : x) * s[1] + (s[1] == 1 ? 0 : y)) * s[2] + (s[2] == 1 ? 0 : i)) *
                                           s[3] +
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
            if (a[static_cast<size_t>((x0 * h + y0) * plane + k)] != a[static_cast<size_t>((x1 * h + y1) * plane + k)])
                return false;
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

// The mask nodes alone as a graph of their own, the scores replaced by a scalar
// input (the probe), shapes inferred anew (so a [B,1,1,Sk] padding term stays
// that small), evaluated by the reference interpreter.
class MaskProbe {
public:
    MaskProbe(const Matcher& m, const AttentionMatch& a, ValueId input, const PassOptions& opt) : sub_(m.g) {
        const ir::Graph& g = m.g;
        ir::Value probe_value;
        probe_value.name = sub_.unique_name("attention_score_probe");
        probe_value.dtype = g.value(a.scores).dtype;
        probe_value.shape_known = true;
        probe_name_ = probe_value.name;
        const ValueId probe = sub_.add_value(probe_value);
        sub_.inputs.push_back(probe);
        for (const ir::Node* n : a.mask_nodes)
            for (ValueId& in : sub_.nodes[static_cast<size_t>(m.index(*n))].inputs)
                if (in == a.scores) in = probe;
        const ValueId out = a.mask_nodes.back()->outputs[0];
        sub_.outputs = {out};
        eliminate_dead_code(sub_, {});
        PassOptions shapes;
        shapes.fold_limit = opt.fold_limit;
        shapes.transpose_fold_limit = opt.transpose_fold_limit;
        infer_shapes(sub_, shapes);
        out_name_ = g.value(out).name;
        input_name_ = input == ir::kNoValue ? "" : g.value(input).name;
        probe_ = sub_.find_value(probe_name_);
        input_ = input == ir::kNoValue ? ir::kNoValue : sub_.find_value(input_name_);
        shape_ = sub_.value(sub_.outputs[0]).shape;
        shape_.insert(shape_.begin(), 4 - std::min<size_t>(4, shape_.size()), 1);
    }

    // The mask's shape, padded to rank 4 with leading ones.
    const Shape& shape() const { return shape_; }
    // The mask nodes' graph (the output: the mask), its probe input and the model input.
    const ir::Graph& graph() const { return sub_; }
    ValueId probe() const { return probe_; }
    ValueId input() const { return input_; }

    // The mask for one input (element k = valid[k]) as its additive equivalent,
    // [mb, mh, Sq, Sk] with -inf where masked; nullopt when the scores are not
    // combined with it additively.
    std::optional<std::vector<double>> additive(const std::vector<uint8_t>& valid) {
        TensorMap feeds;
        for (ValueId in : sub_.inputs) {
            const ir::Value& v = sub_.value(in);
            Tensor t(v.dtype, v.shape);
            if (!input_name_.empty() && v.name == input_name_)
                for (int64_t k = 0; k < t.numel(); ++k) t.set_i64(k, valid[static_cast<size_t>(k)]);
            feeds[v.name] = std::move(t);
        }
        std::vector<double> at[2];
        for (int s = 0; s < 2; ++s) {
            feeds[probe_name_].set_f64(0, s);
            at[s] = expand4(interpret(sub_, feeds).at(out_name_), shape_[0], shape_[1], shape_[2], shape_[3]);
        }
        std::vector<double> eq(at[0].size());
        for (size_t k = 0; k < eq.size(); ++k) {
            const double m0 = at[0][k], m1 = at[1][k];
            if (m0 <= kMasked && m1 <= kMasked) eq[k] = -std::numeric_limits<double>::infinity();
            else if (std::abs(m1 - m0 - 1) <= 4e-3 * std::max(1.0, std::abs(m0))) eq[k] = m0;  // fp16 models too
            else return std::nullopt;
        }
        return eq;
    }

private:
    ir::Graph sub_;
    ValueId probe_ = ir::kNoValue, input_ = ir::kNoValue;
    std::string probe_name_, out_name_, input_name_;
    Shape shape_;
};

// Evaluates the mask for two seeded random 0/1 inputs of `input_size` elements;
// each must equal `base` where `keep` and the input element `gate(b, h, ij)`
// are nonzero, and be masked elsewhere. Returns why not, or "".
std::string probe_random_inputs(MaskProbe& probe, const std::vector<double>& base, const std::vector<double>& keep,
                                int64_t input_size, const std::function<int64_t(int64_t, int64_t, int64_t)>& gate,
                                const std::string& mismatch) {
    const Shape& ms = probe.shape();
    const int64_t plane = ms[2] * ms[3];
    std::mt19937_64 rng(0x5eed);
    for (int run = 0; run < 2; ++run) {
        std::vector<uint8_t> valid(static_cast<size_t>(input_size));
        for (auto& x : valid) x = static_cast<uint8_t>(rng() & 1);
        const auto got = probe.additive(valid);
        if (!got) return "the scores are not combined with the mask by addition or selection";
        for (int64_t b = 0; b < ms[0]; ++b)
            for (int64_t h = 0; h < ms[1]; ++h)
                for (int64_t ij = 0; ij < plane; ++ij) {
                    const size_t at = static_cast<size_t>((b * ms[1] + h) * plane + ij);
                    const bool kept = keep[at] != 0 && valid[static_cast<size_t>(gate(b, h, ij))] != 0;
                    const double x = (*got)[at], want = base[at];
                    if (!(kept ? std::abs(x - want) <= 1e-6 * std::max(1.0, std::abs(want)) : x <= kMasked)) return mismatch;
                }
    }
    return "";
}

// The graph inputs the mask nodes of `a` depend on (besides the scores).
std::vector<ValueId> mask_inputs(const Matcher& m, const AttentionMatch& a) {
    std::vector<ValueId> from, inputs;
    for (const ir::Node* n : a.mask_nodes)
        for (ValueId in : n->inputs)
            if (in != a.scores) from.push_back(in);
    walk_back(m, from, [&](ValueId x) {
        const ir::Node* p = m.producer(x);
        if (!p && !m.g.value(x).data) inputs.push_back(x);
        return std::find(a.mask_nodes.begin(), a.mask_nodes.end(), p) == a.mask_nodes.end();
    });
    return inputs;
}

}  // namespace

std::string mask_key(const Matcher& m, const AttentionMatch& a, const ScoreDims& dims) {
    const ir::Graph& g = m.g;
    std::map<ValueId, std::string> memo;
    for (size_t i = 0; i < a.mask_nodes.size(); ++i) memo[a.mask_nodes[i]->outputs[0]] = fmt::format("t{}", i);
    memo[a.scores] = "s";
    auto node_text = [](const ir::Node& n, const std::function<std::string(ValueId)>& text) {
        std::string r = fmt::format("{}(", ir::op_name(n.op));
        for (const auto& [name, value] : n.attrs.all()) r += name + "=" + ir::attr_str(value) + ";";
        for (ValueId in : n.inputs) r += text(in) + ",";
        return r + ")";
    };
    std::function<std::string(ValueId)> text = [&](ValueId v) -> std::string {
        if (v == ir::kNoValue) return "-";
        if (auto it = memo.find(v); it != memo.end()) return it->second;
        std::string r;
        const ir::Value& x = g.value(v);
        if (x.data) {
            const std::string_view bytes(reinterpret_cast<const char*>(x.data->bytes.data()), x.data->bytes.size());
            r = fmt::format("c{}{}:{:016x}", dtype_name(x.dtype), shape_str(x.shape), std::hash<std::string_view>{}(bytes));
        } else if (const ir::Node* n = m.producer(v)) {
            const auto out = std::find(n->outputs.begin(), n->outputs.end(), v) - n->outputs.begin();
            r = node_text(*n, text) + fmt::format("#{}", out);
        } else {
            r = "in:" + x.name;
        }
        return memo[v] = r;
    };
    std::string k = fmt::format("{}x{}x{}x{}", dims.b, dims.h, dims.sq, dims.sk);
    for (const ir::Node* n : a.mask_nodes) k += "|" + node_text(*n, text);
    return k;
}

MaskMeaning analyse_mask(const Matcher& m, const AttentionMatch& a, const ScoreDims& dims, const PassOptions& opt,
                         MaskMethod method) {
    const ir::Graph& g = m.g;
    const int64_t B = dims.b, H = dims.h, Sq = dims.sq, Sk = dims.sk;
    MaskMeaning r;
    if (a.mask_nodes.empty()) return r;
    const std::vector<ValueId> inputs = mask_inputs(m, a);
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
    MaskProbe probe(m, a, input, opt);
    const Shape& rs = probe.shape();
    if (rs.size() != 4 || (rs[0] != 1 && rs[0] != B) || (rs[1] != 1 && rs[1] != H)) {
        r.why_not = "the mask of shape " + shape_str(rs) + " does not broadcast to the scores";
        return r;
    }
    const int64_t mb = rs[0], mh = rs[1];
    if (method == MaskMethod::tiles_first && full == ir::kNoValue) {
        MaskTiles t = classify_mask_tiles(probe.graph(), probe.probe(), probe.input(), B, H, Sq, Sk);
        if (t.unsupported.empty()) {
            r.why_not = t.why_not;
            if (t.padding) r.padding = pad;
            r.tiles = t.keep;
            if (r.why_not.empty()) r.bias = std::move(t.bias);
            r.bias_by_distance = r.bias != nullptr && t.bias_by_distance;
            r.by_tiles = true;
            return r;
        }
        spdlog::debug("the mask of {} is evaluated entry by entry: {}", a.softmax->label(), t.unsupported);
        if (mb * mh * Sq * Sk > kMaxMaskEntries) {
            r.why_not = fmt::format(
                "the mask is not one stofc classifies tile by tile ({}), and its {}x{}x{}x{} entries are too many to "
                "evaluate one by one",
                t.unsupported, mb, mh, Sq, Sk);
            return r;
        }
    } else if (mb * mh * Sq * Sk > kMaxMaskEntries) {
        r.why_not = fmt::format("the mask's {}x{}x{}x{} entries are too many to evaluate one by one", mb, mh, Sq, Sk);
        return r;
    }
    const int64_t input_size = input == ir::kNoValue ? 0 : numel(g.value(input).shape);
    const auto base = probe.additive(std::vector<uint8_t>(static_cast<size_t>(input_size), 1));
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
        r.why_not = probe_random_inputs(
            probe, *base, keep, input_size, [&](int64_t b, int64_t, int64_t ij) { return b * Sk + ij % Sk; },
            "the mask is not a key padding mask of input '" + g.value(pad).name + "'");
        if (!r.why_not.empty()) return r;
        r.padding = pad;
    }
    if (full != ir::kNoValue) {
        const Shape& fs = g.value(full).shape;
        if ((fs[0] != 1 && mb != B) || (fs[1] != 1 && mh != H)) {
            r.why_not = "the mask does not vary like input '" + g.value(full).name + "'";
            return r;
        }
        r.why_not = probe_random_inputs(
            probe, *base, keep, input_size,
            [&](int64_t b, int64_t h, int64_t ij) {
                return ((fs[0] == 1 ? 0 : b) * fs[1] + (fs[1] == 1 ? 0 : h)) * Sq * Sk + ij;
            },
            "the mask is not the nonzero entries of input '" + g.value(full).name + "'");
        if (!r.why_not.empty()) return r;
        r.full = full;
    }
    if (any_masked) r.keep = collapse(keep, DType::boolean, mb, mh, Sq, Sk);
    if (any_bias) r.bias = std::make_shared<const Tensor>(collapse(bias, DType::f32, mb, mh, Sq, Sk));
    return r;
}

}  // namespace stof::passes
