#include "tune/segment_graph.hpp"

#include "stof/error.hpp"

#include <algorithm>
#include <map>

namespace stof::tune {

SegmentGraph segment_graph(const ir::Graph& g, const fusion::FusionPlan& p, const fusion::Segment& s, Precision precision) {
    SegmentGraph out;
    ir::Graph& sub = out.graph;
    sub.name = g.name;
    sub.opset = g.opset;
    std::map<ir::ValueId, ir::ValueId> id;
    auto copy = [&](ir::ValueId v, bool boundary) {
        ir::Value x = g.value(v);
        if (boundary && !x.data) x.dtype = plan_dtype(x.dtype, precision);  // stored between steps in the plan's type
        return sub.add_value(std::move(x));
    };
    std::vector<int> order = s.nodes;  // anchors first in the segment; the graph needs them topological
    std::sort(order.begin(), order.end());
    std::map<int, int> node_id;
    for (int n : order) {
        node_id[n] = static_cast<int>(sub.nodes.size());
        ir::Node node = g.nodes[static_cast<size_t>(n)];
        for (ir::ValueId& v : node.inputs) {
            if (v == ir::kNoValue) continue;
            auto it = id.find(v);
            if (it == id.end()) {
                it = id.emplace(v, copy(v, true)).first;
                if (!g.value(v).data) sub.inputs.push_back(it->second);
            }
            v = it->second;
        }
        for (ir::ValueId& v : node.outputs) {
            const bool stored = std::find(s.outputs.begin(), s.outputs.end(), v) != s.outputs.end();
            v = id.emplace(v, copy(v, stored)).first->second;
        }
        sub.nodes.push_back(std::move(node));
    }
    fusion::Segment seg = s;
    for (int& n : seg.nodes) n = node_id.at(n);
    seg.position = 0;
    for (ir::ValueId& v : seg.outputs) {
        STOF_CHECK(id.count(v), "internal: a segment output is not computed by the segment");
        v = id.at(v);
        sub.outputs.push_back(v);
    }
    out.plan.segments = {seg};
    out.plan.inlined.assign(sub.values.size(), 0);
    out.plan.stored.assign(sub.values.size(), 0);
    for (const auto& [old, now] : id) out.plan.inlined[static_cast<size_t>(now)] = p.inlined[static_cast<size_t>(old)];
    for (ir::ValueId v : seg.outputs) out.plan.stored[static_cast<size_t>(v)] = 1;
    sub.verify();
    return out;
}

}  // namespace stof::tune
