// The fused GEMM + rotary embedding kernel for f16 (sm_90a).
#include "gemm_rotary_sm90.cuh"

namespace stof::kernels::gemm {
template struct RotaryInstances<ElemType::f16>;
}  // namespace stof::kernels::gemm
