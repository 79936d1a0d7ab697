#include "fusion/fusion_plan.hpp"

#include <fmt/format.h>

#include <map>

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

bool fused_gelu_gemm(const ir::Graph& g, const Segment& s) {
    if (s.kind != SegmentKind::gemm || s.nodes.size() < 2) return false;
    const ir::Node& last = g.nodes[static_cast<size_t>(s.nodes.back())];
    return last.op == ir::Op::Gelu && last.attrs.s("approximate", "none") == "none";
}

bool fused_swiglu_gemm(const ir::Graph& g, const Segment& s) {
    return s.kind == SegmentKind::gemm && s.nodes.size() == 5 && g.nodes[static_cast<size_t>(s.nodes[1])].op == ir::Op::Split;
}

bool fused_rotary_gemm(const ir::Graph& g, const Segment& s) {
    return s.kind == SegmentKind::gemm && s.nodes.size() == 2 && g.nodes[static_cast<size_t>(s.nodes[1])].op == ir::Op::Rotary;
}

plan::Epilogue fused_gemm_epilogue(const ir::Graph& g, const Segment& s) {
    return fused_gelu_gemm(g, s)     ? plan::Epilogue::bias_gelu_erf
           : fused_swiglu_gemm(g, s) ? plan::Epilogue::swiglu
           : fused_rotary_gemm(g, s) ? plan::Epilogue::rotary
                                     : plan::Epilogue::none;
}

std::string Config::str() const {
    std::string s;
    const std::pair<const char*, int> fields[] = {
        {"block", block}, {"rows", rows}, {"grid", grid}, {"vec", vec}, {"algo", algo}};
    for (const auto& [name, v] : fields)
        if (v) s += fmt::format("{}{}={}", s.empty() ? "" : ",", name, v);
    return s.empty() ? "default" : s;
}

std::string segment_signature(const ir::Graph& g, const Segment& s) {
    std::map<ir::ValueId, int> number;
    auto val = [&](ir::ValueId v) {
        if (v == ir::kNoValue) return std::string("-");
        auto [it, fresh] = number.try_emplace(v, static_cast<int>(number.size()));
        const ir::Value& x = g.value(v);
        const bool scalar_const = x.data && x.data->numel() == 1;
        return fmt::format("v{}:{}{}{}", it->second, dtype_name(x.dtype), shape_str(x.shape),
                           scalar_const ? fmt::format("={}", x.data->get_f64(0)) : "");
    };
    std::string out = segment_kind_name(s.kind);
    for (int i : s.nodes) {
        const ir::Node& n = g.nodes[static_cast<size_t>(i)];
        std::string attrs;
        for (const auto& [key, v] : n.attrs.all())
            if (key != "layer") attrs += fmt::format("{}{}={}", attrs.empty() ? "" : ",", key, ir::attr_str(v));
        out += fmt::format(" {}{{{}}}(", ir::op_name(n.op), attrs);
        for (ir::ValueId v : n.inputs) out += val(v) + ",";
        out += ")->";
        for (ir::ValueId v : n.outputs) out += val(v) + ",";
    }
    out += " out";
    for (ir::ValueId v : s.outputs) out += " " + val(v);
    return out;
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
        out += fmt::format("seg {} {} @{}: {} -> {}{}\n", i, segment_kind_name(s.kind), s.position, nodes, outs,
                           s.config == Config{} ? "" : " [" + s.config.str() + "]");
    }
    return out;
}

}  // namespace stof::fusion
