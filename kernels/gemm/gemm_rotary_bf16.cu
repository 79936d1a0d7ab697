// The fused GEMM + rotary embedding kernel for bf16 (sm_90a).
#include "gemm_rotary_sm90.cuh"

namespace stof::kernels::gemm {
template struct RotaryInstances<ElemType::bf16>;
}  // namespace stof::kernels::gemm
