// The one ordered list of compiler passes.
#pragma once

#include "ir/graph.hpp"
#include "passes/passes.hpp"

#include <functional>
#include <string>
#include <vector>

namespace stof {

struct PassInfo {
    const char* name;  // as used by --dump-after
    void (*run)(ir::Graph&, const PassOptions&);
    const char* reason;  // why it runs where it does
};

const std::vector<PassInfo>& pipeline_passes();

// The stage after the passes whose result --dump-after can print: the fusion
// plan (fusion/fusion_plan.hpp) that lowering consumes.
inline constexpr const char* kPartitionStage = "partition";

struct PipelineOptions {
    PassOptions pass;
    // --dump-after: a pass name, "partition" or "all"; the IR is printed after
    // matching passes (the partition by whoever builds it: compile_model, stofc ir).
    std::string dump_after;
    // The graph's intermediate values will be computed on the host (stofc eval's
    // interpreter): the memory check after infer-shapes counts them with the weights.
    // A compile holds only the weights (and folded constants) on the host.
    bool host_values = true;
    // Called after each pass (tests check invariants and equivalence here).
    std::function<void(const PassInfo&, const ir::Graph&)> after_pass;
};

// Runs every pass in order. Throws stof::Error on invalid --dump-after names
// and on any pass failure.
void run_pipeline(ir::Graph& g, const PipelineOptions& opt);

}  // namespace stof
