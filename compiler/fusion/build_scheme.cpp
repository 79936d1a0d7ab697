// A fusion plan from the graph and its decisions (fusion/choices.hpp): GEMM
// epilogues cuBLASLt can apply, fused values inlined into the kernels that read
// them, row-norm prologues, merged sibling kernels; one segment per other op.
#include "fusion/choices.hpp"
#include "fusion/fusion_plan.hpp"
#include "stof/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace stof::fusion {

using ir::Lowering;
using ir::Op;

namespace {

Lowering lowering_of(const ir::Node& n) { return ir::op_info(n.op).lowering; }

// Same bytes in, same bytes out: reshapes, Identity, and a Cast to the input's own type.
bool is_view(const ir::Graph& g, const ir::Node& n) {
    if (n.op == Op::Cast) return g.value(n.inputs[0]).dtype == g.value(n.outputs[0]).dtype;
    return n.op == Op::Reshape || n.op == Op::Squeeze || n.op == Op::Unsqueeze || n.op == Op::Flatten || n.op == Op::Identity;
}

// The consumers of each value (node indices).
std::vector<std::vector<int>> consumers_of(const ir::Graph& g) {
    std::vector<std::vector<int>> c(g.values.size());
    for (size_t i = 0; i < g.nodes.size(); ++i)
        for (ir::ValueId v : g.nodes[i].inputs)
            if (v != ir::kNoValue) c[static_cast<size_t>(v)].push_back(static_cast<int>(i));
    return c;
}

// Whether GEMM node n can run on the fused GEMM + bias + GELU kernel (kernels/gemm): a
// MatMul of activations [..., K] by a constant weight [K, N] (one GEMM over every row),
// K and N multiples of 8.
bool fused_gemm_shapes(const ir::Graph& g, const ir::Node& n) {
    if (n.op != Op::MatMul) return false;
    const ir::Value &a = g.value(n.inputs[0]), &b = g.value(n.inputs[1]);
    if (!b.data || b.shape.size() != 2 || a.shape.empty() || a.shape.back() != b.shape[0]) return false;
    return b.shape[0] % 8 == 0 && b.shape[1] % 8 == 0;
}

// The nodes after GEMM node n (index `at`) that its epilogue applies:
//   D = act(A·B + bias + C)
// a bias Add of a constant row vector [N] and (allow_residual) a residual Add of a
// stored value of D's shape (as C, beta = 1; computed before the GEMM runs), in
// either order, or a bias then a Relu or tanh-Gelu (act; cuBLASLt's epilogues) or
// (allow_gelu, on the fused kernel) the exact Gelu; each value in the chain read once
// and no graph output.
std::vector<int> gemm_epilogue(const ir::Graph& g, const ir::Node& n, int at, const std::vector<std::vector<int>>& cons,
                               const std::vector<char>& is_output, const std::vector<int>& producer, bool allow_residual,
                               bool allow_gelu) {
    std::vector<int> chain;
    if (n.op == Op::Gemm && n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue) return chain;
    const ir::Value& out = g.value(n.outputs[0]);
    if (out.shape.empty()) return chain;
    const int64_t cols = out.shape.back();
    ir::ValueId v = n.outputs[0];
    bool has_bias = false, has_residual = false;
    while (true) {
        const auto& c = cons[static_cast<size_t>(v)];
        if (c.size() != 1 || is_output[static_cast<size_t>(v)]) break;
        const ir::Node& next = g.nodes[static_cast<size_t>(c[0])];
        if (next.op == Op::Add) {
            if (next.inputs[0] == next.inputs[1] || g.value(next.outputs[0]).shape != out.shape) break;
            const ir::ValueId other = next.inputs[0] == v ? next.inputs[1] : next.inputs[0];
            const ir::Value& b = g.value(other);
            const bool row_vector = b.data && numel(b.shape) == cols && !b.shape.empty() && b.shape.back() == cols;
            const bool residual = !b.data && b.shape == out.shape && b.dtype == out.dtype &&
                                  producer[static_cast<size_t>(other)] < at;
            if (row_vector && !has_bias) {
                has_bias = true;
            } else if (residual && allow_residual && !has_residual) {
                has_residual = true;
            } else {
                break;
            }
        } else if (!has_residual &&
                   (next.op == Op::Relu || (next.op == Op::Gelu && next.attrs.s("approximate", "none") == "tanh"))) {
            chain.push_back(c[0]);
            break;
        } else if (allow_gelu && has_bias && !has_residual && next.op == Op::Gelu &&
                   next.attrs.s("approximate", "none") == "none" && fused_gemm_shapes(g, n)) {
            chain.push_back(c[0]);
            break;
        } else {
            break;
        }
        chain.push_back(c[0]);
        v = next.outputs[0];
    }
    return chain;
}

// The nodes after GEMM node n that the fused GEMM + SwiGLU applies: n's result split into two
// halves along its last axis, g and u, then silu(g)·u as
//   Split(p) → g, u;  Sigmoid(g);  Mul(g, Sigmoid(g));  Mul(that, u)
// (either operand order), returned in that order; n a MatMul by a constant [K, N] weight
// with K a multiple of 8 and N of 16, each value read only inside the pattern and no graph
// output but the last. Empty when the pattern does not match.
std::vector<int> swiglu_epilogue(const ir::Graph& g, const ir::Node& n, const std::vector<std::vector<int>>& cons,
                                 const std::vector<char>& is_output) {
    if (!fused_gemm_shapes(g, n)) return {};
    const ir::Value& p = g.value(n.outputs[0]);
    if (p.shape.empty() || p.shape.back() % 16 != 0) return {};
    auto sole_reader = [&](ir::ValueId v) {
        const auto& rd = cons[static_cast<size_t>(v)];
        return rd.size() == 1 && !is_output[static_cast<size_t>(v)] ? rd[0] : -1;
    };
    auto node = [&](int i) -> const ir::Node& { return g.nodes[static_cast<size_t>(i)]; };
    auto reads = [](const ir::Node& x, ir::ValueId a, ir::ValueId b) {
        return x.inputs.size() == 2 && ((x.inputs[0] == a && x.inputs[1] == b) || (x.inputs[0] == b && x.inputs[1] == a));
    };
    const int split = sole_reader(n.outputs[0]);
    if (split < 0 || node(split).op != Op::Split || node(split).outputs.size() != 2) return {};
    const ir::ValueId gate = node(split).outputs[0], up = node(split).outputs[1];
    Shape half = p.shape;
    half.back() /= 2;
    if (g.value(gate).shape != half || g.value(up).shape != half || is_output[static_cast<size_t>(gate)]) return {};
    const auto& gate_readers = cons[static_cast<size_t>(gate)];
    if (gate_readers.size() != 2) return {};
    const int sig = node(gate_readers[0]).op == Op::Sigmoid ? gate_readers[0] : gate_readers[1];
    const int silu = sig == gate_readers[0] ? gate_readers[1] : gate_readers[0];
    if (node(sig).op != Op::Sigmoid || sole_reader(node(sig).outputs[0]) != silu || node(silu).op != Op::Mul ||
        !reads(node(silu), gate, node(sig).outputs[0]))
        return {};
    const int out = sole_reader(node(silu).outputs[0]);
    if (out < 0 || out != sole_reader(up) || node(out).op != Op::Mul || !reads(node(out), node(silu).outputs[0], up) ||
        g.value(node(out).outputs[0]).shape != half)
        return {};
    return {split, sig, silu, out};
}

// The node after GEMM node n that the fused GEMM + rotary embedding applies: the Rotary op
// (fuse-rotary) reading n's result, its only reader, in heads of 64 or 128 columns; n a
// MatMul by a constant [K, N] weight with K and N multiples of 8 and its result no graph
// output. Empty when the pattern does not match.
std::vector<int> rotary_epilogue(const ir::Graph& g, const ir::Node& n, const std::vector<std::vector<int>>& cons,
                                 const std::vector<char>& is_output) {
    if (!fused_gemm_shapes(g, n)) return {};
    const auto p = static_cast<size_t>(n.outputs[0]);
    if (cons[p].size() != 1 || is_output[p]) return {};
    const ir::Node& r = g.nodes[static_cast<size_t>(cons[p][0])];
    const int64_t head_dim = r.op == Op::Rotary ? r.attrs.i("head_dim", 0) : 0;
    if (r.inputs[0] != n.outputs[0] || (head_dim != 64 && head_dim != 128)) return {};
    return {cons[p][0]};
}

// LayerNormalization, RMSNorm or Softmax over trailing axes, without the Mean and
// InvStdDev outputs: a row kernel that can compute its input inside (a prologue).
bool row_normalisation(const ir::Graph& g, const ir::Node& n, const std::vector<std::vector<int>>& cons,
                       const std::vector<char>& is_output) {
    const auto rank = static_cast<int64_t>(g.value(n.inputs[0]).shape.size());
    if (rank == 0) return false;
    int64_t axis = n.attrs.i("axis", -1);
    if (axis < 0) axis += rank;
    if (n.op == Op::Softmax) return axis == rank - 1;
    if (n.op != Op::LayerNormalization && n.op != Op::RMSNorm) return false;
    return n.outputs.size() == 1 || std::all_of(n.outputs.begin() + 1, n.outputs.end(), [&](ir::ValueId v) {
               return v == ir::kNoValue || (cons[static_cast<size_t>(v)].empty() && !is_output[static_cast<size_t>(v)]);
           });
}

// Node indices computing `root` inside one kernel: its producer and, recursively,
// the producers of inlined inputs, in topological (node) order.
std::vector<int> fused_group(const ir::Graph& g, const std::vector<int>& producer, const std::vector<char>& inlined,
                             ir::ValueId root) {
    std::set<int> members;
    std::vector<ir::ValueId> stack{root};
    while (!stack.empty()) {
        const ir::ValueId v = stack.back();
        stack.pop_back();
        const int p = producer[static_cast<size_t>(v)];
        if (p < 0 || !members.insert(p).second) continue;
        for (ir::ValueId in : g.nodes[static_cast<size_t>(p)].inputs)
            if (in != ir::kNoValue && inlined[static_cast<size_t>(in)]) stack.push_back(in);
    }
    return {members.begin(), members.end()};
}

// The values a segment's nodes read that it does not compute (stored values and constants).
std::set<ir::ValueId> reads(const ir::Graph& g, const Segment& s) {
    std::set<ir::ValueId> made, in;
    for (int n : s.nodes)
        for (ir::ValueId v : g.nodes[static_cast<size_t>(n)].outputs) made.insert(v);
    for (int n : s.nodes)
        for (ir::ValueId v : g.nodes[static_cast<size_t>(n)].inputs)
            if (v != ir::kNoValue && !made.count(v) && !g.value(v).data) in.insert(v);
    return in;
}

// Adjacent elementwise segments that read a common stored value and not each other's
// results, with outputs of one type, become one kernel with several outputs (the
// rotary embeddings of q and k, both from one projection).
template <class Take> void merge_siblings(const ir::Graph& g, std::vector<Segment>& segs, const Take& take) {
    std::vector<Segment> out;
    for (Segment& s : segs) {
        Segment* prev = out.empty() ? nullptr : &out.back();
        if (prev && prev->kind == SegmentKind::elementwise && s.kind == SegmentKind::elementwise &&
            g.value(prev->outputs[0]).dtype == g.value(s.outputs[0]).dtype) {
            const std::set<ir::ValueId> a = reads(g, *prev), b = reads(g, s);
            const bool shared = std::any_of(b.begin(), b.end(), [&](ir::ValueId v) { return a.count(v) > 0; });
            const bool independent = std::none_of(prev->outputs.begin(), prev->outputs.end(),
                                                  [&](ir::ValueId v) { return b.count(v) > 0; });
            if (shared && independent && take(s.outputs[0])) {
                prev->outputs.insert(prev->outputs.end(), s.outputs.begin(), s.outputs.end());
                prev->nodes.insert(prev->nodes.end(), s.nodes.begin(), s.nodes.end());
                std::sort(prev->nodes.begin(), prev->nodes.end());
                prev->nodes.erase(std::unique(prev->nodes.begin(), prev->nodes.end()), prev->nodes.end());
                continue;
            }
        }
        out.push_back(std::move(s));
    }
    segs = std::move(out);
}

}  // namespace

