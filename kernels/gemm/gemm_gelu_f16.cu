// The fused GEMM + bias + GELU kernels for f16 (sm_90a).
#include "gemm_gelu_sm90.cuh"

namespace stof::kernels::gemm {
template struct Instances<ElemType::f16>;
}  // namespace stof::kernels::gemm
