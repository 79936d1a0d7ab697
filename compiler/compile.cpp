#include "compile.hpp"

#include "fusion/fusion_plan.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>

namespace stof {

plan::Plan compile_model(ir::Graph& g, CompileOptions opt) {
    opt.pipeline.pass.plan_precision = opt.lower.precision;
    std::vector<std::string> notes;
    opt.pipeline.pass.note = [&](const std::string& n) { notes.push_back(n); };
    run_pipeline(g, opt.pipeline);
    spdlog::info("after the passes: {} nodes: {}", g.nodes.size(), ir::op_histogram(g));
    const fusion::FusionPlan fp = fusion::initial_scheme(g);
    if (opt.pipeline.dump_after == "all" || opt.pipeline.dump_after == kPartitionStage)
        std::fprintf(stdout, "%s\n", fusion::to_text(g, fp).c_str());
    plan::Plan p = codegen::lower(g, fp, opt.lower);
    for (const std::string& n : notes) p.meta.notes += (p.meta.notes.empty() ? "" : "\n") + n;
    return p;
}

}  // namespace stof
