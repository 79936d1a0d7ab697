#include "mask/position_bias.hpp"

#include "parallel.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace stof {

namespace {

using ir::Op;
using namespace stof::interval;
using SymNode = MaskExpression::SymNode;
using Leaf = MaskExpression::Leaf;

// How a value of the bias varies over the entries (i, j) of one slice: one value at every
// entry, exactly a + p*i + q*j (integers exact in its dtype), a function of j - i alone, or
// none of these known.
struct Form {
    enum Kind { constant, affine, diagonal, general } kind = general;
    Iv value;                    // constant
    double a = 0, p = 0, q = 0;  // affine
};

// A function of j - i alone.
bool by_distance(const Form& f) {
    return f.kind == Form::constant || f.kind == Form::diagonal || (f.kind == Form::affine && f.p == -f.q);
}

// Integers of magnitude up to this are exact in t, and sums of them computed as the
// reference does (in double, then stored as t) are too; 0 for bool.
double exact_integers(DType t) {
    switch (t) {
        case DType::f16: return 2048;
        case DType::bf16: return 256;
        case DType::f32: return 16777216;
        case DType::boolean:
        case DType::u8:
        case DType::undefined: return 0;
        default: return dtype_size(t) >= 8 ? 9007199254740992.0 : std::ldexp(1.0, 8 * int(dtype_size(t)) - 1) - 1;
    }
}

// The bias (argument `bias` of the expression) at entries of [Sq, Sk] slices, its leaves
// read in world `world`.
class BiasEvaluator {
public:
    BiasEvaluator(const MaskExpression& e, int bias, int world, int64_t Sq, int64_t Sk);

    // The SymNodes the bias reads at every entry of rows [i0, i1) x columns [j0, j1) of slice
    // (x, y) into block (per SymNode, row-major); with `heads_only` only those varying over
    // heads (the others kept from the same block at another head). Safe to run concurrently.
    void eval_block(std::vector<std::vector<Iv>>& block, int64_t x, int64_t y, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                    bool heads_only) const;
    // As eval_block at `count` entries: `entries(f)` calls f(e, i, j) for e = 0..count-1.
    template <class Entries>
    void eval_entries(std::vector<std::vector<Iv>>& block, int64_t x, int64_t y, int64_t count, Entries entries,
                      bool heads_only) const;
    // The bias of slice (x, y) per distance d = j - i (index d + Sq - 1), [nb, fh] of them,
    // where it is proven a function of j - i in every slice and exactly known at every distance;
    // else nothing.
    std::vector<std::vector<float>> by_distance_values(int64_t nb, int64_t fh) const;

private:
    Form leaf_form(const Leaf& l, int64_t x, int64_t y) const;

