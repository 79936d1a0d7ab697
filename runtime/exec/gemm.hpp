// One plan GemmStep prepared for cuBLASLt: descriptors built and the algorithm
// chosen (cublasLtMatmulAlgoGetHeuristic) once, at load time.
//
// The plan's matrices are row-major; cuBLASLt's are column-major. A row-major
// r×c matrix with row stride ld is the column-major c×r matrix with leading
// dimension ld, so D = op(A)·op(B) is computed as Dᵀ = op(B)ᵀ·op(A)ᵀ: cuBLASLt's
// A is the plan's B, its B the plan's A, and its m, n are the plan's n, m.
// Inputs and output f32, f16 or bf16 (one dtype), fp32 compute and scale.
#pragma once

#include "stof/plan.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <memory>

namespace stof::exec {

struct GemmPointers {
    const void* a = nullptr;
    const void* b = nullptr;
    const void* c = nullptr;  // nullptr: none (beta == 0)
    void* d = nullptr;
    const void* bias = nullptr;
};

class LtGemm {
public:
    // Throws stof::Error when cuBLASLt has no algorithm for the step.
    LtGemm(cublasLtHandle_t lt, const plan::GemmStep& g, DType dtype, const GemmPointers& ptr, size_t workspace_bytes);
    ~LtGemm();
    LtGemm(const LtGemm&) = delete;
    LtGemm& operator=(const LtGemm&) = delete;

    // Enqueues the matmul on `stream`.
    void run(cublasLtHandle_t lt, void* workspace, size_t workspace_bytes, cudaStream_t stream) const;

private:
    void release();

    GemmPointers ptr_;
    float alpha_ = 1, beta_ = 0;
    cublasLtMatmulDesc_t op_ = nullptr;
    cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr, ld_ = nullptr;
    cublasLtMatmulAlgo_t algo_{};
};

}  // namespace stof::exec
