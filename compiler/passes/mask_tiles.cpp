#include "passes/mask_tiles.hpp"

#include "mask/mask_expression.hpp"
#include "mask/mask_interval.hpp"
#include "mask/position_bias.hpp"

#include "stof/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>

namespace stof::passes {

namespace {

using ir::Op;
using ir::ValueId;
using namespace stof::interval;

constexpr double kMasked = -1e4;                     // additive terms at or below this remove the key
constexpr double kOneTolerance = 4e-3;               // a kept entry adds the scores within this of 1 (fp16 models)
constexpr int kTile = 64;                            // outer tile side of the result
constexpr int64_t kMaxEvaluated = int64_t{1} << 24;  // largest value computed entry by entry (as constant folding)

using SymNode = MaskExpression::SymNode;
using Table = MaskExpression::Table;
using Leaf = MaskExpression::Leaf;

// `s` right-aligned to [B, H, Sq, Sk] (rank <= 4; missing leading dims 1), or empty.
std::vector<int64_t> aligned4(const Shape& s, const int64_t full[4]) {
    if (s.size() > 4) return {};
    std::vector<int64_t> r(4 - s.size(), 1);
    r.insert(r.end(), s.begin(), s.end());
    for (int d = 0; d < 4; ++d)
        if (r[static_cast<size_t>(d)] != 1 && r[static_cast<size_t>(d)] != full[d]) return {};
    return r;
}

Shape strip_leading_ones(Shape s) {
    while (!s.empty() && s.front() == 1) s.erase(s.begin());
    return s;
}

// One pattern's tiles: per tile row the listed columns, full or a bitmap.
struct PatternTiles {
    std::vector<int32_t> row_count, cols, bitmap;  // bitmap: -1 full, else index into words / kWords
    std::vector<uint64_t> words;
    bool operator==(const PatternTiles& o) const {
        return row_count == o.row_count && cols == o.cols && bitmap == o.bitmap && words == o.words;
    }
};
constexpr int kWords = (kTile / 8) * (kTile / 8);

// The entries kept by `patterns` ([nb, fh] slices of [Sq, Sk]) as materialise_position_bias reads them.
KeptTiles kept_tiles(const std::vector<PatternTiles>& patterns, int64_t nb, int64_t fh, int64_t Sq, int64_t Sk) {
    KeptTiles k{nb, fh, Sq, Sk, kTile, {}, {}};
    const int64_t tile_rows = (Sq + kTile - 1) / kTile, tile_cols = (Sk + kTile - 1) / kTile, tiles = tile_rows * tile_cols;
    k.state.assign(static_cast<size_t>(nb * fh * tiles), -2);
    for (size_t q = 0; q < patterns.size(); ++q) {
        const PatternTiles& p = patterns[q];
        size_t listed = 0;
        for (int64_t ti = 0; ti < tile_rows; ++ti)
            for (int32_t c = 0; c < p.row_count[static_cast<size_t>(ti)]; ++c, ++listed)
                k.state[q * static_cast<size_t>(tiles) + static_cast<size_t>(ti * tile_cols + p.cols[listed])] =
                    p.bitmap[listed];
        k.words.push_back(p.words.data());
    }
    return k;
}

class Classifier {
public:
    Classifier(const ir::Graph& sub, ValueId probe, ValueId input, int64_t B, int64_t H, int64_t Sq, int64_t Sk)
        : g_(sub), probe_(probe), input_(input), full_{B, H, Sq, Sk} {
        tile_rows_ = (Sq + kTile - 1) / kTile;
        tile_cols_ = (Sk + kTile - 1) / kTile;
        worlds_ = input == ir::kNoValue ? 2 : 8;
    }

    MaskTiles run();

private:
    // World w: the padding input all ones (w / 2 == 0), all zeros (1) or seeded
    // random (2, 3); the probe w % 2.
    using Values = std::vector<std::shared_ptr<const Tensor>>;
    static constexpr int kOnes = 0, kZeros = 1;

