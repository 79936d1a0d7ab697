#include "pipeline.hpp"

#include "memory_estimate.hpp"
#include "stof/error.hpp"
#include "stof/progress.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>

namespace stof {

const std::vector<PassInfo>& pipeline_passes() {
    static const std::vector<PassInfo> passes = {
        {"bind-inputs", passes::bind_inputs, "every later pass needs static input shapes"},
        {"infer-shapes", passes::infer_shapes,
         "computes types and the compile-time values that shape arithmetic (Reshape targets, Slice bounds) depends on"},
        {"fold-constants", passes::fold_constants, "needs the values infer-shapes computed"},
        {"fuse-layernorm", passes::fuse_layernorm, "needs folded constants (eps, scale, bias, axes)"},
        {"fuse-rmsnorm", passes::fuse_rmsnorm,
         "after fuse-layernorm: a LayerNorm's variance tail alone is also an RMSNorm of x - mean"},
        {"fuse-gelu", passes::fuse_gelu, "needs folded constants (0.5, 1/sqrt(2), sqrt(2/pi), 0.044715)"},
        {"patch-conv", passes::patch_conv, "needs folded constants (the weight and bias it rearranges)"},
        {"fuse-linear", passes::fuse_linear,
         "needs folded constants (weights, biases); keeps the values the Gelu and attention patterns read"},
        {"merge-sibling-linear", passes::merge_sibling_linear,
         "after fuse-linear (one form of linear layer); before fuse-attention, which then reads Q/K/V in place from "
         "the merged projection"},
        {"fuse-rotary", passes::fuse_rotary,
         "after merge-sibling-linear (rotates the query and key columns of the merged projection) and before "
         "fuse-attention, which then reads the rotated Q/K and V in place from the Rotary output"},
        {"fuse-attention", passes::fuse_attention,
         "needs folded constants to classify the mask; leaves the mask subgraphs for dead-code elimination"},
        {"decompose-attention", passes::decompose_attention,
         "after fuse-attention: a plan's attention blocks that the sparse kernels cannot run become plain ops again"},
        {"eliminate-dead-code", passes::eliminate_dead_code, "folding leaves shape subgraphs and constants unused"},
    };
    return passes;
}

void run_pipeline(ir::Graph& g, const PipelineOptions& opt) {
    const auto& passes = pipeline_passes();
    if (!opt.dump_after.empty() && opt.dump_after != "all") {
        bool found = opt.dump_after == kPartitionStage;
        std::string names;
        for (const PassInfo& p : passes) {
            found = found || opt.dump_after == p.name;
            names += (names.empty() ? "" : ", ") + std::string(p.name);
        }
        STOF_CHECK(found, "--dump-after={}: no such pass (passes: {}; then {}; or all)", opt.dump_after, names, kPartitionStage);
    }
    for (const PassInfo& p : passes) {
        const auto t0 = std::chrono::steady_clock::now();
        {
            ProgressPhase phase(fmt::format("pass {}", p.name));
            p.run(g, opt.pass);
        }
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        spdlog::debug("pass {:<22} {:8.1f} ms  {} nodes", p.name, ms, g.nodes.size());
        if (opt.dump_after == "all" || opt.dump_after == p.name) {
            std::fprintf(stdout, "// IR after %s\n%s\n", p.name, ir::to_text(g).c_str());
        }
        // Shapes are known from here: what running the model needs is checked before a
        // later pass or the interpreter allocates anything of that size.
        if (p.run == passes::infer_shapes) check_memory_estimate(g, opt.host_values);
        if (opt.after_pass) opt.after_pass(p, g);
    }
}

}  // namespace stof
