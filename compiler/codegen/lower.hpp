// Lowering of a shape-inferred IR graph into an executable plan: partition
// into kernels, cuBLASLt GEMMs and prebuilt kernels, arena planning, and
// NVRTC compilation of every generated kernel.
#pragma once

#include "ir/graph.hpp"
#include "stof/plan.hpp"

#include <string>

namespace stof::codegen {

struct LowerOptions {
    std::string precision = "fp32";  // fp32 | fp16 | bf16: storage of float tensors inside the plan
    std::string arch = "sm_90";      // NVRTC target
    std::string cache_dir;           // kernel cache (default_cache_dir() when empty)
    int jobs = 0;                    // parallel NVRTC compilations (0: hardware threads)
    std::string model;               // recorded in the plan's meta
    std::string attention_kernel = "auto";  // auto (the selector) | block-wise | row-wise
};

plan::Plan lower(const ir::Graph& g, const LowerOptions& opt);

}  // namespace stof::codegen