    const MaskExpression& e_;
    int bias_, world_;
    int64_t Sq_, Sk_;
    std::vector<char> by_head_;     // per SymNode: reads a leaf or a table with more than one head
    std::vector<char> bias_reads_;  // per SymNode: the bias is it or reads it
};

BiasEvaluator::BiasEvaluator(const MaskExpression& e, int bias, int world, int64_t Sq, int64_t Sk)
    : e_(e), bias_(bias), world_(world), Sq_(Sq), Sk_(Sk) {
    by_head_.assign(e_.syms.size(), 0);
    for (size_t k = 0; k < e_.syms.size(); ++k) {
        const SymNode& n = e_.syms[k];
        bool r = n.table >= 0 && e_.tables[static_cast<size_t>(n.table)].heads > 1;
        for (int a : n.args)
            r = r || (a >= 0 ? by_head_[static_cast<size_t>(a)] != 0 : e_.leaves[static_cast<size_t>(-a - 1)].dims[1] > 1);
        by_head_[k] = r;
    }
    if (bias_ < 0) return;
    bias_reads_.assign(e_.syms.size(), 0);
    bias_reads_[static_cast<size_t>(bias_)] = 1;
    for (size_t k = static_cast<size_t>(bias_) + 1; k-- > 0;)
        if (bias_reads_[k])
            for (int a : e_.syms[k].args)
                if (a >= 0) bias_reads_[static_cast<size_t>(a)] = 1;
}

void BiasEvaluator::eval_block(std::vector<std::vector<Iv>>& block, int64_t x, int64_t y, int64_t i0, int64_t i1, int64_t j0,
                               int64_t j1, bool heads_only) const {
    eval_entries(
        block, x, y, (i1 - i0) * (j1 - j0),
        [&](auto f) {
            for (int64_t i = i0, e = 0; i < i1; ++i)
                for (int64_t j = j0; j < j1; ++j, ++e) f(e, i, j);
        },
        heads_only);
}

template <class Entries>
void BiasEvaluator::eval_entries(std::vector<std::vector<Iv>>& block, int64_t x, int64_t y, int64_t count, Entries entries,
                                 bool heads_only) const {
    block.resize(e_.syms.size());
    // An argument at entry e = (i, j): a SymNode's block, or a leaf's entries by strides.
    struct Arg {
        const Iv* block = nullptr;
        const double* leaf = nullptr;
        int64_t row_stride = 0, col_stride = 0;
    };
    std::vector<Arg> args;
    std::vector<Iv> in;
    for (size_t k = 0; k <= static_cast<size_t>(bias_); ++k) {
        const SymNode& n = e_.syms[k];
        if (!bias_reads_[k] || (heads_only && !by_head_[k])) continue;
        args.assign(n.args.size(), Arg{});
        for (size_t a = 0; a < n.args.size(); ++a) {
            const int v = n.args[a];
            if (v >= 0) {
                args[a].block = block[static_cast<size_t>(v)].data();
                continue;
            }
            const Leaf& l = e_.leaves[static_cast<size_t>(-v - 1)];
            const int64_t s = (l.dims[0] == 1 ? 0 : x) * l.dims[1] + (l.dims[1] == 1 ? 0 : y);
            args[a].row_stride = l.dims[2] == 1 ? 0 : l.dims[3];
            args[a].col_stride = l.dims[3] == 1 ? 0 : 1;
            args[a].leaf = l.world[static_cast<size_t>(world_)]->at.data() + s * l.dims[2] * l.dims[3];
        }
        std::vector<Iv>& out = block[k];
        out.resize(static_cast<size_t>(count));
        if (view_op(n.op) && args[0].block) {  // the same entries
            std::copy(args[0].block, args[0].block + count, out.begin());
            continue;
        }
        in.resize(n.args.size());
        const MaskExpression::Table* table = n.table >= 0 ? &e_.tables[static_cast<size_t>(n.table)] : nullptr;
        entries([&](int64_t e, int64_t i, int64_t j) {
            for (size_t a = 0; a < n.args.size(); ++a)
                in[a] = args[a].block ? args[a].block[e] : point(args[a].leaf[i * args[a].row_stride + j * args[a].col_stride]);
            out[static_cast<size_t>(e)] = table ? table->lookup(in[0], y) : apply(n.op, n.dtype, in.data(), in.size());
        });
    }
}

Form BiasEvaluator::leaf_form(const Leaf& l, int64_t x, int64_t y) const {
    const int64_t rows = l.dims[2], cols = l.dims[3], n = rows * cols;
    const int64_t s = (l.dims[0] == 1 ? 0 : x) * l.dims[1] + (l.dims[1] == 1 ? 0 : y);
    const double* v = l.world[static_cast<size_t>(world_)]->at.data() + s * n;
    auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
    Form f;
    if (std::all_of(v, v + n, [&](double e) { return same(e, v[0]); })) {
        f.kind = Form::constant;
        f.value = point(v[0]);
        return f;
    }
    if (rows > 1 && cols > 1) {  // [Sq, Sk]: equal along every diagonal
        for (int64_t i = 0; i + 1 < rows; ++i)
            for (int64_t j = 0; j + 1 < cols; ++j)
                if (!same(v[i * cols + j], v[(i + 1) * cols + j + 1])) return f;
        f.kind = Form::diagonal;
        return f;
    }
    // One index: integers in arithmetic progression, exact in the leaf's dtype.
    const double limit = exact_integers(l.dtype), step = v[1] - v[0];
    for (int64_t k = 0; k < n; ++k)
        if (!(v[k] == v[0] + double(k) * step && v[k] == std::trunc(v[k]) && std::abs(v[k]) <= limit)) return f;
    f.kind = Form::affine;
    f.a = v[0];
    (rows > 1 ? f.p : f.q) = step;
    return f;
}

std::vector<std::vector<float>> BiasEvaluator::by_distance_values(int64_t nb, int64_t fh) const {
    const int64_t Sq = Sq_, Sk = Sk_, distances = Sq + Sk - 1;
    // The bias's form per slice, from its leaves' entries and its ops: elementwise ops of
    // functions of j - i are one; Add, Sub, Neg and Cast of exact integer affine forms stay
    // affine (a + p*i + q*j, a function of j - i where q = -p) while every value they take is
    // exact in their dtype; comparisons of two such forms whose difference is a function of
    // j - i are one (j <= i).
    auto affine_or_integer = [](const Form& f, Form* r) {
        if (f.kind == Form::affine) {
            *r = f;
            return true;
        }
        if (f.kind != Form::constant || !exact(f.value) || f.value.nan || f.value.lo != std::trunc(f.value.lo)) return false;
        *r = Form{Form::affine, {}, f.value.lo, 0, 0};
        return true;
    };
    for (int64_t x = 0; x < nb; ++x)
        for (int64_t y = 0; y < fh; ++y) {
            std::vector<Form> forms(e_.syms.size());
            std::map<int, Form> leaf_forms;
            auto form_of = [&](int a) -> Form {
                if (a >= 0) return forms[static_cast<size_t>(a)];
                auto [it, fresh] = leaf_forms.try_emplace(a);
                if (fresh) it->second = leaf_form(e_.leaves[static_cast<size_t>(-a - 1)], x, y);
                return it->second;
            };
            if (bias_ < 0) {
                if (!by_distance(form_of(bias_))) return {};
                continue;
            }
            for (size_t k = 0; k <= static_cast<size_t>(bias_); ++k) {
                if (!bias_reads_[k]) continue;
                const SymNode& n = e_.syms[k];
                std::vector<Form> in;
                for (int a : n.args) in.push_back(form_of(a));
                Form& r = forms[k];
                if (std::all_of(in.begin(), in.end(), [](const Form& f) { return f.kind == Form::constant; })) {
                    std::vector<Iv> v;
                    for (const Form& f : in) v.push_back(f.value);
                    r.kind = Form::constant;
                    r.value = n.table >= 0 ? e_.tables[static_cast<size_t>(n.table)].lookup(v[0], y)
                                           : apply(n.op, n.dtype, v.data(), v.size());
                    continue;
                }
                if (view_op(n.op)) {
                    r = in[0];
                    continue;
                }
                Form u, v;
                const bool linear = n.table < 0 && (n.op == Op::Add || n.op == Op::Sub || n.op == Op::Neg || n.op == Op::Cast);
                if (linear && affine_or_integer(in[0], &u) && (in.size() == 1 || affine_or_integer(in[1], &v))) {
                    const double sign = n.op == Op::Sub ? -1 : 1;
                    if (n.op == Op::Neg) r = Form{Form::affine, {}, -u.a, -u.p, -u.q};
                    else if (n.op == Op::Cast) r = u;
                    else r = Form{Form::affine, {}, u.a + sign * v.a, u.p + sign * v.p, u.q + sign * v.q};
                    // Bounds every value a + p*i + q*j and every term of it.
                    const double most = std::abs(r.a) + std::abs(r.p) * double(Sq - 1) + std::abs(r.q) * double(Sk - 1);
                    if (most <= exact_integers(n.dtype)) continue;
                }
                r = Form{};
                // A comparison of exact affine forms is one of their difference.
                const bool compare = n.op == Op::Less || n.op == Op::LessOrEqual || n.op == Op::Greater ||
                                     n.op == Op::GreaterOrEqual || n.op == Op::Equal;
                if (compare && affine_or_integer(in[0], &u) && affine_or_integer(in[1], &v) && u.p - v.p == v.q - u.q)
                    r.kind = Form::diagonal;
                if (std::all_of(in.begin(), in.end(), by_distance)) r.kind = Form::diagonal;
            }
            if (!by_distance(forms[static_cast<size_t>(bias_)])) return {};
        }
    // Each distance at its first entry (max(0, -d), max(0, -d) + d), as eval_block evaluates it;
    // the ops that do not vary over heads once per batch slice.
    std::vector<std::vector<float>> r(static_cast<size_t>(nb * fh), std::vector<float>(static_cast<size_t>(distances)));
    std::vector<std::vector<Iv>> block;
    auto diagonal = [&](auto f) {
        for (int64_t e = 0; e < distances; ++e) {
            const int64_t d = e - (Sq - 1), i = std::max<int64_t>(0, -d);
            f(e, i, i + d);
        }
    };
    for (int64_t x = 0; x < nb; ++x)
        for (int64_t y = 0; y < fh; ++y) {
            std::vector<float>& out = r[static_cast<size_t>(x * fh + y)];
            if (bias_ >= 0) eval_entries(block, x, y, distances, diagonal, y > 0);
            for (int64_t e = 0; e < distances; ++e) {
                const int64_t d = e - (Sq - 1), i = std::max<int64_t>(0, -d);
                const Iv v = bias_ >= 0 ? block[static_cast<size_t>(bias_)][static_cast<size_t>(e)]
                                        : e_.leaves[static_cast<size_t>(-bias_ - 1)].entry(world_, x, y, i, i + d);
                if (!exact(v)) return {};
                out[static_cast<size_t>(e)] = static_cast<float>(value(v));
            }
        }
    return r;
}

}  // namespace

