#include "fusion/fusion_plan.hpp"

#include <fmt/format.h>

namespace stof::fusion {

const char* segment_kind_name(SegmentKind k) {
    switch (k) {
        case SegmentKind::elementwise: return "elementwise";
        case SegmentKind::view: return "view";
        case SegmentKind::row: return "row";
        case SegmentKind::rownorm: return "rownorm";
        case SegmentKind::gemm: return "gemm";
        case SegmentKind::loop: return "loop";
        case SegmentKind::attention: return "attention";
    }
    return "?";
}

std::string to_text(const ir::Graph& g, const FusionPlan& p) {
    size_t steps = 0;
    for (const Segment& s : p.segments) steps += s.kind != SegmentKind::view;
    std::string out = fmt::format("// partition: {} segments, {} steps\n", p.segments.size(), steps);
    for (size_t i = 0; i < p.segments.size(); ++i) {
        const Segment& s = p.segments[i];
        std::string nodes;
        for (int n : s.nodes) {
            const ir::Node& node = g.nodes[static_cast<size_t>(n)];
            nodes += fmt::format("{}{} '{}'", nodes.empty() ? "" : " + ", ir::op_name(node.op), node.name);
        }
        std::string outs;
        for (ir::ValueId v : s.outputs) outs += fmt::format("{}{}", outs.empty() ? "" : ", ", g.value(v).name);
        out += fmt::format("seg {} {} @{}: {} -> {}\n", i, segment_kind_name(s.kind), s.position, nodes, outs);
    }
    return out;
}

}  // namespace stof::fusion
