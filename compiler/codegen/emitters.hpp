// Lowering of each kind of segment into plan steps (one file per kind).
#pragma once

#include "codegen/lower_state.hpp"
#include "fusion/fusion_plan.hpp"

#include <vector>

namespace stof::codegen {

// An elementwise segment: one kernel computing its stored value from stored
// values, inlining the producers of values marked inlined. (emit_injective.cpp)
void emit_injective(LowerState& st, const fusion::Segment& seg);

// Softmax, LayerNormalization, RMSNorm and Reduce* nodes as row kernels. (emit_rows.cpp)
void emit_rows(LowerState& st, const ir::Node& n);
// Input k (1 scale, 2 bias) of LayerNormalization / RMSNorm n broadcast (numpy rules) to
// the normalized shape `norm`, flattened into a [numel(norm)] f32 weight (`fill` where
// absent); returns its parameter name in kb. (emit_rows.cpp)
std::string column_param(LowerState& st, KernelBuilder& kb, const ir::Node& n, size_t k, const Shape& norm, double fill);

// A rownorm segment: LayerNormalization, RMSNorm or Softmax over trailing axes,
// its input computed by the segment's prologue nodes, vectorised. (emit_rownorm.cpp)
void emit_rownorm(LowerState& st, const fusion::Segment& seg);

// MatMul and Gemm through cuBLASLt, with an optional fused bias, residual
// (cuBLASLt's C) and activation (`epilogue_nodes`: the Add / Relu / Gelu nodes
// folded in, in order; the last one's output is the result). (emit_gemm.cpp)
// algo: which of cuBLASLt's heuristic candidates runs it (plan::GemmStep::algo).
void emit_gemm(LowerState& st, const ir::Node& n, const std::vector<const ir::Node*>& epilogue_nodes, int algo);

// SparseAttention on the sparse attention kernels. (emit_attention.cpp)
void emit_attention(LowerState& st, const ir::Node& n);
// Conv, ConvTranspose, Resize, CumSum and ScatterND as loop kernels, each a call of its
// template (templates/stof/{conv,resize,scan,scatter}.cuh). (emit_loop_kernel.cpp)
void emit_loop_kernel(LowerState& st, const ir::Node& n);

// An arena tensor holding `tensor` converted to `to`: written by a kernel
// appended at the first request, the same tensor for every later one (plan
// tensors are written once, before their first reader). (emit_injective.cpp)
int32_t emit_convert(LowerState& st, int32_t tensor, DType to);
// Appends a kernel writing `tensor` converted into the existing tensor `dst` (same shape).
void emit_convert_into(LowerState& st, int32_t tensor, int32_t dst);
// Copies tensor broadcast (numpy rules) to `shape` into a new intermediate; returns it.
int32_t emit_broadcast(LowerState& st, int32_t tensor, const Shape& shape);

// "add_mul_erf": lower-case op names of nodes, at most `max` distinct ones.
std::string ops_tag(const std::vector<const ir::Node*>& nodes, size_t max = 4);
std::string node_names(const std::vector<const ir::Node*>& nodes);

// Block size and grid (at most max_blocks CTAs) for a grid-stride loop over n elements.
void elementwise_launch(int64_t n, plan::LaunchStep& launch, int block = 256, int max_blocks = 8192);
// "int" when every index fits in 32 bits, else "long long".
const char* index_type(int64_t max_index);

}  // namespace stof::codegen
