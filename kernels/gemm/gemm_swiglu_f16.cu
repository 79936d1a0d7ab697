// The fused GEMM + SwiGLU kernel for f16 (sm_90a).
#include "gemm_swiglu_sm90.cuh"

namespace stof::kernels::gemm {
template struct SwigluInstances<ElemType::f16>;
}  // namespace stof::kernels::gemm
