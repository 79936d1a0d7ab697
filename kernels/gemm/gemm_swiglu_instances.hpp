// The fused GEMM + SwiGLU kernels of each element type (gemm_swiglu_sm90.cuh), instantiated
// for sm_90a in gemm_swiglu_f16.cu and gemm_swiglu_bf16.cu; gemm_swiglu.cu checks the
// arguments and the device before calling them.
#pragma once

#include "stof/kernels/gemm_swiglu.hpp"

namespace stof::kernels::gemm {

template <ElemType E> struct SwigluInstances {
    static std::unique_ptr<FusedGemm> prepare(const GemmSwigluArgs& a, int config, cudaStream_t stream, std::string& why);
};

extern template struct SwigluInstances<ElemType::f16>;
extern template struct SwigluInstances<ElemType::bf16>;

}  // namespace stof::kernels::gemm