namespace {

// The plan for choices c; merge_any merges every eligible sibling kernel (site finding).
FusionPlan build(const ir::Graph& g, const Choices& c, bool merge_any, bool unfused = false) {
    const std::vector<std::vector<int>> cons = consumers_of(g);
    std::vector<char> is_output(g.values.size(), 0);
    for (ir::ValueId o : g.outputs) is_output[static_cast<size_t>(o)] = 1;
    for (const ir::Node& n : g.nodes) STOF_CHECK(lowering_of(n) != Lowering::folded, "internal: {} was not folded", n.label());

    FusionPlan p;
    p.inlined.assign(g.values.size(), 0);
    p.stored.assign(g.values.size(), 0);
    const std::vector<int> producer = g.producers();
    std::vector<int> folded_into(g.nodes.size(), -1);
    std::vector<std::vector<int>> epilogue(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (unfused || lowering_of(g.nodes[i]) != Lowering::gemm) continue;
        epilogue[i] = c.swiglu_in_gemm.count(static_cast<int>(i)) ? swiglu_epilogue(g, g.nodes[i], cons, is_output)
                      : c.rotary_in_gemm.count(static_cast<int>(i))
                          ? rotary_epilogue(g, g.nodes[i], cons, is_output)
                          : gemm_epilogue(g, g.nodes[i], static_cast<int>(i), cons, is_output, producer,
                                          c.residual_in_gemm.count(static_cast<int>(i)) > 0,
                                          c.gelu_in_gemm.count(static_cast<int>(i)) > 0);
        for (int e : epilogue[i]) folded_into[static_cast<size_t>(e)] = static_cast<int>(i);
    }
    auto fused = [&](int i) {
        return lowering_of(g.nodes[static_cast<size_t>(i)]) == Lowering::fused && folded_into[static_cast<size_t>(i)] < 0;
    };
    std::vector<char> rownorm(g.nodes.size(), 0);
    for (size_t i = 0; i < g.nodes.size(); ++i) rownorm[i] = row_normalisation(g, g.nodes[i], cons, is_output);
    // Whether node r computes a read of v inside its own kernel: a fused op, or a row
    // normalisation with a prologue reading v as its input.
    auto absorbs = [&](int r, ir::ValueId v) {
        const auto ri = static_cast<size_t>(r);
        return fused(r) || (rownorm[ri] && c.norm_prologue.count(r) && g.nodes[ri].inputs[0] == v);
    };

    // Inlining, readers first. The kernels ("roots") each node's values are computed
    // in: a stored value's own, a row normalisation's, or those of the readers of an
    // inlined value. A fused value is inlined when every read of it is absorbed and the
    // reads are by one node (a multi-output reader such as Split may recompute it in
    // several kernels), or (multi_inline) they all land in one kernel.
    using Roots = std::set<int64_t>;
    std::vector<Roots> value_roots(g.values.size());
    auto node_roots = [&](int r) {
        if (rownorm[static_cast<size_t>(r)]) return Roots{-1 - static_cast<int64_t>(r)};
        Roots out;
        for (ir::ValueId o : g.nodes[static_cast<size_t>(r)].outputs)
            out.insert(value_roots[static_cast<size_t>(o)].begin(), value_roots[static_cast<size_t>(o)].end());
        return out;
    };
    for (size_t i = g.nodes.size(); i-- > 0;) {
        if (!fused(static_cast<int>(i))) continue;
        for (ir::ValueId v : g.nodes[i].outputs) {
            const auto vi = static_cast<size_t>(v);
            const auto& rd = cons[vi];
            if (rd.empty() && !is_output[vi]) continue;  // read by nothing: neither computed nor stored
            bool inline_it = !is_output[vi] && std::all_of(rd.begin(), rd.end(), [&](int x) { return absorbs(x, v); });
            Roots r;
            for (int x : rd) {
                const Roots xr = node_roots(x);
                r.insert(xr.begin(), xr.end());
            }
            const bool one_reader = std::all_of(rd.begin(), rd.end(), [&](int x) { return x == rd[0]; });
            inline_it = inline_it && !unfused && (one_reader || (r.size() == 1 && c.multi_inline.count(v)));
            p.inlined[vi] = inline_it;
            value_roots[vi] = inline_it ? r : Roots{static_cast<int64_t>(v)};
        }
    }

    // Whether the input of view node `first` is a row normalisation's output read by it alone.
    auto norm_writes_view = [&](int first) {
        const ir::ValueId b = g.nodes[static_cast<size_t>(first)].inputs[0];
        const auto bi = static_cast<size_t>(b);
        const int pb = producer[bi];
        return pb >= 0 && rownorm[static_cast<size_t>(pb)] && g.nodes[static_cast<size_t>(pb)].outputs[0] == b &&
               !is_output[bi] && cons[bi] == std::vector<int>{first};
    };

    // norm_stores_input: the row normalisation computes its input, the root of an
    // elementwise kernel, and stores it (every other reader of it comes later).
    std::vector<int> joins_rownorm(g.values.size(), -1);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (!rownorm[i] || !c.norm_stores_input.count(static_cast<int>(i))) continue;
        const ir::ValueId x = g.nodes[i].inputs[0];
        const int px = producer[static_cast<size_t>(x)];
        if (p.inlined[static_cast<size_t>(x)] || px < 0 || !fused(px) || g.nodes[static_cast<size_t>(px)].outputs.size() != 1)
            continue;
        const auto& rd = cons[static_cast<size_t>(x)];
        if (std::all_of(rd.begin(), rd.end(), [&](int r) { return r >= static_cast<int>(i); }) &&
            std::count(rd.begin(), rd.end(), static_cast<int>(i)) == 1)
            joins_rownorm[static_cast<size_t>(x)] = static_cast<int>(i);
    }

    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (folded_into[i] >= 0) continue;
        const ir::Node& n = g.nodes[i];
        Segment s;
        s.position = static_cast<int>(i);
        s.nodes = {static_cast<int>(i)};
        switch (lowering_of(n)) {
            case Lowering::fused:
                for (ir::ValueId v : n.outputs) {
                    const auto vi = static_cast<size_t>(v);
                    // Inlined, read by nothing, or computed by a row normalisation.
                    if (p.inlined[vi] || (cons[vi].empty() && !is_output[vi]) || joins_rownorm[vi] >= 0) continue;
                    Segment e;
                    e.position = static_cast<int>(i);
                    e.nodes = fused_group(g, producer, p.inlined, v);
                    // A graph output is written into its own tensor: a view of a row normalisation's
                    // output that nothing else reads (which then writes the graph output in place).
                    const bool views = std::all_of(e.nodes.begin(), e.nodes.end(),
                                                   [&](int x) { return is_view(g, g.nodes[static_cast<size_t>(x)]); }) &&
                                       (!is_output[vi] || norm_writes_view(e.nodes.front()));
                    e.kind = views ? SegmentKind::view : SegmentKind::elementwise;
                    e.outputs = {v};
                    p.segments.push_back(std::move(e));
                }
                continue;
            case Lowering::row_kernel: s.kind = rownorm[i] ? SegmentKind::rownorm : SegmentKind::row; break;
            case Lowering::loop_kernel: s.kind = SegmentKind::loop; break;
            case Lowering::sparse_attention: s.kind = SegmentKind::attention; break;
            case Lowering::gemm: s.kind = SegmentKind::gemm; break;
            case Lowering::folded: break;
        }
        if (s.kind == SegmentKind::gemm) {
            s.nodes.insert(s.nodes.end(), epilogue[i].begin(), epilogue[i].end());
            s.outputs = {g.nodes[static_cast<size_t>(s.nodes.back())].outputs[0]};
        } else if (s.kind == SegmentKind::rownorm) {
            const ir::ValueId x = n.inputs[0];
            s.outputs = {n.outputs[0]};
            if (p.inlined[static_cast<size_t>(x)] || joins_rownorm[static_cast<size_t>(x)] == static_cast<int>(i)) {
                const std::vector<int> pro = fused_group(g, producer, p.inlined, x);
                s.nodes.insert(s.nodes.end(), pro.begin(), pro.end());
                if (!p.inlined[static_cast<size_t>(x)]) s.outputs.push_back(x);
            }
        } else {
            s.outputs = n.outputs;
        }
        p.segments.push_back(std::move(s));
    }
    merge_siblings(g, p.segments, [&](ir::ValueId root) { return merge_any || c.merge_kernel.count(root) > 0; });
    for (const Segment& s : p.segments)
        for (ir::ValueId v : s.outputs) p.stored[static_cast<size_t>(v)] = 1;
    return p;
}