    std::string evaluate_graph();                              // fills conc_, expr_.syms, expr_.leaves; "" or why unsupported
    std::string compute(const ir::Node& n);                    // n's outputs in every world from known inputs; "" or why not
    int gathered_lookup(const ir::Node& n, std::string* why);  // a Transpose of a deferred Gather as a lookup SymNode
    bool batch_free() const;
    int leaf_of(ValueId v, std::string* why);
    std::shared_ptr<const Leaf::Data> summarise(const Tensor& t, const Leaf& l);
    std::string check_padding_leaves();
    Iv leaf_tile(const Leaf& l, int w, int64_t x, int64_t y, int64_t ti, int64_t tj) const;
    // The bounds of `at` (a SymNode or a leaf, by default the mask) over one tile or at one entry.
    template <class LeafIv> Iv eval(LeafIv leaf_iv, int at);
    Iv tile(int w, int64_t x, int64_t y, int64_t ti, int64_t tj, std::optional<int> at = {}) {
        head_ = y;
        return eval([&](const Leaf& l) { return leaf_tile(l, w, x, y, ti, tj); }, at.value_or(root_));
    }
    Iv entry(int w, int64_t x, int64_t y, int64_t i, int64_t j, std::optional<int> at = {}) {
        head_ = y;
        return eval([&](const Leaf& l) { return l.entry(w, x, y, i, j); }, at.value_or(root_));
    }

