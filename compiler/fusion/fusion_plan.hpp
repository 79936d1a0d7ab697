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
    elementwise,  // one generated kernel storing outputs[0], computed from stored values
                  // through the segment's fused (elementwise and layout) nodes
    view,         // only reshapes of a stored value: outputs[0] (not a graph output) aliases it, no step
    row,          // one row-kernel node (LayerNorm, RMSNorm, Softmax, Reduce*)
    gemm,         // a cuBLASLt GEMM; nodes[1..] are the epilogue it applies (bias, activation)
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
//  - a GEMM folds a following bias Add of a constant row vector [N], then a Relu or a
//    tanh-Gelu, into its cuBLASLt epilogue while each value in the chain has one consumer
//    and is not a graph output;
//  - a fused op's value is inlined into its consumer when that is its only use, the consumer
//    is a fused op not folded into a GEMM, and the value is not a graph output;
//  - every other op is a segment of its own.
FusionPlan initial_scheme(const ir::Graph& g);

const char* segment_kind_name(SegmentKind k);
// One line per segment: "seg 3 gemm @12: MatMul 'q_proj' + Add 'q_bias' -> q"; what
// `--dump-after partition` prints.
std::string to_text(const ir::Graph& g, const FusionPlan& p);

}  // namespace stof::fusion
