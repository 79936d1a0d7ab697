#include "compile.hpp"

#include "fusion/cost_model.hpp"
#include "fusion/fusion_plan.hpp"
#include "stof/memory_limit.hpp"

#include "stof/progress.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace stof {

namespace {

const char* template_of(fusion::SegmentKind k) {
    switch (k) {
        case fusion::SegmentKind::elementwise: return "elementwise";
        case fusion::SegmentKind::view: return "view";
        case fusion::SegmentKind::row: return "rows";
        case fusion::SegmentKind::rownorm: return "rownorm";
        case fusion::SegmentKind::gemm: return "cublasLt";
        case fusion::SegmentKind::loop: return "loop";
        case fusion::SegmentKind::attention: return "sparse_attention";
    }
    return "";
}

// The sweep's report (SearchOptions::sweep): a line per kernel and how close stage 2 came,
// over the kernels' occurrences × time.
void log_sweep(const fusion::SearchResult& r, int asked) {
    double stage2 = 0, best = 0, worst = 1;
    for (size_t i = 0; i < r.sweep.size(); ++i) {
        const fusion::SweepRecord& w = r.sweep[i];
        stage2 += w.occurrences * w.stage2_us;
        best += w.occurrences * w.best_us;
        worst = std::max(worst, w.stage2_us / w.best_us);
        spdlog::info(
            "tuning sweep {}/{}: {} '{}' (x{}): {} configs; stage 2 {:.2f} us ({}, {} of them timed), sweep {:.2f} us "
            "({}): stage 2 / sweep {:.3f}",
            i + 1, r.sweep.size(), template_of(w.kind), w.node, w.occurrences, w.space, w.stage2_us, w.stage2.str(),
            w.stage2_samples, w.best_us, w.best.str(), w.stage2_us / w.best_us);
    }
    if (r.sweep.empty()) {
        spdlog::warn("tuning sweep: no kernel to sweep (--tune-sweep {}: stage 2 tuned none)", asked);
        return;
    }
    spdlog::info(
        "tuning sweep: stage 2 within {:.2f} % of the sweep on the {} most expensive segments (occurrences x time: stage 2 "
        "{:.2f} us, sweep {:.2f} us; the furthest segment {:.2f} %)",
        100 * (stage2 / best - 1), r.sweep.size(), stage2, best, 100 * (worst - 1));
}

// The plan's record of the fusion plan: per segment its template, config, where its
// time came from ("rule" when the search never timed it) and the moves that formed it.
// The segments of a cost-model plan kept by the final check are the cost model's choices:
// "model", with the cost model's times and moves (as --tune off records them).
std::vector<plan::SegmentInfo> segment_infos(const ir::Graph& g, const fusion::SearchResult& r, const fusion::Evaluator& ev) {
    const bool by_model = r.kept == fusion::Kept::cost_model;
    const std::map<std::string, fusion::Timing>& times = by_model ? r.cost_model_times : r.times;
    std::vector<plan::SegmentInfo> out;
    for (const fusion::Segment& s : r.plan.segments) {
        plan::SegmentInfo info;
        info.kind = fusion::segment_kind_name(s.kind);
        const plan::Epilogue fused = fusion::fused_gemm_epilogue(g, s);
        info.templ = plan::fused_epilogue(fused) ? plan::fused_gemm_kernel_name(fused) : template_of(s.kind);
        info.config = s.config.str();
        const std::string sig = fusion::segment_signature(g, s);
        auto t = times.find(sig + "#" + s.config.str());
        info.source = "rule";
        if (t != times.end() && std::isfinite(t->second.us)) {
            info.source = by_model ? "model" : ev.source_of(g, s);
            info.time_us = static_cast<float>(t->second.us);
            if (info.source.empty()) info.source = "rule";
        }
        for (const fusion::MoveRecord& m : by_model ? r.cost_model_moves : r.moves)
            if (m.taken && std::count(m.made.begin(), m.made.end(), sig))
                info.moves += (info.moves.empty() ? "" : "; ") + m.describe;
        for (int n : s.nodes) info.nodes += (info.nodes.empty() ? "" : ",") + g.nodes[static_cast<size_t>(n)].name;
        for (const fusion::SweepRecord& w : r.sweep)
            if (w.signature == sig) {
                info.sweep_space = static_cast<uint32_t>(w.space);
                info.stage2_us = static_cast<float>(w.stage2_us);
                info.stage2_config = w.stage2.str();
                info.sweep_us = static_cast<float>(w.best_us);
                info.sweep_config = w.best.str();
            }
        out.push_back(std::move(info));
    }
    return out;
}

}  // namespace

plan::Plan compile_model(ir::Graph& g, CompileOptions opt) {
    opt.pipeline.pass.plan_precision = opt.lower.precision;
    opt.pipeline.host_values = false;  // the plan's own memory is checked after lowering
    std::vector<std::string> notes;
    opt.pipeline.pass.note = [&](const std::string& n) { notes.push_back(n); };
    run_pipeline(g, opt.pipeline);
    spdlog::info("after the passes: {} nodes: {}", g.nodes.size(), ir::op_histogram(g));
    fusion::CostModel model(opt.lower.precision);
    fusion::Evaluator& ev = opt.evaluator ? *opt.evaluator : model;
    opt.search.sites.fused_gemm = fusion::fused_gemm_target(opt.lower.arch, opt.lower.precision);
    if (!opt.search.progress) opt.search.progress = [](const std::string& line) { spdlog::debug("fusion {}", line); };
    const fusion::SearchResult found = [&] {
        ProgressPhase phase("fusion search");
        return fusion::search(g, ev, opt.search);
    }();
    const fusion::FusionPlan& fp = found.plan;
    spdlog::info(
        "fusion: {} of {} moves taken, {} kernels tuned, {} segment timings ({}); whole plan: initial scheme {:.1f} us, "
        "after stage 1 {}, after stage 2 {:.1f} us{}; kept: the {} ({:.1f} us)",
        std::count_if(found.moves.begin(), found.moves.end(), [](const fusion::MoveRecord& m) { return m.taken; }),
        found.moves.size(), found.kernels.size(), found.evaluations, ev.source(), found.initial_us,
        std::isnan(found.stage1_us) ? std::string("not timed") : fmt::format("{:.1f} us", found.stage1_us), found.searched_us,
        std::isnan(found.cost_model_us) ? std::string() : fmt::format(", cost-model plan {:.1f} us", found.cost_model_us),
        fusion::kept_name(found.kept), found.final_us);
    if (opt.search.sweep > 0) log_sweep(found, opt.search.sweep);
    if (found.budget_spent)
        spdlog::warn(
            "fusion search: the time budget ({:.0f} s, --tune-budget, {:.1f} s of it kept for each whole-plan timing) "
            "ran out before the search was done; the plan uses the best found by then",
            opt.search.budget_s, found.whole_plan_s);
    if (opt.pipeline.dump_after == "all" || opt.pipeline.dump_after == kPartitionStage)
        std::fprintf(stdout, "%s\n", fusion::to_text(g, fp).c_str());
    plan::Plan p = [&] {
        ProgressPhase phase("lowering to plan steps and kernels");
        return codegen::lower(g, fp, opt.lower);
    }();
    check_memory(p.arena_bytes + p.weights.size(), "the plan",
                 fmt::format("arena {}, weights {}", format_bytes(p.arena_bytes), format_bytes(p.weights.size())));
    p.segments = segment_infos(g, found, ev);
    for (const std::string& n : notes) p.meta.notes += (p.meta.notes.empty() ? "" : "\n") + n;
    return p;
}

}  // namespace stof
