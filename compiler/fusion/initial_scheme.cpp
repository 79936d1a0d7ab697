// Today's fusion rules (see fusion_plan.hpp): GEMM epilogues cuBLASLt can apply,
// single-use fused values inlined into their consumer, one segment per other op.
#include "fusion/fusion_plan.hpp"
#include "stof/error.hpp"

#include <algorithm>
#include <set>

namespace stof::fusion {

using ir::Lowering;
using ir::Op;

namespace {

Lowering lowering_of(const ir::Node& n) { return ir::op_info(n.op).lowering; }

bool is_view(Op op) {
    return op == Op::Reshape || op == Op::Squeeze || op == Op::Unsqueeze || op == Op::Flatten || op == Op::Identity;
}

// The consumers of each value (node indices).
std::vector<std::vector<int>> consumers_of(const ir::Graph& g) {
    std::vector<std::vector<int>> c(g.values.size());
    for (size_t i = 0; i < g.nodes.size(); ++i)
        for (ir::ValueId v : g.nodes[i].inputs)
            if (v != ir::kNoValue) c[static_cast<size_t>(v)].push_back(static_cast<int>(i));
    return c;
}

// Bias-add / ReLU / tanh-GELU nodes after a GEMM that cuBLASLt can apply in its epilogue.
std::vector<int> gemm_epilogue(const ir::Graph& g, const ir::Node& n, const std::vector<std::vector<int>>& cons,
                               const std::vector<char>& is_output) {
    std::vector<int> chain;
    if (n.op == Op::Gemm && n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue) return chain;
    const Shape& out_shape = g.value(n.outputs[0]).shape;
    if (out_shape.empty()) return chain;
    const int64_t cols = out_shape.back();
    ir::ValueId v = n.outputs[0];
    bool has_bias = false;
    while (true) {
        const auto& c = cons[static_cast<size_t>(v)];
        if (c.size() != 1 || is_output[static_cast<size_t>(v)]) break;
        const ir::Node& next = g.nodes[static_cast<size_t>(c[0])];
        if (next.op == Op::Add && !has_bias && chain.empty()) {
            const ir::ValueId other = next.inputs[0] == v ? next.inputs[1] : next.inputs[0];
            const ir::Value& b = g.value(other);
            const bool row_vector = b.data && numel(b.shape) == cols && !b.shape.empty() && b.shape.back() == cols;
            if (!row_vector || next.inputs[0] == next.inputs[1] || g.value(next.outputs[0]).shape != out_shape) break;
            has_bias = true;
        } else if (next.op == Op::Relu || (next.op == Op::Gelu && next.attrs.s("approximate", "none") == "tanh")) {
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

}  // namespace

FusionPlan initial_scheme(const ir::Graph& g) {
    const std::vector<std::vector<int>> cons = consumers_of(g);
    std::vector<char> is_output(g.values.size(), 0);
    for (ir::ValueId o : g.outputs) is_output[static_cast<size_t>(o)] = 1;
    for (const ir::Node& n : g.nodes)
        STOF_CHECK(lowering_of(n) != Lowering::folded, "internal: {} was not folded", n.label());

    FusionPlan p;
    p.inlined.assign(g.values.size(), 0);
    p.stored.assign(g.values.size(), 0);
    std::vector<int> folded_into(g.nodes.size(), -1);
    std::vector<std::vector<int>> epilogue(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (lowering_of(g.nodes[i]) != Lowering::gemm) continue;
        epilogue[i] = gemm_epilogue(g, g.nodes[i], cons, is_output);
        for (int e : epilogue[i]) folded_into[static_cast<size_t>(e)] = static_cast<int>(i);
    }
    auto fused = [&](int i) {
        return lowering_of(g.nodes[static_cast<size_t>(i)]) == Lowering::fused && folded_into[static_cast<size_t>(i)] < 0;
    };
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (!fused(static_cast<int>(i))) continue;
        for (ir::ValueId v : g.nodes[i].outputs) {
            const auto& c = cons[static_cast<size_t>(v)];
            p.inlined[static_cast<size_t>(v)] = c.size() == 1 && !is_output[static_cast<size_t>(v)] && fused(c[0]);
        }
    }

    const std::vector<int> producer = g.producers();
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (folded_into[i] >= 0) continue;
        const ir::Node& n = g.nodes[i];
        Segment s;
        s.position = static_cast<int>(i);
        s.nodes = {static_cast<int>(i)};
        switch (lowering_of(n)) {
            case Lowering::fused:
                for (ir::ValueId v : n.outputs) {
                    if (p.inlined[static_cast<size_t>(v)]) continue;
                    Segment e;
                    e.position = static_cast<int>(i);
                    e.nodes = fused_group(g, producer, p.inlined, v);
                    // A graph output is written into its own tensor: never a view.
                    const bool views = !is_output[static_cast<size_t>(v)] &&
                                       std::all_of(e.nodes.begin(), e.nodes.end(),
                                                   [&](int x) { return is_view(g.nodes[static_cast<size_t>(x)].op); });
                    e.kind = views ? SegmentKind::view : SegmentKind::elementwise;
                    e.outputs = {v};
                    p.segments.push_back(std::move(e));
                }
                continue;
            case Lowering::row_kernel: s.kind = SegmentKind::row; break;
            case Lowering::loop_kernel: s.kind = SegmentKind::loop; break;
            case Lowering::sparse_attention: s.kind = SegmentKind::attention; break;
            case Lowering::gemm: s.kind = SegmentKind::gemm; break;
            case Lowering::folded: break;
        }
        if (s.kind == SegmentKind::gemm) {
            s.nodes.insert(s.nodes.end(), epilogue[i].begin(), epilogue[i].end());
            s.outputs = {g.nodes[static_cast<size_t>(s.nodes.back())].outputs[0]};
        } else {
            s.outputs = n.outputs;
        }
        p.segments.push_back(std::move(s));
    }
    for (const Segment& s : p.segments)
        for (ir::ValueId v : s.outputs) p.stored[static_cast<size_t>(v)] = 1;
    return p;
}

}  // namespace stof::fusion
