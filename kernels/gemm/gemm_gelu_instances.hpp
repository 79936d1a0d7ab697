// The fused GEMM + bias + GELU kernels of each element type (gemm_gelu_sm90.cuh), instantiated
// for sm_90a in gemm_gelu_f16.cu and gemm_gelu_bf16.cu; gemm_gelu.cu checks the arguments
// and the device before calling them.
#pragma once

#include "stof/kernels/gemm_gelu.hpp"

namespace stof::kernels::gemm {

template <ElemType E> struct Instances {
    static std::unique_ptr<FusedGemm> prepare(const GemmGeluArgs& a, int config, cudaStream_t stream, std::string& why);
};

extern template struct Instances<ElemType::f16>;
extern template struct Instances<ElemType::bf16>;

}  // namespace stof::kernels::gemm
