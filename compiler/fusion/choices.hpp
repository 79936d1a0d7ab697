// The decisions a fusion plan is built from (fusion/build_scheme.cpp), one per
// site of the graph; each kind is one of STOF's stage-1 moves:
//   seize    a GEMM folds the residual Add after it into its cuBLASLt epilogue (beta·C); or
//            (SiteOptions::fused_gemm) the exact Gelu after its bias, or the SwiGLU gate over
//            the two halves of a merged gate|up projection, or the Rotary op on a merged Q|K|V
//            projection, as a fused GEMM of kernels/gemm (plan::Epilogue::bias_gelu_erf, swiglu,
//            rotary)
//   expand   a row normalisation computes its input inside (its prologue), or also stores
//            it; a value read by several nodes of one kernel is recomputed there instead
//            of stored; an elementwise kernel merges with the previous one (several outputs)
//   compete  a residual Add wanted by both a GEMM epilogue and a norm prologue: the seize
//            of that GEMM takes it from the norm
// The initial scheme (STOF's rule-based start) takes none of them: GEMMs fold a bias
// and a ReLU or tanh-GELU, single-use values are inlined into their reader.
#pragma once

#include "ir/graph.hpp"

#include <set>
#include <string>
#include <vector>

namespace stof::fusion {

enum class MoveKind : uint8_t { seize, expand };

struct Choices {
    std::set<int> residual_in_gemm;      // GEMM node → folds the residual Add after it
    std::set<int> gelu_in_gemm;          // GEMM node → folds the exact Gelu after its bias (the fused GEMM)
    std::set<int> swiglu_in_gemm;        // GEMM node → folds the SwiGLU gate over its two halves (the fused GEMM)
    std::set<int> rotary_in_gemm;        // GEMM node → folds the Rotary op on its result (the fused GEMM)
    std::set<int> norm_prologue;         // row-norm node → computes its input's fused producers inside
    std::set<int> norm_stores_input;     // row-norm node → computes and stores its (elementwise-rooted) input
    std::set<ir::ValueId> multi_inline;  // value → recomputed by the several nodes of one kernel that read it
    std::set<ir::ValueId> merge_kernel;  // root of an elementwise kernel → merged into the kernel before it

    bool operator==(const Choices& o) const {
        return residual_in_gemm == o.residual_in_gemm && gelu_in_gemm == o.gelu_in_gemm && swiglu_in_gemm == o.swiglu_in_gemm &&
               rotary_in_gemm == o.rotary_in_gemm && norm_prologue == o.norm_prologue &&
               norm_stores_input == o.norm_stores_input && multi_inline == o.multi_inline && merge_kernel == o.merge_kernel;
    }
};

// One decision of a graph: turning it on is the move.
struct Site {
    MoveKind kind = MoveKind::expand;
    enum Field : uint8_t {
        residual_in_gemm,
        gelu_in_gemm,
        swiglu_in_gemm,
        rotary_in_gemm,
        norm_prologue,
        norm_stores_input,
        multi_inline,
        merge_kernel
    } field;
    int64_t key = 0;        // the node index or value id the decision is about
    std::string signature;  // the same for the sites of identical layers: decided together
    std::string describe;   // "seize: residual Add 'layer.0/Add' into GEMM 'layer.0/o_proj'"
};

struct SiteOptions {
    // The target runs the fused GEMMs of kernels/gemm, bias + exact GELU, SwiGLU and rotary
    // embedding (fused_gemm_target).
    bool fused_gemm = false;
};

// Every site of g where a move applies (given all the others taken), in node order.
std::vector<Site> find_sites(const ir::Graph& g, const SiteOptions& o = {});
// c with the sites' decisions on.
Choices with(Choices c, const std::vector<const Site*>& sites);

}  // namespace stof::fusion
