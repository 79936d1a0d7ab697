// fuse-rotary: the rotary position embedding of the heads split from one tensor
// (rotate-half form, LLaMA's exports) becomes one Rotary node on that tensor:
//   y_0 .. y_n-1 = Split(M, last axis)            (or, one branch, y_0 = M itself)
//   x_i   = Transpose(Reshape(y_i → [B,S,H_i,D]), [0,2,1,3])    (or x_i = Reshape(y_i) [B,S,H_i,D])
//   out_i = x_i·cos4 + Concat(−Slice(x_i, D/2..D), Slice(x_i, 0..D/2), last axis)·sin4
//           (Mul and Add operands in either order; Slice steps 1, ends clamped)
//   cos4, sin4 broadcast to x_i with values that depend only on (batch, position, e):
//           [1|B, 1, 1|S, 1|D] (transposed form) or [1|B, 1|S, 1, 1|D], x's type
// → Y = Rotary(M, cos, sin) {head_dim D, rot_cols R}, cos and sin [P, D] (P = S, or B·S when
//   the tables differ per batch; a constant, or a Reshape of a run-time table, whose nodes
//   after the Split move before it), the Split (or the Reshape) reading Y, and out_i =
//   Transpose(Reshape(y_i)) (or Reshape(y_i)) in place of the Add: every reader of out_i,
//   graph outputs included, now reads the rotated heads, and attention reads Q, K and V in
//   place from Y.
// The rotated branches are Split outputs 0..k-1 (columns [0, R) of M, R the sum of their
// widths) of one B, S and D and one cos and sin (the same values, or constants with equal
// data); a Split with a rotated branch after an unrotated one, or branches that disagree, is
// left alone. M (no graph output) is read only by the Split (or the Reshape); every y_i,
// reshaped y_i, x_i and intermediate is read only inside its branch and is no graph output.
// The one-branch form needs M not to be a Split output.
#include "passes/match.hpp"
#include "passes/passes.hpp"
#include "stof/error.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace stof::passes {

namespace {

using ir::Op;
using ir::ValueId;

// One rotated branch: y → Reshape → [Transpose] → x → the rotate-half pattern → out.
struct Branch {
    const ir::Node* reshape = nullptr;
    const ir::Node* transpose = nullptr;   // nullptr: x is the Reshape's [B,S,H,D]
    std::vector<const ir::Node*> pattern;  // the two Muls, the Slices, the Neg, the Concat, the Add
    ValueId out = ir::kNoValue;
    ValueId cos = ir::kNoValue, sin = ir::kNoValue;  // cos4 and sin4 as the Muls read them
    int64_t batch = 0, seq = 0, dim = 0;

    // The node whose output the branch's readers read once rewritten (it then writes `out`).
    const ir::Node& last() const { return transpose ? *transpose : *reshape; }
};

// [start, end) of Slice node s when it slices only the last axis of its input with step 1
// (bounds clamped as ONNX does); nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> last_axis_slice(const Matcher& m, const ir::Node& s) {
    std::vector<int64_t> arg[5];
    for (size_t k = 1; k < 5; ++k) {
        if (k >= s.inputs.size() || s.inputs[k] == ir::kNoValue) continue;
        const ir::Value& v = m.g.value(s.inputs[k]);
        if (!v.data || !is_integer(v.dtype)) return std::nullopt;
        for (int64_t i = 0; i < v.data->numel(); ++i) arg[k].push_back(v.data->get_i64(i));
    }
    const Shape& in = m.g.value(s.inputs[0]).shape;
    const auto rank = static_cast<int64_t>(in.size());
    if (rank == 0 || arg[1].size() != 1 || arg[2].size() != 1 || arg[3].size() != 1) return std::nullopt;
    if (arg[3][0] != -1 && arg[3][0] != rank - 1) return std::nullopt;
    if (!arg[4].empty() && (arg[4].size() != 1 || arg[4][0] != 1)) return std::nullopt;
    const int64_t dim = in.back();
    auto clamp = [dim](int64_t v) { return std::min(std::max<int64_t>(v < 0 ? v + dim : v, 0), dim); };
    return std::make_pair(clamp(arg[1][0]), clamp(arg[2][0]));
}

// t (cos4 or sin4) padded to rank 4 with leading ones, when its rank is at most 4.
std::optional<Shape> table_shape(const Matcher& m, ValueId t) {
    const Shape& s = m.g.value(t).shape;
    if (s.size() > 4) return std::nullopt;
    Shape p(4 - s.size(), 1);
    p.insert(p.end(), s.begin(), s.end());
    return p;
}

