#include "compile.hpp"

#include "fusion/cost_model.hpp"
#include "fusion/fusion_plan.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

namespace stof {

plan::Plan compile_model(ir::Graph& g, CompileOptions opt) {
    opt.pipeline.pass.plan_precision = opt.lower.precision;
    std::vector<std::string> notes;
    opt.pipeline.pass.note = [&](const std::string& n) { notes.push_back(n); };
    run_pipeline(g, opt.pipeline);
    spdlog::info("after the passes: {} nodes: {}", g.nodes.size(), ir::op_histogram(g));
    fusion::CostModel model(opt.lower.precision);
    if (!opt.search.progress) opt.search.progress = [](const std::string& line) { spdlog::debug("fusion {}", line); };
    const fusion::SearchResult found = fusion::search(g, model, opt.search);
    const fusion::FusionPlan& fp = found.plan;
    spdlog::info("fusion: {} of {} moves taken, {} kernels tuned ({} estimates), {:.1f} -> {:.1f} us estimated",
                 std::count_if(found.moves.begin(), found.moves.end(), [](const fusion::MoveRecord& m) { return m.taken; }),
                 found.moves.size(), found.kernels.size(), model.source(), found.initial_us, found.final_us);
    if (opt.pipeline.dump_after == "all" || opt.pipeline.dump_after == kPartitionStage)
        std::fprintf(stdout, "%s\n", fusion::to_text(g, fp).c_str());
    plan::Plan p = codegen::lower(g, fp, opt.lower);
    for (const std::string& n : notes) p.meta.notes += (p.meta.notes.empty() ? "" : "\n") + n;
    return p;
}

}  // namespace stof