std::optional<int> find_additive_bias(const MaskExpression& e, int root, ir::ValueId probe) {
    if (root < 0) return {};
    const SymNode& r = e.syms[static_cast<size_t>(root)];
    if (r.op != Op::Add || r.args.size() != 2 || !(r.dtype == DType::f32 || r.dtype == DType::f64 || r.dtype == DType::f16))
        return {};
    std::vector<char> reads_probe(e.syms.size(), 0);
    auto probe_leaf = [&](int a) { return a < 0 && e.leaves[static_cast<size_t>(-a - 1)].value == probe; };
    auto reads = [&](int a) { return probe_leaf(a) || (a >= 0 && reads_probe[static_cast<size_t>(a)]); };
    for (size_t k = 0; k < e.syms.size(); ++k)
        for (int a : e.syms[k].args) reads_probe[k] = reads_probe[k] || reads(a);
    std::optional<int> bias;
    for (int side = 0; side < 2; ++side)
        if (probe_leaf(r.args[static_cast<size_t>(side)]) && !reads(r.args[static_cast<size_t>(1 - side)]))
            bias = r.args[static_cast<size_t>(1 - side)];
    return bias;
}

PositionBias materialise_position_bias(const MaskExpression& e, int bias, int world, const KeptTiles& kept) {
    const int64_t nb = kept.batch, fh = kept.heads, Sq = kept.seq_q, Sk = kept.seq_k, plane = Sq * Sk;
    const int64_t side = kept.side, tile_rows = (Sq + side - 1) / side, tile_cols = (Sk + side - 1) / side;
    const int64_t tiles = tile_rows * tile_cols, words_per_row = side / 8, words_per_tile = words_per_row * words_per_row;
    PositionBias r;
    Tensor all(DType::f32, {nb, fh, Sq, Sk});  // zero-filled
    float* const out_bias = all.data<float>();
    // A bias of j - i alone is read from its values per distance; any other is evaluated tile by
    // tile, the heads inner: the ops that do not vary over heads once per tile. Tile rows on every core.
    const BiasEvaluator ev(e, bias, world, Sq, Sk);
    const std::vector<std::vector<float>> distance = ev.by_distance_values(nb, fh);
    r.by_distance = !distance.empty();
    std::vector<std::string> why(static_cast<size_t>(nb * tile_rows));
    std::vector<char> nonzero(static_cast<size_t>(nb * tile_rows), 0);
    parallel_for(static_cast<size_t>(nb * tile_rows), [&](size_t task) {
        const int64_t x = static_cast<int64_t>(task) / tile_rows, ti = static_cast<int64_t>(task) % tile_rows;
        if (!distance.empty()) {
            bool any = false;
            for (int64_t tj = 0; tj < tile_cols; ++tj) {
                const int64_t i0 = ti * side, i1 = std::min(Sq, i0 + side), j0 = tj * side, j1 = std::min(Sk, j0 + side);
                for (int64_t y = 0; y < fh; ++y) {
                    const size_t q = static_cast<size_t>(x * fh + y);
                    const int32_t b = kept.state[q * static_cast<size_t>(tiles) + static_cast<size_t>(ti * tile_cols + tj)];
                    if (b == -2) continue;
                    const uint64_t* words = b >= 0 ? kept.words[q] + b * words_per_tile : nullptr;
                    float* out = out_bias + static_cast<int64_t>(q) * plane;
                    for (int64_t i = i0; i < i1; ++i) {
                        const float* at = distance[q].data() + (Sq - 1 - i);  // at[j]: distance j - i
                        float* row = out + i * Sk;
                        const int64_t ri = i - i0;
                        for (int64_t j = j0; j < j1; ++j) {
                            const int64_t rj = j - j0;
                            if (words && !((words[(ri / 8) * words_per_row + rj / 8] >> ((ri % 8) * 8 + rj % 8)) & 1)) continue;
                            row[j] = at[j];
                            any = any || at[j] != 0;
                        }
                    }
                }
            }
            nonzero[task] = any;
            return;
        }
        std::vector<std::vector<Iv>> block;
        for (int64_t tj = 0; tj < tile_cols; ++tj) {
            const int64_t i0 = ti * side, i1 = std::min(Sq, i0 + side), j0 = tj * side, j1 = std::min(Sk, j0 + side);
            bool fresh = true;
            for (int64_t y = 0; y < fh; ++y) {
                const size_t q = static_cast<size_t>(x * fh + y);
                const int32_t b = kept.state[q * static_cast<size_t>(tiles) + static_cast<size_t>(ti * tile_cols + tj)];
                if (b == -2) continue;
                if (bias >= 0) ev.eval_block(block, x, y, i0, i1, j0, j1, !fresh);
                fresh = false;
                const uint64_t* words = b >= 0 ? kept.words[q] + b * words_per_tile : nullptr;
                float* out = out_bias + static_cast<int64_t>(q) * plane;
                for (int64_t i = i0; i < i1; ++i)
                    for (int64_t j = j0; j < j1; ++j) {
                        const int64_t ri = i - i0, rj = j - j0;
                        if (words && !((words[(ri / 8) * words_per_row + rj / 8] >> ((ri % 8) * 8 + rj % 8)) & 1)) continue;
                        const Iv v = bias >= 0 ? block[static_cast<size_t>(bias)][static_cast<size_t>(ri * (j1 - j0) + rj)]
                                               : e.leaves[static_cast<size_t>(-bias - 1)].entry(world, x, y, i, j);
                        if (!exact(v)) {
                            why[task] = "an entry's value is not exactly known";
                            return;
                        }
                        const float f = static_cast<float>(value(v));
                        out[i * Sk + j] = f;
                        if (f != 0) nonzero[task] = 1;
                    }
            }
        }
    });
    for (const std::string& w : why)
        if (!w.empty()) return PositionBias{nullptr, false, w};
    const bool any = std::find(nonzero.begin(), nonzero.end(), 1) != nonzero.end();
    if (!any) return r;
    auto slice = [&](int64_t x, int64_t y) { return out_bias + (x * fh + y) * plane; };
    auto same = [&](const float* a, const float* b) {
        return std::equal(a, a + plane, b, [](float u, float v) { return u == v || (std::isnan(u) && std::isnan(v)); });
    };
    bool batch_same = true, head_same = true;
    for (int64_t x = 1; x < nb && batch_same; ++x)
        for (int64_t y = 0; y < fh && batch_same; ++y) batch_same = same(slice(x, y), slice(0, y));
    for (int64_t y = 1; y < fh && head_same; ++y)
        for (int64_t x = 0; x < nb && head_same; ++x) head_same = same(slice(x, y), slice(x, 0));
    const int64_t ob = batch_same ? 1 : nb, oh = head_same ? 1 : fh;
    if (ob == nb && oh == fh) {
        r.values = std::make_shared<const Tensor>(std::move(all));
        return r;
    }
    Tensor t(DType::f32, {ob, oh, Sq, Sk});
    for (int64_t x = 0; x < ob; ++x)
        for (int64_t y = 0; y < oh; ++y) std::copy(slice(x, y), slice(x, y) + plane, t.data<float>() + (x * oh + y) * plane);
    r.values = std::make_shared<const Tensor>(std::move(t));
    return r;
}

}  // namespace stof
