// A GEMM with a fused epilogue (gemm_gelu.hpp, gemm_swiglu.hpp), prepared once for fixed
// pointers and sizes.
#pragma once

#include <cuda_runtime.h>

namespace stof::kernels {

class FusedGemm {
public:
    virtual ~FusedGemm() = default;
    // Enqueues the GEMM on `stream` (one launch; capturable in a CUDA graph).
    virtual cudaError_t run(cudaStream_t stream) const = 0;
};

}  // namespace stof::kernels