std::string shape_sig(const ir::Graph& g, ir::ValueId v) {
    const ir::Value& val = g.value(v);
    return fmt::format("{}{}", dtype_name(val.dtype), shape_str(val.shape));
}

// Ops and shapes of the nodes `ns`: equal for the same structure in another layer.
std::string nodes_sig(const ir::Graph& g, const std::vector<int>& ns) {
    std::string s;
    for (int i : ns) {
        const ir::Node& n = g.nodes[static_cast<size_t>(i)];
        s += fmt::format("{}(", ir::op_name(n.op));
        for (ir::ValueId v : n.inputs) s += v == ir::kNoValue ? "-," : shape_sig(g, v) + ",";
        s += ")";
    }
    return s;
}

}  // namespace

FusionPlan build_scheme(const ir::Graph& g, const Choices& c) { return build(g, c, false); }

FusionPlan initial_scheme(const ir::Graph& g) { return build_scheme(g, Choices{}); }

FusionPlan unfused_scheme(const ir::Graph& g) { return build(g, Choices{}, false, true); }

FusionPlan fused_scheme(const ir::Graph& g) {
    std::vector<const Site*> all;
    const std::vector<Site> sites = find_sites(g);
    for (const Site& s : sites) all.push_back(&s);
    return build_scheme(g, with(Choices{}, all));
}