// The dims of a padded table that hold the position and the heads.
size_t seq_axis(const Branch& b) { return b.transpose ? 2 : 1; }
size_t head_axis(const Branch& b) { return b.transpose ? 1 : 2; }

// Table t read by branch b depends only on (batch, position, e): every dim is 1 or x's, the head dim 1.
bool table_fits(const Matcher& m, const Branch& b, ValueId t, DType dt) {
    const std::optional<Shape> p = table_shape(m, t);
    if (!p || m.g.value(t).dtype != dt) return false;
    const size_t s = seq_axis(b);
    return (*p)[head_axis(b)] == 1 && ((*p)[0] == 1 || (*p)[0] == b.batch) && ((*p)[s] == 1 || (*p)[s] == b.seq) &&
           ((*p)[3] == 1 || (*p)[3] == b.dim);
}

// The branch that reads y (a Split output, or M itself), or nullopt.
std::optional<Branch> match_branch(const Matcher& m, ValueId y) {
    const ir::Node* r = m.sole_consumer(y, Op::Reshape);
    if (!r) return std::nullopt;
    const Shape ys = m.g.value(y).shape, rs = m.g.value(r->outputs[0]).shape;
    const DType dt = m.g.value(y).dtype;
    if (!is_float(dt) || ys.empty() || rs.size() != 4 || rs[2] * rs[3] != ys.back() || numel(ys) != numel(rs) || rs[3] < 2 ||
        rs[3] % 2 != 0)
        return std::nullopt;
    Branch b;
    b.reshape = r;
    b.batch = rs[0];
    b.seq = rs[1];
    b.dim = rs[3];
    const int64_t h = b.dim / 2;
    ValueId x = r->outputs[0];
    if (const ir::Node* t = m.sole_consumer(x, Op::Transpose);
        t && t->attrs.ints("perm", {}) == std::vector<int64_t>{0, 2, 1, 3}) {
        b.transpose = t;
        x = t->outputs[0];
    }
    const Shape xs = m.g.value(x).shape;
    // x is read by exactly the Mul with cos4 and the two Slices.
    if (m.is_output(x) || m.consumers(x).size() != 3) return std::nullopt;
    const ir::Node *mul_cos = nullptr, *lo = nullptr, *hi = nullptr;
    for (int c : m.consumers(x)) {
        const ir::Node& n = m.g.nodes[static_cast<size_t>(c)];
        if (n.op == Op::Mul && !mul_cos && n.inputs[0] != n.inputs[1]) {
            mul_cos = &n;
            continue;
        }
        if (n.op != Op::Slice || n.inputs[0] != x) return std::nullopt;
        const auto range = last_axis_slice(m, n);
        if (range == std::make_pair(int64_t{0}, h) && !lo) lo = &n;
        else if (range == std::make_pair(h, b.dim) && !hi) hi = &n;
        else return std::nullopt;
    }
    if (!mul_cos || !lo || !hi) return std::nullopt;
    const ir::Node* neg = m.sole_consumer(hi->outputs[0], Op::Neg);
    const ir::Node* cat = neg ? m.sole_consumer(neg->outputs[0], Op::Concat) : nullptr;
    if (!cat || m.sole_consumer(lo->outputs[0]) != cat || cat->inputs.size() != 2 || cat->inputs[0] != neg->outputs[0] ||
        cat->inputs[1] != lo->outputs[0])
        return std::nullopt;
    const int64_t axis = cat->attrs.i("axis", 0);
    if (axis != -1 && axis != 3) return std::nullopt;
    const ir::Node* mul_sin = m.sole_consumer(cat->outputs[0], Op::Mul);
    const ir::Node* add = m.sole_consumer(mul_cos->outputs[0], Op::Add);
    if (!mul_sin || !add || m.sole_consumer(mul_sin->outputs[0]) != add ||
        other_input(*add, mul_cos->outputs[0]) != mul_sin->outputs[0])
        return std::nullopt;
    b.cos = other_input(*mul_cos, x);
    b.sin = other_input(*mul_sin, cat->outputs[0]);
    b.out = add->outputs[0];
    for (ValueId v : {cat->outputs[0], mul_cos->outputs[0], mul_sin->outputs[0], b.out})
        if (m.g.value(v).shape != xs) return std::nullopt;
    if (!table_fits(m, b, b.cos, dt) || !table_fits(m, b, b.sin, dt)) return std::nullopt;
    b.pattern = {mul_cos, lo, hi, neg, cat, mul_sin, add};
    return b;
}

// A table Rotary reads ([P, D]): a constant, or the run-time value reshaped to it.
struct Table {
    std::optional<Tensor> data;
    ValueId value = ir::kNoValue;
};

