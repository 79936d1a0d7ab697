// One plan GemmStep prepared once, at load time: for cuBLASLt (LtGemm: descriptors
// built and the algorithm chosen with cublasLtMatmulAlgoGetHeuristic), or for the fused
// kernel of kernels/gemm (PreparedGemm, the steps with plan::fused_epilogue).
//
// The plan's matrices are row-major; cuBLASLt's are column-major. A row-major
// r×c matrix with row stride ld is the column-major c×r matrix with leading
// dimension ld, so D = op(A)·op(B) is computed as Dᵀ = op(B)ᵀ·op(A)ᵀ: cuBLASLt's
// A is the plan's B, its B the plan's A, and its m, n are the plan's n, m.
// Inputs and output f32, f16 or bf16 (one dtype), fp32 compute and scale.
#pragma once

#include "stof/plan.hpp"

#include "stof/kernels/gemm_gelu.hpp"
#include "stof/kernels/gemm_rotary.hpp"
#include "stof/kernels/gemm_swiglu.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>

namespace stof::exec {

struct GemmPointers {
    const void* a = nullptr;
    const void* b = nullptr;
    const void* c = nullptr;  // nullptr: none (beta == 0)
    void* d = nullptr;
    const void* bias = nullptr;
    const void* cos = nullptr;  // Epilogue::rotary's tables
    const void* sin = nullptr;
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

// A GemmStep whatever its epilogue. A fused epilogue runs on its fused kernel (kernels/gemm)
// where it takes the step on this device. Elsewhere bias_gelu_erf runs on cuBLASLt with the
// bias epilogue, then the GELU alone over D (`fallback` says why: the executor warns); swiglu
// and rotary have no other path (the constructor throws stof::Error, saying why).
class PreparedGemm {
public:
    // `stream`: where the fused kernel's preparation may write its workspace (synchronised).
    PreparedGemm(cublasLtHandle_t lt, const plan::GemmStep& g, DType dtype, const GemmPointers& ptr, size_t workspace_bytes,
                 cudaStream_t stream);
    ~PreparedGemm();
    PreparedGemm(const PreparedGemm&) = delete;
    PreparedGemm& operator=(const PreparedGemm&) = delete;

    // Enqueues the step on `stream` (cuBLASLt's workspace: `workspace`).
    void run(cublasLtHandle_t lt, void* workspace, size_t workspace_bytes, cudaStream_t stream) const;
    // Why a fused epilogue runs on cuBLASLt and the GELU alone here ("" otherwise).
    const std::string& fallback() const { return fallback_; }

private:
    std::unique_ptr<LtGemm> lt_gemm_;
    std::unique_ptr<kernels::FusedGemm> fused_;
    std::string fallback_;
    kernels::ElemType gelu_type_ = kernels::ElemType::f16;
    void* gelu_d_ = nullptr;  // fallback: D, m·n elements the GELU runs over
    int64_t gelu_count_ = 0;
};

}  // namespace stof::exec
