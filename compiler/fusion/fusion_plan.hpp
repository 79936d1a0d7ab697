// The fusion plan: which IR nodes run together as one plan step (a generated
// kernel, a cuBLASLt call, a prebuilt kernel) and which values are stored
// between steps. Lowering (codegen/lower.cpp) consumes it; the rules that
// build today's plan are fusion/initial_scheme.cpp.
#pragma once

#include "ir/graph.hpp"

#include <string>
#include <vector>

namespace stof::fusion {

enum class SegmentKind : uint8_t {
    elementwise,  // one generated kernel storing its outputs, each computed from stored values
                  // through the segment's fused (elementwise and layout) nodes
    view,         // only reshapes (or casts to the same type) of a stored value: outputs[0] (not a graph
                  // output) aliases it, no step
    row,          // one row-kernel node (Reduce*; a norm or softmax over other than trailing axes)
    rownorm,      // LayerNorm, RMSNorm or Softmax over trailing axes (nodes[0]) computing its input
                  // from stored values through the fused nodes nodes[1..] (its prologue); outputs[1],
                  // when present, is that input, also stored
    gemm,         // a cuBLASLt GEMM; nodes[1..] are the epilogue it applies (bias, residual, activation)
    loop,         // one loop-kernel node (Conv, ConvTranspose, Resize, CumSum, ScatterND)
    attention,    // one SparseAttention node on the prebuilt kernels
};

struct Segment {
    SegmentKind kind = SegmentKind::elementwise;
    std::vector<int> nodes;            // IR node indices in topological order; nodes[0] anchors
                                       // gemm, row, loop and attention segments
    std::vector<ir::ValueId> outputs;  // the values the segment stores
    int position = 0;                  // node index whose place in the graph order the step takes
};

struct FusionPlan {
    std::vector<Segment> segments;  // in schedule order
    std::vector<char> inlined;      // value → recomputed inside its consumer's kernel, never stored
    std::vector<char> stored;       // value → written to a plan tensor by its segment
};

// The plan today's rules give (fusion/initial_scheme.cpp):
//  - a GEMM folds into its cuBLASLt epilogue a following bias Add of a constant row
//    vector [N] and a residual Add of a stored value of its result's shape (cuBLASLt's
//    beta·C), or a bias Add then a Relu or tanh-Gelu, while each value in the chain has
//    one consumer and is not a graph output;
//  - a fused op's value is inlined into the kernels of its readers when it is no graph
//    output and every reader computes it inside its kernel (a fused op not folded into a
//    GEMM, or a row normalisation reading it as input), and the reads are by one node or
//    land in one kernel;
//  - a row normalisation whose input is the root of an elementwise kernel stores that
//    value itself (pre-norm residual streams) when its other readers come later;
//  - adjacent elementwise kernels reading a common stored value (and not each other's
//    results) become one kernel with several outputs;
//  - every other op is a segment of its own.
FusionPlan initial_scheme(const ir::Graph& g);

const char* segment_kind_name(SegmentKind k);
// One line per segment: "seg 3 gemm @12: MatMul 'q_proj' + Add 'q_bias' -> q"; what
// `--dump-after partition` prints.
std::string to_text(const ir::Graph& g, const FusionPlan& p);

}  // namespace stof::fusion