// Constant table t4 of branch b as [P, D]: row q holds position q % S of batch q / S (batch 0 when P = S).
Tensor flatten_table(const Matcher& m, const Branch& b, ValueId t4, int64_t positions) {
    const Tensor& t = *m.g.value(t4).data;
    const Shape p = *table_shape(m, t4);
    Tensor out(t.dtype, {positions, b.dim});
    const size_t s = seq_axis(b);
    auto stride = [&](size_t axis) {
        int64_t st = 1;
        for (size_t k = axis + 1; k < 4; ++k) st *= p[k];
        return p[axis] == 1 ? 0 : st;
    };
    for (int64_t q = 0; q < positions; ++q)
        for (int64_t e = 0; e < b.dim; ++e)
            out.set_f64(q * b.dim + e, t.get_f64((q / b.seq) * stride(0) + (q % b.seq) * stride(s) + e * stride(3)));
    return out;
}

// The cos (or sin) table every branch reads, as [P, D]; nullopt when the branches read
// different tables, or a run-time table that is no [P, D] view.
std::optional<Table> rotary_table(const Matcher& m, const std::vector<Branch>& bs, bool sin, int64_t positions) {
    auto of = [sin](const Branch& b) { return sin ? b.sin : b.cos; };
    const ValueId t0 = of(bs[0]);
    if (!m.g.value(t0).data) {
        const Shape p = *table_shape(m, t0);
        if (numel(p) != positions * bs[0].dim || p[seq_axis(bs[0])] != bs[0].seq || p[3] != bs[0].dim) return std::nullopt;
        for (const Branch& b : bs)
            if (of(b) != t0) return std::nullopt;
        return Table{std::nullopt, t0};
    }
    Table t{flatten_table(m, bs[0], t0, positions), ir::kNoValue};
    for (const Branch& b : bs) {
        if (of(b) == t0) continue;
        if (!m.g.value(of(b)).data || flatten_table(m, b, of(b), positions).bytes != t.data->bytes) return std::nullopt;
    }
    return t;
}

// The nodes from `head` on that the run-time tables depend on (exporters compute cos and sin
// for each layer where they are used, after the projection is split), in graph order: Rotary
// runs where head is, so they move before it. nullopt when a table depends on head itself or
// on a node another rewrite takes.
std::optional<std::vector<const ir::Node*>> hoisted(const Matcher& m, const ir::Node& head, const std::vector<ValueId>& tables) {
    std::vector<const ir::Node*> nodes;
    bool ok = true;
    walk_back(m, tables, [&](ValueId v) {
        const ir::Node* p = m.producer(v);
        if (!p || m.index(*p) < m.index(head)) return false;
        ok = ok && p != &head && !m.claimed(*p);
        if (std::find(nodes.begin(), nodes.end(), p) == nodes.end()) nodes.push_back(p);
        return ok;
    });
    if (!ok) return std::nullopt;
    std::sort(nodes.begin(), nodes.end(), [&](const ir::Node* a, const ir::Node* b) { return m.index(*a) < m.index(*b); });
    return nodes;
}

