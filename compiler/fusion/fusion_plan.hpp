// The fusion plan: which IR nodes run together as one plan step (a generated
// kernel, a cuBLASLt call, a prebuilt kernel) and which values are stored
// between steps. Lowering (codegen/lower.cpp) consumes it; fusion/build_scheme.cpp
// builds it from the decisions the search (fusion/search.cpp) takes.
#pragma once

#include "ir/graph.hpp"
#include "stof/plan.hpp"

#include <string>
#include <vector>

namespace stof::fusion {

enum class SegmentKind : uint8_t {
    elementwise,  // one generated kernel storing its outputs, each computed from stored values
                  // through the segment's fused (elementwise and layout) nodes
    view,         // only reshapes (or casts to the same type) of a stored value: outputs[0] aliases it,
                  // no step; where outputs[0] is a graph output, the value is a row normalisation's
                  // output read by nothing else, and the normalisation writes the graph output's tensor
    row,          // one row-kernel node (Reduce*; a norm or softmax over other than trailing axes)
    rownorm,      // LayerNorm, RMSNorm or Softmax over trailing axes (nodes[0]) computing its input
                  // from stored values through the fused nodes nodes[1..] (its prologue); outputs[1],
                  // when present, is that input, also stored
    gemm,         // a GEMM; nodes[1..] are the epilogue it applies (bias, residual, activation): cuBLASLt's,
                  // or a fused kernel's (kernels/gemm) when it ends in the exact Gelu (fused_gelu_gemm)
                  // or is the SwiGLU gate over the halves of its result (fused_swiglu_gemm)
    loop,         // one loop-kernel node (Conv, ConvTranspose, Resize, CumSum, ScatterND)
    attention,    // one SparseAttention node on the prebuilt kernels
};

// A generated kernel's launch parameters (stage 2's space; 0: the template's default).
struct Config {
    int block = 0;  // elementwise: threads a CTA; rownorm: threads a row
    int rows = 0;   // rownorm: rows a CTA (one warp a row)
    int grid = 0;   // elementwise: CTAs at most (a grid-stride loop)
    int vec = 0;    // elementwise: 1 for one element a thread per access, else the 16-byte width
    int algo = 0;   // gemm: which of cuBLASLt's heuristic candidates (plan::GemmStep::algo)
    bool operator==(const Config& o) const {
        return block == o.block && rows == o.rows && grid == o.grid && vec == o.vec && algo == o.algo;
    }
    bool operator!=(const Config& o) const { return !(*this == o); }
    std::string str() const;  // "block=256,grid=8192" (defaults left out; "default" when all are)
};

struct Segment {
    SegmentKind kind = SegmentKind::elementwise;
    std::vector<int> nodes;            // IR node indices in topological order; nodes[0] anchors
                                       // gemm, row, loop and attention segments
    std::vector<ir::ValueId> outputs;  // the values the segment stores
    int position = 0;                  // node index whose place in the graph order the step takes
    Config config;                     // elementwise, rownorm and gemm segments
};

struct FusionPlan {
    std::vector<Segment> segments;  // in schedule order
    std::vector<char> inlined;      // value → recomputed inside its consumer's kernel, never stored
    std::vector<char> stored;       // value → written to a plan tensor by its segment
};

struct Choices;

// The plan for the decisions c (fusion/choices.hpp; fusion/build_scheme.cpp):
//  - a GEMM folds into its cuBLASLt epilogue a following bias Add of a constant row
//    vector [N], then a Relu or tanh-Gelu; with c.residual_in_gemm, a residual Add of a
//    stored value of its result's shape instead of the activation (cuBLASLt's beta·C);
//    with c.gelu_in_gemm, the exact Gelu after the bias (the fused kernel; a MatMul by a
//    constant [K, N] weight, K and N multiples of 8); while each value in the chain has
//    one reader and is not a graph output;
//  - a fused op's value is inlined into the kernels of its readers when it is no graph
//    output, every reader computes it inside its kernel (a fused op not folded into a
//    GEMM, or with c.norm_prologue a row normalisation reading it as input), and the
//    reads are by one node, or (c.multi_inline) land in one kernel;
//  - with c.norm_stores_input a row normalisation computes and stores its input, the
//    root of an elementwise kernel, when its other readers come later;
//  - with c.merge_kernel an elementwise kernel reading a stored value that the kernel
//    before it reads (and not its results) becomes one kernel with it;
//  - every other op is a segment of its own.
FusionPlan build_scheme(const ir::Graph& g, const Choices& c);
// STOF's rule-based start: no decision taken.
FusionPlan initial_scheme(const ir::Graph& g);
// Every decision taken (fusion/choices.hpp find_sites).
FusionPlan fused_scheme(const ir::Graph& g);
// Nothing fused: every node a step of its own (GEMMs without epilogues), every value
// stored; the reference a fused candidate is checked against.
FusionPlan unfused_scheme(const ir::Graph& g);

const char* segment_kind_name(SegmentKind k);
// Whether s is a GEMM whose epilogue ends in the exact (erf) Gelu: it runs on the fused GEMM
// + bias + GELU kernel of kernels/gemm, not on cuBLASLt.
bool fused_gelu_gemm(const ir::Graph& g, const Segment& s);
// Whether s is a GEMM whose epilogue is the SwiGLU gate over the halves of its result (Split,
// Sigmoid, Mul, Mul): it runs on the fused GEMM + SwiGLU kernel of kernels/gemm.
bool fused_swiglu_gemm(const ir::Graph& g, const Segment& s);
// Whether s is a GEMM whose epilogue is the Rotary op on its result: it runs on the fused
// GEMM + rotary embedding kernel of kernels/gemm.
bool fused_rotary_gemm(const ir::Graph& g, const Segment& s);
// The fused kernel of kernels/gemm that GEMM segment s runs on, as the plan's epilogue
// (bias_gelu_erf, swiglu, rotary), or none when cuBLASLt runs it.
plan::Epilogue fused_gemm_epilogue(const ir::Graph& g, const Segment& s);
// What a segment computes, independent of names and of where it is: its kind, its
// nodes' ops and attributes, and the types and shapes of its values numbered in order
// of first use (identical layers give identical signatures). Excludes the config.
std::string segment_signature(const ir::Graph& g, const Segment& s);
// One line per segment: "seg 3 gemm @12: MatMul 'q_proj' + Add 'q_bias' -> q"; what
// `--dump-after partition` prints.
std::string to_text(const ir::Graph& g, const FusionPlan& p);

}  // namespace stof::fusion
