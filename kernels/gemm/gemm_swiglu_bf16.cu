// The fused GEMM + SwiGLU kernel for bf16 (sm_90a).
#include "gemm_swiglu_sm90.cuh"

namespace stof::kernels::gemm {
template struct SwigluInstances<ElemType::bf16>;
}  // namespace stof::kernels::gemm