std::vector<Site> find_sites(const ir::Graph& g, const SiteOptions& o) {
    const std::vector<std::vector<int>> cons = consumers_of(g);
    std::vector<char> is_output(g.values.size(), 0);
    for (ir::ValueId o : g.outputs) is_output[static_cast<size_t>(o)] = 1;
    const std::vector<int> producer = g.producers();
    std::vector<Site> sites;
    auto fused_op = [&](int i) { return i >= 0 && lowering_of(g.nodes[static_cast<size_t>(i)]) == Lowering::fused; };
    Choices all;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const ir::Node& n = g.nodes[i];
        const int at = static_cast<int>(i);
        if (lowering_of(n) == Lowering::gemm) {
            const std::vector<int> plain = gemm_epilogue(g, n, at, cons, is_output, producer, false, false);
            // A seize that makes the GEMM's epilogue `chain` (more than it applies without one).
            const auto seize = [&](Site::Field field, std::set<int>& taken, const std::vector<int>& chain,
                                   const std::string& tag, const char* describe) {
                if (chain.size() <= plain.size()) return;
                std::vector<int> ns{at};
                ns.insert(ns.end(), chain.begin(), chain.end());
                sites.push_back(
                    {MoveKind::seize, field, at, tag + nodes_sig(g, ns),
                     fmt::format(fmt::runtime(describe), n.label(), g.nodes[static_cast<size_t>(chain.back())].label())});
                taken.insert(at);
            };
            seize(Site::residual_in_gemm, all.residual_in_gemm, gemm_epilogue(g, n, at, cons, is_output, producer, true, false),
                  "seize|", "seize: {} folds the residual {} (beta*C)");
            if (o.fused_gemm) {
                seize(Site::gelu_in_gemm, all.gelu_in_gemm, gemm_epilogue(g, n, at, cons, is_output, producer, false, true),
                      "seize|gelu|", "seize: {} folds the exact {} (the fused GEMM)");
                seize(Site::swiglu_in_gemm, all.swiglu_in_gemm, swiglu_epilogue(g, n, cons, is_output), "seize|swiglu|",
                      "seize: {} folds the SwiGLU gate up to {} (the fused GEMM)");
                seize(Site::rotary_in_gemm, all.rotary_in_gemm, rotary_epilogue(g, n, cons, is_output), "seize|rotary|",
                      "seize: {} folds the rotary embedding {} (the fused GEMM)");
            }
        } else if (row_normalisation(g, n, cons, is_output) && fused_op(producer[static_cast<size_t>(n.inputs[0])])) {
            const std::string sig = nodes_sig(g, {at, producer[static_cast<size_t>(n.inputs[0])]});
            sites.push_back({MoveKind::expand, Site::norm_prologue, at, "expand|prologue|" + sig,
                             fmt::format("expand: {} computes its input", n.label())});
            sites.push_back({MoveKind::expand, Site::norm_stores_input, at, "expand|stores|" + sig,
                             fmt::format("expand: {} computes and stores its input", n.label())});
            all.norm_prologue.insert(at);
            all.norm_stores_input.insert(at);
        }
        if (lowering_of(n) != Lowering::fused) continue;
        for (ir::ValueId v : n.outputs) {
            const auto& rd = cons[static_cast<size_t>(v)];
            if (is_output[static_cast<size_t>(v)] || rd.size() < 2 ||
                std::all_of(rd.begin(), rd.end(), [&](int x) { return x == rd[0]; }))
                continue;
            std::vector<int> ns{at};
            ns.insert(ns.end(), rd.begin(), rd.end());
            sites.push_back({MoveKind::expand, Site::multi_inline, v, "expand|inline|" + nodes_sig(g, ns),
                             fmt::format("expand: '{}' recomputed by its {} readers", g.value(v).name, rd.size())});
            all.multi_inline.insert(v);
        }
    }
    // Sibling kernels that merge once every other move is taken.
    for (const Segment& s : build(g, all, true).segments) {
        for (size_t k = 1; k < s.outputs.size(); ++k) {
            if (s.kind != SegmentKind::elementwise) continue;
            sites.push_back({MoveKind::expand, Site::merge_kernel, s.outputs[k], "expand|merge|" + nodes_sig(g, s.nodes),
                             fmt::format("expand: '{}' computed by the kernel of '{}'", g.value(s.outputs[k]).name,
                                         g.value(s.outputs[0]).name)});
        }
    }
    return sites;
}

Choices with(Choices c, const std::vector<const Site*>& sites) {
    for (const Site* s : sites) {
        switch (s->field) {
            case Site::residual_in_gemm: c.residual_in_gemm.insert(static_cast<int>(s->key)); break;
            case Site::gelu_in_gemm: c.gelu_in_gemm.insert(static_cast<int>(s->key)); break;
            case Site::swiglu_in_gemm: c.swiglu_in_gemm.insert(static_cast<int>(s->key)); break;
            case Site::rotary_in_gemm: c.rotary_in_gemm.insert(static_cast<int>(s->key)); break;
            case Site::norm_prologue: c.norm_prologue.insert(static_cast<int>(s->key)); break;
            case Site::norm_stores_input: c.norm_stores_input.insert(static_cast<int>(s->key)); break;
            case Site::multi_inline: c.multi_inline.insert(static_cast<ir::ValueId>(s->key)); break;
            case Site::merge_kernel: c.merge_kernel.insert(static_cast<ir::ValueId>(s->key)); break;
        }
    }
    return c;
}

}  // namespace stof::fusion
