#include "fusion/cost_model.hpp"

#include <algorithm>
#include <set>
#include <vector>

namespace stof::fusion {

int64_t CostModel::bytes(const ir::Graph& g, const Segment& s) const {
    std::set<ir::ValueId> made, read;
    for (int n : s.nodes)
        for (ir::ValueId v : g.nodes[static_cast<size_t>(n)].outputs) made.insert(v);
    for (int n : s.nodes)
        for (ir::ValueId v : g.nodes[static_cast<size_t>(n)].inputs)
            if (v != ir::kNoValue && !made.count(v) && !(g.value(v).data && g.value(v).data->numel() == 1)) read.insert(v);
    auto size = [&](ir::ValueId v) {
        const ir::Value& x = g.value(v);
        return numel(x.shape) * static_cast<int64_t>(dtype_size(plan_dtype(x.dtype, precision_)));
    };
    int64_t b = 0;
    for (ir::ValueId v : read) b += size(v);
    for (ir::ValueId v : s.outputs) b += size(v);
    return b;
}

void CostModel::use_measurements(std::map<std::string, MeasuredTime> measured) {
    measured_ = std::move(measured);
    // Efficiency = bytes / (time beyond the launch · bandwidth), the median per kernel family.
    std::vector<double> scalar, vector, row;
    for (const auto& [key, m] : measured_) {
        const double busy_us = m.us - device_.launch_us;
        if (m.bytes <= 0 || busy_us <= 0) continue;
        const double e = std::clamp(static_cast<double>(m.bytes) / (busy_us * device_.bandwidth_gbs * 1e3), 0.02, 1.0);
        if (m.kind == segment_kind_name(SegmentKind::elementwise))
            (key.find("vec=1") != std::string::npos ? scalar : vector).push_back(e);
        else if (m.kind == segment_kind_name(SegmentKind::rownorm)) row.push_back(e);
    }
    auto median = [](std::vector<double>& v, double& into) {
        if (v.empty()) return;
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
        into = v[v.size() / 2];
    };
    median(scalar, device_.scalar_efficiency);
    median(vector, device_.vector_efficiency);
    median(row, device_.row_efficiency);
}

std::string CostModel::source_of(const ir::Graph& g, const Segment& s) const {
    return measured_.count(segment_key(g, s, precision_)) ? "cache" : "model";
}

Timing CostModel::segment(const ir::Graph& g, const FusionPlan&, const Segment& s) {
    if (s.kind == SegmentKind::view) return {0, 0};
    if (!measured_.empty()) {
        auto it = measured_.find(segment_key(g, s, precision_));
        if (it != measured_.end()) return {it->second.us, 0};
    }
    if (plan::fused_epilogue(fused_gemm_epilogue(g, s))) return {};  // no estimate of the fused kernels: measured only
    double efficiency = device_.row_efficiency;
    if (s.kind == SegmentKind::elementwise)
        efficiency = s.config.vec == 1 ? device_.scalar_efficiency : device_.vector_efficiency;
    if (s.kind == SegmentKind::gemm || s.kind == SegmentKind::attention) efficiency = 1.0;
    const double bytes_us = static_cast<double>(bytes(g, s)) / (device_.bandwidth_gbs * 1e3 * efficiency);
    double flops_us = 0;
    if (s.kind == SegmentKind::gemm) {
        const ir::Node& n = g.nodes[static_cast<size_t>(s.nodes.front())];
        const Shape& a = g.value(n.inputs[0]).shape;
        const int64_t k = a.empty() ? 1 : (n.op == ir::Op::Gemm && n.attrs.i("transA", 0) ? a.front() : a.back());
        flops_us = 2.0 * static_cast<double>(numel(g.value(n.outputs[0]).shape)) * static_cast<double>(k) /
                   (device_.gemm_tflops * 1e6);
    }
    return {device_.launch_us + std::max(bytes_us, flops_us), 0};
}

}  // namespace stof::fusion