    const ir::Graph& g_;
    ValueId probe_, input_;
    int64_t full_[4];
    int64_t tile_rows_ = 0, tile_cols_ = 0;
    int worlds_ = 2;
    std::vector<Values> conc_;      // per world, per value: its contents when computed
    std::vector<int> sym_of_;       // per value: its SymNode, or -1
    std::vector<char> from_input_;  // per value: depends on the padding input
    MaskExpression expr_;
    std::map<ValueId, int> leaf_index_;
    std::map<const Tensor*, std::shared_ptr<const Leaf::Data>> summaries_;
    std::vector<std::vector<uint8_t>> random_valid_;  // worlds 2 and 3: the input's entries
    int root_ = 0;                                    // the mask: a SymNode or a leaf
    int bias_ = 0;                                    // additive_: the mask is probe + (this SymNode or leaf)
    bool additive_ = false;
    std::map<ValueId, const ir::Node*> deferred_;  // Gather outputs [Sq, Sk, heads] of a table, read as a lookup
    std::set<ValueId> one_entry_;                  // ConstantOfShape values held as their one entry
    int64_t head_ = 0;                             // the head eval() is at
    std::vector<Iv> scratch_;
};

int Classifier::leaf_of(ValueId v, std::string* why) {
    if (auto it = leaf_index_.find(v); it != leaf_index_.end()) return it->second;
    const std::vector<int64_t> d = one_entry_.count(v) ? std::vector<int64_t>(4, 1) : aligned4(g_.value(v).shape, full_);
    if (d.empty()) {
        *why = fmt::format("'{}' of shape {} does not align with the scores [{},{},{},{}]", g_.value(v).name,
                           shape_str(g_.value(v).shape), full_[0], full_[1], full_[2], full_[3]);
        return 0;
    }
    if (!conc_[0][static_cast<size_t>(v)]) {
        *why = fmt::format("'{}' is not known", g_.value(v).name);
        return 0;
    }
    Leaf l;
    l.value = v;
    l.dtype = g_.value(v).dtype;
    std::copy(d.begin(), d.end(), l.dims);
    for (int w = 0; w < worlds_; ++w) {
        const Tensor* t = conc_[static_cast<size_t>(w)][static_cast<size_t>(v)].get();
        auto [it, fresh] = summaries_.try_emplace(t);
        if (fresh) it->second = summarise(*t, l);
        l.world.push_back(it->second);
    }
    expr_.leaves.push_back(std::move(l));
    return leaf_index_[v] = -static_cast<int>(expr_.leaves.size());
}

std::shared_ptr<const Leaf::Data> Classifier::summarise(const Tensor& t, const Leaf& l) {
    auto d = std::make_shared<Leaf::Data>();
    d->at.resize(static_cast<size_t>(t.numel()));
    for (int64_t k = 0; k < t.numel(); ++k) d->at[static_cast<size_t>(k)] = t.get_f64(k);
    const int64_t li = l.dims[2], lj = l.dims[3];
    const int64_t tr = li > 1 ? tile_rows_ : 1, tc = lj > 1 ? tile_cols_ : 1;
    d->tiles.assign(static_cast<size_t>(l.dims[0] * l.dims[1] * tr * tc), Iv{});
    for (int64_t s = 0; s < l.dims[0] * l.dims[1]; ++s)
        for (int64_t i = 0; i < li; ++i)
            for (int64_t j = 0; j < lj; ++j) {
                Iv& b = d->tiles[static_cast<size_t>((s * tr + i / kTile) * tc + j / kTile)];
                b = hull(b, point(d->at[static_cast<size_t>((s * li + i) * lj + j)]));
            }
    return d;
}

Iv Classifier::leaf_tile(const Leaf& l, int w, int64_t x, int64_t y, int64_t ti, int64_t tj) const {
    const int64_t tr = l.dims[2] > 1 ? tile_rows_ : 1, tc = l.dims[3] > 1 ? tile_cols_ : 1;
    const int64_t s = (l.dims[0] == 1 ? 0 : x) * l.dims[1] + (l.dims[1] == 1 ? 0 : y);
    return l.world[static_cast<size_t>(w)]->tiles[static_cast<size_t>((s * tr + (tr > 1 ? ti : 0)) * tc + (tc > 1 ? tj : 0))];
}

template <class LeafIv> Iv Classifier::eval(LeafIv leaf_iv, int at) {
    auto arg = [&](int a) {
        return a >= 0 ? scratch_[static_cast<size_t>(a)] : leaf_iv(expr_.leaves[static_cast<size_t>(-a - 1)]);
    };
    if (at < 0) return arg(at);
    scratch_.resize(expr_.syms.size());
    Iv in[3];
    std::vector<Iv> many;
    for (size_t k = 0; k <= static_cast<size_t>(at); ++k) {
        const SymNode& n = expr_.syms[k];
        Iv* a = in;
        if (n.args.size() > 3) {
            many.resize(n.args.size());
            a = many.data();
        }
        for (size_t i = 0; i < n.args.size(); ++i) a[i] = arg(n.args[i]);
        scratch_[k] = n.table >= 0 ? expr_.tables[static_cast<size_t>(n.table)].lookup(a[0], head_)
                                   : apply(n.op, n.dtype, a, n.args.size());
    }
    return scratch_[static_cast<size_t>(at)];
}

std::string Classifier::evaluate_graph() {
    const size_t nv = g_.values.size();
    conc_.assign(static_cast<size_t>(worlds_), Values(nv));
    sym_of_.assign(nv, -1);
    from_input_.assign(nv, 0);
    for (size_t v = 0; v < nv; ++v)
        if (g_.values[v].data)
            for (auto& c : conc_) c[v] = g_.values[v].data;
    for (int w = 0; w < worlds_; ++w) {
        auto p = std::make_shared<Tensor>(g_.value(probe_).dtype, g_.value(probe_).shape);
        p->set_f64(0, w % 2);
        conc_[static_cast<size_t>(w)][static_cast<size_t>(probe_)] = p;
    }
    if (input_ != ir::kNoValue) {
        const ir::Value& in = g_.value(input_);
        std::mt19937_64 rng(0x5eed);
        std::shared_ptr<const Tensor> fixed[2];
        for (int k = 0; k < 2; ++k) {
            auto t = std::make_shared<Tensor>(in.dtype, in.shape);
            for (int64_t e = 0; e < t->numel(); ++e) t->set_i64(e, k == 0 ? 1 : 0);
            fixed[k] = t;
        }
        for (int r = 0; r < 2; ++r) {
            std::vector<uint8_t> valid(static_cast<size_t>(numel(in.shape)));
            for (auto& x : valid) x = static_cast<uint8_t>(rng() & 1);
            auto t = std::make_shared<Tensor>(in.dtype, in.shape);
            for (int64_t e = 0; e < t->numel(); ++e) t->set_i64(e, valid[static_cast<size_t>(e)]);
            random_valid_.push_back(std::move(valid));
            for (int s = 0; s < 2; ++s) conc_[static_cast<size_t>(4 + 2 * r + s)][static_cast<size_t>(input_)] = t;
        }
        for (int s = 0; s < 2; ++s) {
            conc_[static_cast<size_t>(2 * kOnes + s)][static_cast<size_t>(input_)] = fixed[0];
            conc_[static_cast<size_t>(2 * kZeros + s)][static_cast<size_t>(input_)] = fixed[1];
        }
        from_input_[static_cast<size_t>(input_)] = 1;
    }
    const int64_t Sq = full_[2], Sk = full_[3];
    auto is_plane = [&](const Shape& s) {
        return Sq > 1 && Sk > 1 && !aligned4(s, full_).empty() && s.size() >= 2 && s[s.size() - 2] == Sq && s.back() == Sk;
    };
    for (const ir::Node& n : g_.nodes) {
        bool known = true, any_sym = false, all_conc = true, dep = false;
        for (ValueId o : n.outputs) known = known && g_.value(o).data;
        if (known) continue;
        const ValueId out = n.outputs[0];
        // A position bias table gathered by a query-by-key index, [Sq, Sk, heads]: kept aside
        // for a Transpose to [heads, Sq, Sk], evaluated (when small enough) for any other reader.
        if (n.op == Op::Gather && n.outputs.size() == 1 && n.inputs.size() == 2 && g_.value(n.inputs[0]).data &&
            g_.value(n.inputs[0]).shape.size() == 2 && (n.attrs.i("axis", 0) == 0 || n.attrs.i("axis", 0) == -2) &&
            g_.value(n.inputs[1]).shape == Shape({Sq, Sk}) && Sq > 1 && Sk > 1 &&
            (g_.value(n.inputs[0]).shape[1] == 1 || g_.value(n.inputs[0]).shape[1] == full_[1]) &&
            !from_input_[static_cast<size_t>(n.inputs[1])]) {
            deferred_[out] = &n;
            continue;
        }
        // A constant query-by-key value (T5's full_like bucket bound): one entry, broadcast.
        if (n.op == Op::ConstantOfShape && n.outputs.size() == 1 && is_plane(g_.value(out).shape)) {
            auto t = std::make_shared<Tensor>(g_.value(out).dtype, Shape{});
            if (const Tensor* value = n.attrs.tensor("value"))
                std::memcpy(t->bytes.data(), value->bytes.data(), dtype_size(t->dtype));
            for (auto& c : conc_) c[static_cast<size_t>(out)] = t;
            one_entry_.insert(out);
            continue;
        }
        if (n.op == Op::Transpose && n.inputs.size() == 1 && deferred_.count(n.inputs[0]) &&
            n.attrs.ints("perm", {}) == std::vector<int64_t>{2, 0, 1}) {
            std::string why;
            const int sym = gathered_lookup(*deferred_.at(n.inputs[0]), &why);
            if (!why.empty()) return why;
            sym_of_[static_cast<size_t>(out)] = sym;
            continue;
        }
        for (ValueId in : n.inputs)
            if (auto d = deferred_.find(in); d != deferred_.end()) {
                const ir::Node& gather = *d->second;
                deferred_.erase(d);
                if (!conc_[0][static_cast<size_t>(gather.inputs[1])])
                    return fmt::format("{} reads a gathered [{}x{}] value", n.label(), Sq, Sk);
                if (std::string why = compute(gather); !why.empty()) return why;
            }
        for (ValueId in : n.inputs) {
            if (in == ir::kNoValue) continue;
            any_sym = any_sym || sym_of_[static_cast<size_t>(in)] >= 0 || one_entry_.count(in);
            all_conc = all_conc && conc_[0][static_cast<size_t>(in)];
            dep = dep || from_input_[static_cast<size_t>(in)];
        }
        for (ValueId o : n.outputs) from_input_[static_cast<size_t>(o)] = dep;
        const bool symbolic = n.outputs.size() == 1 && interval_op(n.op) && is_plane(g_.value(out).shape);
        if (!any_sym && !all_conc) return fmt::format("{} reads a value that is not known", n.label());
        if (any_sym && !symbolic)
            return fmt::format("{} of a [{}x{}] value is not an elementwise op this classifier takes", n.label(), Sq, Sk);
        if (symbolic) {
            SymNode s{n.op, g_.value(out).dtype, {}};
            const size_t used = view_op(n.op) ? 1 : n.inputs.size();
            if (n.op == Op::Reshape || n.op == Op::Unsqueeze || n.op == Op::Squeeze)
                if (strip_leading_ones(g_.value(n.inputs[0]).shape) != strip_leading_ones(g_.value(out).shape))
                    return fmt::format("{} moves entries of a [{}x{}] value", n.label(), Sq, Sk);
            for (size_t k = 0; k < used; ++k) {
                const ValueId in = n.inputs[k];
                if (in == ir::kNoValue) return fmt::format("{} has an absent input", n.label());
                std::string why;
                const int a = sym_of_[static_cast<size_t>(in)] >= 0 ? sym_of_[static_cast<size_t>(in)] : leaf_of(in, &why);
                if (!why.empty()) return why;
                s.args.push_back(a);
            }
            expr_.syms.push_back(std::move(s));
            sym_of_[static_cast<size_t>(out)] = static_cast<int>(expr_.syms.size()) - 1;
            continue;
        }
        if (std::string why = compute(n); !why.empty()) return why;
    }
    const ValueId out = g_.outputs.at(0);
    if (sym_of_[static_cast<size_t>(out)] >= 0) {
        root_ = sym_of_[static_cast<size_t>(out)];
    } else {
        if (!conc_[0][static_cast<size_t>(out)]) return "the mask is not known";
        std::string why;
        root_ = leaf_of(out, &why);
        if (!why.empty()) return why;
    }
    return "";
}

std::string Classifier::compute(const ir::Node& n) {
    for (ValueId in : n.inputs)
        if (one_entry_.count(in)) return fmt::format("{} reads a constant [{}x{}] value", n.label(), full_[2], full_[3]);
    int64_t elems = 0;
    for (ValueId o : n.outputs) elems += numel(g_.value(o).shape);
    if (elems > kMaxEvaluated)
        return fmt::format("{} computes {} entries (more than {} are not evaluated)", n.label(), elems, kMaxEvaluated);
    const ir::OpInfo& info = ir::op_info(n.op);
    std::vector<ir::TensorType> types;
    for (ValueId o : n.outputs) types.push_back({g_.value(o).dtype, g_.value(o).shape});
    for (int w = 0; w < worlds_; ++w) {
        Values& c = conc_[static_cast<size_t>(w)];
        bool same = w > 0;
        std::vector<const Tensor*> args;
        for (ValueId in : n.inputs) {
            args.push_back(in == ir::kNoValue ? nullptr : c[static_cast<size_t>(in)].get());
            same = same && (in == ir::kNoValue || c[static_cast<size_t>(in)] == conc_[0][static_cast<size_t>(in)]);
        }
        if (same) {
            for (ValueId o : n.outputs) c[static_cast<size_t>(o)] = conc_[0][static_cast<size_t>(o)];
            continue;
        }
        std::vector<Tensor> r = info.eval(n, args, types);
        for (size_t k = 0; k < n.outputs.size(); ++k)
            c[static_cast<size_t>(n.outputs[k])] = std::make_shared<const Tensor>(std::move(r[k]));
    }
    return "";
}

int Classifier::gathered_lookup(const ir::Node& gather, std::string* why) {
    const Tensor& data = *g_.value(gather.inputs[0]).data;
    Table t;
    t.rows = data.shape[0];
    t.heads = data.shape[1];
    t.at.resize(static_cast<size_t>(data.numel()));
    for (int64_t k = 0; k < data.numel(); ++k) t.at[static_cast<size_t>(k)] = data.get_f64(k);
    const ValueId index = gather.inputs[1];
    int a = sym_of_[static_cast<size_t>(index)];
    if (a < 0) a = leaf_of(index, why);
    if (!why->empty()) return 0;
    expr_.tables.push_back(std::move(t));
    SymNode s{Op::Gather, data.dtype, {a}, static_cast<int>(expr_.tables.size()) - 1};
    expr_.syms.push_back(std::move(s));
    return static_cast<int>(expr_.syms.size()) - 1;
}

// Every leaf reached by the padding input is [B|1,1,1,Sk] and, per (b, j), its
// all-ones value where the random input is nonzero and its all-zeros value elsewhere.
std::string Classifier::check_padding_leaves() {
    const int64_t B = full_[0], Sk = full_[3];
    for (const Leaf& l : expr_.leaves) {
        if (!from_input_[static_cast<size_t>(l.value)]) continue;
        const std::string& name = g_.value(l.value).name;
        if ((l.dims[0] != B && B != 1) || l.dims[1] != 1 || l.dims[2] != 1 || l.dims[3] != Sk)
            return fmt::format("the padding input reaches the mask through '{}' of shape {}, not [{},1,1,{}]", name,
                               shape_str(g_.value(l.value).shape), B, Sk);
        for (int r = 0; r < 2; ++r)
            for (int s = 0; s < 2; ++s) {
                const auto& got = l.world[static_cast<size_t>(4 + 2 * r + s)]->at;
                const auto& ones = l.world[static_cast<size_t>(2 * kOnes + s)]->at;
                const auto& zeros = l.world[static_cast<size_t>(2 * kZeros + s)]->at;
                for (int64_t b = 0; b < l.dims[0]; ++b)
                    for (int64_t j = 0; j < Sk; ++j) {
                        const size_t at = static_cast<size_t>(b * Sk + j);
                        const double want = random_valid_[static_cast<size_t>(r)][at] ? ones[at] : zeros[at];
                        if (!(got[at] == want || (std::isnan(got[at]) && std::isnan(want))))
                            return fmt::format("'{}' is not a per-key function of the padding input", name);
                    }
            }
    }
    return "";
}

enum class Verdict { masked, kept, kept_biased, mixed };

bool masked(const Iv& m0, const Iv& m1) {
    return !m0.nan && !m1.nan && !empty(m0) && !empty(m1) && m0.hi <= kMasked && m1.hi <= kMasked;
}
bool kept(const Iv& m0, const Iv& m1) {
    return !m0.nan && !m1.nan && !empty(m0) && !empty(m1) && m0.lo == 0 && m0.hi == 0 && m1.lo >= 1 - kOneTolerance &&
           m1.hi <= 1 + kOneTolerance;
}

// An entry, or every entry of a tile, of a mask `probe + x` (additive_), from the set
// that holds x: masked (x <= -1e4: then probe + x is too, or within the rounding
// of 16-bit and wider floats of x + 1), kept with the bias x (x finite; exactly 0:
// `kept`), or mixed (some of each, or x NaN or +inf, which no rule takes).
Verdict additive_verdict(const Iv& x) {
    if (x.nan || empty(x)) return Verdict::mixed;
    if (x.hi <= kMasked) return Verdict::masked;
    if (x.lo > kMasked && x.hi < std::numeric_limits<double>::infinity())
        return x.lo == 0 && x.hi == 0 ? Verdict::kept : Verdict::kept_biased;
    return Verdict::mixed;
}

// No leaf varies over batch in the worlds the pattern reads (the padding input's
// fixed ones are equal in every batch row).
bool Classifier::batch_free() const {
    const int used = input_ == ir::kNoValue ? 2 : 4;
    for (const Leaf& l : expr_.leaves) {
        if (l.dims[0] == 1) continue;
        const size_t slice = static_cast<size_t>(l.dims[1] * l.dims[2] * l.dims[3]);
        for (int w = 0; w < used; ++w) {
            const std::vector<double>& a = l.world[static_cast<size_t>(w)]->at;
            for (size_t k = slice; k < a.size(); ++k)
                if (!(a[k] == a[k % slice] || (std::isnan(a[k]) && std::isnan(a[k % slice])))) return false;
        }
    }
    return true;
}

MaskTiles Classifier::run() {
    MaskTiles r;
    if (std::string why = evaluate_graph(); !why.empty()) {
        r.unsupported = why;
        return r;
    }
    if (input_ != ir::kNoValue) {
        if (std::string why = check_padding_leaves(); !why.empty()) {
            r.unsupported = why;
            return r;
        }
    }
    if (const std::optional<int> x = find_additive_bias(expr_, root_, probe_)) {
        additive_ = true;
        bias_ = *x;
    }
    const int64_t Sq = full_[2], Sk = full_[3];
    const Shape rs = g_.value(g_.outputs[0]).shape;
    const std::vector<int64_t> rd = aligned4(rs, full_);  // checked by leaf_of or is_plane
    const int64_t fb = rd[0], fh = rd[1];
    // Entries of one tile for the rule `f(e0, e1)`: rows (and columns) it does not vary over are computed once.
    const bool by_row = rd[2] > 1, by_col = rd[3] > 1;
    std::vector<PatternTiles> patterns;
    bool any_masked = false, any_bias = false;
    uint64_t bits[kWords];
    // Batch slices are computed once where no leaf varies over batch in the worlds read here.
    const int64_t nb = batch_free() ? 1 : fb;
    for (int64_t x = 0; x < nb; ++x)
        for (int64_t y = 0; y < fh; ++y) {
            PatternTiles p;
            for (int64_t ti = 0; ti < tile_rows_; ++ti) {
                int32_t listed = 0;
                const int64_t i0 = ti * kTile, i1 = std::min(Sq, i0 + kTile);
                for (int64_t tj = 0; tj < tile_cols_; ++tj) {
                    const int64_t j0 = tj * kTile, j1 = std::min(Sk, j0 + kTile);
                    if (input_ != ir::kNoValue && !masked(tile(2 * kZeros, x, y, ti, tj), tile(2 * kZeros + 1, x, y, ti, tj))) {
                        // With every key invalid each entry must be removed (an additive term counts as its value).
                        for (int64_t i = i0; i < (by_row ? i1 : i0 + 1); ++i)
                            for (int64_t j = j0; j < (by_col ? j1 : j0 + 1); ++j) {
                                const Iv e0 = entry(2 * kZeros, x, y, i, j), e1 = entry(2 * kZeros + 1, x, y, i, j);
                                if (!exact(e0) || !exact(e1)) {
                                    r.unsupported = "an entry's value is not exactly known";
                                    return r;
                                }
                                const double v0 = value(e0), v1 = value(e1);
                                const bool off = (v0 <= kMasked && v1 <= kMasked) ||
                                                 (std::abs(v1 - v0 - 1) <= kOneTolerance * std::max(1.0, std::abs(v0)) &&
                                                  v0 <= kMasked);
                                if (!off) {
                                    r.why_not = "the mask is not a key padding mask of input '" + g_.value(input_).name + "'";
                                    return r;
                                }
                            }
                    }
                    Verdict whole = Verdict::mixed;
                    if (additive_) {
                        whole = additive_verdict(tile(2 * kOnes, x, y, ti, tj, bias_));
                    } else {
                        const Iv m0 = tile(2 * kOnes, x, y, ti, tj), m1 = tile(2 * kOnes + 1, x, y, ti, tj);
                        whole = masked(m0, m1) ? Verdict::masked : kept(m0, m1) ? Verdict::kept : Verdict::mixed;
                    }
                    if (whole == Verdict::masked) {
                        any_masked = true;
                        continue;
                    }
                    if (whole == Verdict::kept || whole == Verdict::kept_biased) {
                        any_bias = any_bias || whole == Verdict::kept_biased;
                        p.cols.push_back(static_cast<int32_t>(tj));
                        p.bitmap.push_back(-1);
                        ++listed;
                        continue;
                    }
                    std::fill(std::begin(bits), std::end(bits), 0);
                    int64_t n_kept = 0;
                    for (int64_t i = i0; i < i1; ++i)
                        for (int64_t j = j0; j < j1; ++j) {
                            bool keep = false;
                            if (((by_row || i == i0) && (by_col || j == j0)) && additive_) {
                                const Iv e = entry(2 * kOnes, x, y, i, j, bias_);
                                if (!exact(e)) {
                                    r.unsupported = "an entry's value is not exactly known";
                                    return r;
                                }
                                const Verdict v = additive_verdict(e);
                                if (v == Verdict::mixed) {
                                    r.why_not = "the scores are not combined with the mask by addition or selection";
                                    return r;
                                }
                                keep = v != Verdict::masked;
                                any_bias = any_bias || v == Verdict::kept_biased;
                            } else if ((by_row || i == i0) && (by_col || j == j0)) {
                                const Iv e0 = entry(2 * kOnes, x, y, i, j), e1 = entry(2 * kOnes + 1, x, y, i, j);
                                if (!exact(e0) || !exact(e1)) {
                                    r.unsupported = "an entry's value is not exactly known";
                                    return r;
                                }
                                const double v0 = value(e0), v1 = value(e1);
                                if (v0 <= kMasked && v1 <= kMasked) {
                                    keep = false;
                                } else if (std::abs(v1 - v0 - 1) <= kOneTolerance * std::max(1.0, std::abs(v0))) {
                                    if (v0 != 0) {
                                        r.unsupported = "the mask adds a bias to the scores";
                                        return r;
                                    }
                                    keep = true;
                                } else {
                                    r.why_not = "the scores are not combined with the mask by addition or selection";
                                    return r;
                                }
                            } else {  // the same as the tile's first row / column
                                const int64_t ri = (by_row ? i : i0) - i0, rj = (by_col ? j : j0) - j0;
                                keep = (bits[(ri / 8) * (kTile / 8) + rj / 8] >> ((ri % 8) * 8 + rj % 8)) & 1;
                            }
                            if (!keep) continue;
                            const int64_t ri = i - i0, rj = j - j0;
                            bits[(ri / 8) * (kTile / 8) + rj / 8] |= uint64_t{1} << ((ri % 8) * 8 + rj % 8);
                            ++n_kept;
                        }
                    const int64_t area = (i1 - i0) * (j1 - j0);
                    if (n_kept < area) any_masked = true;
                    if (n_kept == 0) continue;
                    p.cols.push_back(static_cast<int32_t>(tj));
                    ++listed;
                    if (n_kept == area) {
                        p.bitmap.push_back(-1);
                        continue;
                    }
                    p.bitmap.push_back(static_cast<int32_t>(p.words.size() / kWords));
                    p.words.insert(p.words.end(), std::begin(bits), std::end(bits));
                }
                p.row_count.push_back(listed);
            }
            patterns.push_back(std::move(p));
        }
    r.padding = input_ != ir::kNoValue;
    if (any_bias) {
        const PositionBias bias = materialise_position_bias(expr_, bias_, 2 * kOnes, kept_tiles(patterns, nb, fh, Sq, Sk));
        r.bias_by_distance = bias.by_distance;
        if (!bias.unknown.empty()) {
            r.unsupported = bias.unknown;
            return r;
        }
        r.bias = bias.values;
    }
    if (!any_masked) return r;
    // Batch and head patterns collapse to one where every slice is equal.
    auto at = [&](int64_t x, int64_t y) -> const PatternTiles& { return patterns[static_cast<size_t>(x * fh + y)]; };
    bool batch_same = true, head_same = true;
    for (int64_t x = 1; x < nb && batch_same; ++x)
        for (int64_t y = 0; y < fh && batch_same; ++y) batch_same = at(x, y) == at(0, y);
    for (int64_t y = 1; y < fh && head_same; ++y)
        for (int64_t x = 0; x < nb && head_same; ++x) head_same = at(x, y) == at(x, 0);
    auto m = std::make_shared<SparseMask>();
    m->rows = static_cast<int32_t>(Sq);
    m->cols = static_cast<int32_t>(Sk);
    m->tile_m = m->tile_n = kTile;
    m->mask_batch = static_cast<int32_t>(batch_same ? 1 : fb);
    m->mask_heads = static_cast<int32_t>(head_same ? 1 : fh);
    for (int64_t x = 0; x < m->mask_batch; ++x)
        for (int64_t y = 0; y < m->mask_heads; ++y) {
            const PatternTiles& p = at(x, y);
            const int32_t base = static_cast<int32_t>(m->bitmaps.size() / kWords);
            m->row_ptr.push_back(static_cast<int32_t>(m->col_idx.size()));
            for (int32_t c : p.row_count) m->row_ptr.push_back(m->row_ptr.back() + c);
            m->col_idx.insert(m->col_idx.end(), p.cols.begin(), p.cols.end());
            for (int32_t b : p.bitmap) m->bitmap_idx.push_back(b < 0 ? -1 : base + b);
            m->bitmaps.insert(m->bitmaps.end(), p.words.begin(), p.words.end());
        }
    m->validate();
    r.keep = std::move(m);
    return r;
}

}  // namespace

MaskTiles classify_mask_tiles(const ir::Graph& sub, ValueId probe, ValueId input, int64_t B, int64_t H, int64_t Sq, int64_t Sk) {
    return Classifier(sub, probe, input, B, H, Sq, Sk).run();
}

}  // namespace stof::passes