// Rewrites `head` (the Split of M, or the one branch's Reshape of M) and branches bs.
bool rewrite(Matcher& m, const ir::Node& head, const std::vector<Branch>& bs) {
    const ValueId mv = head.inputs[0];
    const Shape ms = m.g.value(mv).shape;
    const DType dt = m.g.value(mv).dtype;
    if (m.is_output(mv) || ms.size() < 2) return false;
    for (const Branch& b : bs)
        if (b.dim != bs[0].dim || b.batch != bs[0].batch || b.seq != bs[0].seq) return false;
    const int64_t d = bs[0].dim, batch = bs[0].batch, seq = bs[0].seq;
    bool per_batch = false;
    for (const Branch& b : bs)
        for (ValueId t : {b.cos, b.sin}) per_batch = per_batch || (*table_shape(m, t))[0] > 1;
    const int64_t positions = per_batch ? batch * seq : seq;
    const std::optional<Table> cos = rotary_table(m, bs, false, positions);
    const std::optional<Table> sin = rotary_table(m, bs, true, positions);
    if (!cos || !sin) return false;
    std::vector<ValueId> run_time;
    for (const Table* t : {&*cos, &*sin})
        if (!t->data) run_time.push_back(t->value);
    const std::optional<std::vector<const ir::Node*>> moved = hoisted(m, head, run_time);
    if (!moved) return false;
    int64_t rot_cols = 0;
    std::vector<const ir::Node*> all{&head};
    for (const Branch& b : bs) {
        rot_cols += m.g.value(b.reshape->inputs[0]).shape.back();
        all.push_back(&b.last());
        all.insert(all.end(), b.pattern.begin(), b.pattern.end());
    }
    if (std::any_of(all.begin(), all.end(), [&](const ir::Node* n) { return m.claimed(*n); })) return false;

    std::vector<ir::Node> first;
    for (const ir::Node* n : *moved) first.push_back(*n);
    ir::Node rot;
    rot.op = Op::Rotary;
    rot.name = m.node_name(head, "Rotary");
    ValueId tables[2];
    for (int k = 0; k < 2; ++k) {
        const Table& t = k == 0 ? *cos : *sin;
        const std::string hint = rot.name + (k == 0 ? ".cos" : ".sin");
        if (t.data) {
            tables[k] = m.g.add_constant(*t.data, hint);
            continue;
        }
        Tensor shape(DType::i64, {2});
        shape.set_i64(0, positions);
        shape.set_i64(1, d);
        ir::Node r;
        r.op = Op::Reshape;
        r.name = m.unique_node_name(hint);
        r.inputs = {t.value, m.g.add_constant(shape, hint + "_shape")};
        r.outputs = {m.new_value(hint, dt, {positions, d})};
        tables[k] = r.outputs[0];
        first.push_back(std::move(r));
    }
    rot.inputs = {mv, tables[0], tables[1]};
    rot.outputs = {m.new_value(rot.name + "_output", dt, ms)};
    rot.attrs.set("head_dim", d);
    rot.attrs.set("rot_cols", rot_cols);
    ir::Node reread = head;
    reread.inputs[0] = rot.outputs[0];
    first.push_back(std::move(rot));
    std::vector<const ir::Node*> head_drop{&head};
    head_drop.insert(head_drop.end(), moved->begin(), moved->end());
    for (const Branch& b : bs) {
        if (&b.last() != &head) continue;  // one branch without a Transpose: the Reshape writes out
        reread.outputs = {b.out};
        head_drop.insert(head_drop.end(), b.pattern.begin(), b.pattern.end());
    }
    const ValueId y = first.back().outputs[0];
    first.push_back(std::move(reread));
    // Nothing here is claimed (checked above): every replacement is scheduled.
    bool scheduled = m.replace(head_drop, head, std::move(first));
    for (const Branch& b : bs) {
        if (&b.last() == &head) continue;
        ir::Node moved = b.last();
        moved.outputs = {b.out};
        std::vector<const ir::Node*> drop{&b.last()};
        drop.insert(drop.end(), b.pattern.begin(), b.pattern.end());
        scheduled = m.replace(drop, b.last(), {std::move(moved)}) && scheduled;
    }
    STOF_CHECK(scheduled, "internal: the rotary embedding at {} overlaps an earlier rewrite", head.label());
    spdlog::debug("fuse-rotary: Rotary over columns [0, {}) of '{}' ({} branch{}, head dim {}, {} positions) as '{}'", rot_cols,
                  m.g.value(mv).name, bs.size(), bs.size() == 1 ? "" : "es", d, positions, m.g.value(y).name);
    return true;
}

// The Split of M along its last axis whose outputs 0..k-1 (k >= 1) are rotated branches and the rest are not.
bool match_split(Matcher& m, const ir::Node& split) {
    const auto rank = static_cast<int64_t>(m.g.value(split.inputs[0]).shape.size());
    const int64_t axis = split.attrs.i("axis", 0);
    if (axis != -1 && axis != rank - 1) return false;
    if (!m.used_only_by(split.inputs[0], {&split})) return false;
    std::vector<Branch> bs;
    bool prefix = true;
    for (ValueId y : split.outputs) {
        std::optional<Branch> b = match_branch(m, y);
        if (b && !prefix) return false;  // a rotated branch after an unrotated one
        if (b) bs.push_back(*b);
        prefix = prefix && b.has_value();
    }
    return !bs.empty() && rewrite(m, split, bs);
}

}  // namespace

void fuse_rotary(ir::Graph& g, const PassOptions&) {
    Matcher m(g);
    for (const ir::Node& n : g.nodes) {
        if (m.claimed(n)) continue;
        if (n.op == Op::Split) {
            match_split(m, n);
        } else if (n.op == Op::Reshape && !m.producer(n.inputs[0], Op::Split)) {
            // One branch: M itself, read only by this Reshape.
            if (std::optional<Branch> b = match_branch(m, n.inputs[0]); b && b->reshape == &n) rewrite(m, n, {*b});
        }
    }
    m.commit();
}

}  // namespace stof::passes
