#include "compile.hpp"

#include "fusion/fusion_plan.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>

namespace stof {

plan::Plan compile_model(ir::Graph& g, CompileOptions opt) {
    opt.pipeline.pass.plan_precision = opt.lower.precision;
    run_pipeline(g, opt.pipeline);
    spdlog::info("after the passes: {} nodes: {}", g.nodes.size(), ir::op_histogram(g));
    const fusion::FusionPlan fp = fusion::initial_scheme(g);
    if (opt.pipeline.dump_after == "all" || opt.pipeline.dump_after == kPartitionStage)
        std::fprintf(stdout, "%s\n", fusion::to_text(g, fp).c_str());
    return codegen::lower(g, fp, opt.lower);
}

}  // namespace stof
