// Lowering of a shape-inferred IR graph and its fusion plan into an executable
// plan: plan tensors and steps per segment, arena planning, and NVRTC
// compilation of every generated kernel (codegen/compile_kernels.cpp).
#pragma once

#include "fusion/fusion_plan.hpp"
#include "ir/graph.hpp"
#include "precision.hpp"
#include "stof/plan.hpp"

#include <functional>
#include <string>
#include <string_view>

namespace stof::codegen {

// --attention-kernel: the analytical selector's choice, or one kernel forced.
enum class AttentionKernelChoice : uint8_t { selector, block_wise, row_wise };
// "auto" | "block-wise" | "row-wise"; a stof::Error otherwise.
AttentionKernelChoice parse_attention_kernel_choice(std::string_view name);
const char* attention_kernel_choice_name(AttentionKernelChoice c);

struct LowerOptions {
    Precision precision = Precision::fp32;  // storage of float tensors inside the plan
    std::string arch = "sm_90";             // NVRTC target
    std::string cache_dir;                  // kernel cache (default_cache_dir() when empty)
    int jobs = 0;                           // parallel NVRTC compilations (0: hardware threads)
    std::string model;                      // recorded in the plan's meta
    AttentionKernelChoice attention_kernel = AttentionKernelChoice::selector;
    bool quiet = false;  // progress and summaries at debug level (tuning candidates)
    // Called with each distinct generated kernel's key and CUDA source, before NVRTC
    // (the codegen snapshot test). Without nvrtc the plan's kernels hold no code: the
    // plan is for inspection only.
    std::function<void(const std::string& key, const std::string& source)> on_kernel_source;
    bool nvrtc = true;
    // A timing plan for the tuning worker: large float constants become placeholder
    // weights (plan::Plan::placeholders; codegen/lower_state.hpp kPlaceholderMinBytes),
    // neither converted nor stored. Only the tuning worker runs such a plan.
    bool placeholder_weights = false;
};

plan::Plan lower(const ir::Graph& g, const fusion::FusionPlan& fp, const LowerOptions& opt);

}  // namespace stof::codegen
