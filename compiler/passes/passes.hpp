// Every compiler pass, one file each. Passes run only through
// compiler/pipeline.cpp, which orders them.
#pragma once

#include "ir/graph.hpp"
#include "precision.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace stof {

struct PassOptions {
    // --shape NAME=DIMS: dimensions for graph inputs (overrides the model's).
    std::map<std::string, Shape> input_shapes;
    // --mask [LAYERS=]SPEC: attention masks, intersected with the model's own.
    std::vector<std::string> masks;
    // The precision of the plan being compiled; unset when no plan is (stofc eval),
    // and then attention stays SparseAttention for the interpreter.
    std::optional<Precision> plan_precision;
    // Receives what a user of the plan should know (an attention block left off the
    // sparse kernels and why); compile_model records it in the plan's notes.
    std::function<void(const std::string&)> note;
    // The largest value (elements) infer-shapes computes at compile time; bigger
    // results stay run-time work (and masks are then classified from their ops). A
    // Transpose of a constant (a weight stored [out, in], a tied embedding) folds up to
    // transpose_fold_limit: it is no larger than the constant it reads, and left unfolded
    // it would be a full pass over the weight and an arena buffer of its size every run.
    int64_t fold_limit = int64_t{1} << 24;
    int64_t transpose_fold_limit = int64_t{1} << 31;
};

namespace passes {

// Applies input_shapes to the graph inputs and checks that every input
// dimension is bound. (bind_inputs.cpp)
void bind_inputs(ir::Graph& g, const PassOptions& opt);

// Types and shapes of every value, in topological order; contents of values
// computable at compile time (shape arithmetic, constant subgraphs).
// (infer_shapes.cpp)
void infer_shapes(ir::Graph& g, const PassOptions& opt);

// Replaces nodes whose outputs are all known at compile time by constants.
// (fold_constants.cpp)
void fold_constants(ir::Graph& g, const PassOptions& opt);

// Canonicalization: exporters' spellings of common layers → one op each.
// Spelled-out layer normalisation over the last axis → LayerNormalization.
// (fuse_layernorm.cpp)
void fuse_layernorm(ir::Graph& g, const PassOptions& opt);

// Spelled-out RMS normalisation (LLaMA, T5), Cast wrappers included → RMSNorm.
// (fuse_rmsnorm.cpp)
void fuse_rmsnorm(ir::Graph& g, const PassOptions& opt);

// Erf and tanh spellings of GELU → Gelu (approximate "none" / "tanh"). (fuse_gelu.cpp)
void fuse_gelu(ir::Graph& g, const PassOptions& opt);

// 2-D convolutions over non-overlapping patches (ViT's patch embedding) →
// layout ops and a linear layer over the patches. (patch_conv.cpp)
void patch_conv(ir::Graph& g, const PassOptions& opt);

// Linear layers with constant weights (Gemm, reshaped MatMul, bias Add) →
// the Add(MatMul(x, W), b) form the GEMM lowering folds into one step. (fuse_linear.cpp)
void fuse_linear(ir::Graph& g, const PassOptions& opt);

// Linear layers reading the same input (Q/K/V, gate/up) → one linear layer over
// concatenated weights whose result is split back. (merge_sibling_linear.cpp)
void merge_sibling_linear(ir::Graph& g, const PassOptions& opt);

// Rotary position embeddings (rotate-half) of the heads split from one tensor → one
// Rotary node on that tensor, the heads split from its result. (fuse_rotary.cpp)
void fuse_rotary(ir::Graph& g, const PassOptions& opt);

// Scaled dot-product attention subgraphs → SparseAttention, with the mask the
// model computes (pattern, bias, padding input) and --mask. (fuse_attention.cpp)
void fuse_attention(ir::Graph& g, const PassOptions& opt);

// In a plan (opt.plan_precision set), SparseAttention nodes the sparse attention
// kernels cannot run → the MatMul / Softmax / Where ops they stand for, each
// reported with its reason. (decompose_attention.cpp)
void decompose_attention(ir::Graph& g, const PassOptions& opt);

// Removes nodes and values that no graph output depends on. (eliminate_dead_code.cpp)
void eliminate_dead_code(ir::Graph& g, const PassOptions& opt);

}  // namespace passes
}  // namespace stof
