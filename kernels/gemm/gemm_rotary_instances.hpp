// The fused GEMM + rotary embedding kernels of each element type (gemm_rotary_sm90.cuh),
// instantiated for sm_90a in gemm_rotary_f16.cu and gemm_rotary_bf16.cu; gemm_rotary.cu checks
// the arguments and the device before calling them.
#pragma once

#include "stof/kernels/gemm_rotary.hpp"

namespace stof::kernels::gemm {

template <ElemType E> struct RotaryInstances {
    static std::unique_ptr<FusedGemm> prepare(const GemmRotaryArgs& a, int config, cudaStream_t stream, std::string& why);
};

extern template struct RotaryInstances<ElemType::f16>;
extern template struct RotaryInstances<ElemType::bf16>;

}  // namespace stof::kernels::gemm
