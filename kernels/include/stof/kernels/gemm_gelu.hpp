// A GEMM whose epilogue adds a bias and applies the exact GELU, the epilogue cuBLASLt
// does not offer (its GELU is the tanh approximation). See kernels/gemm/README.md.
//
//   a     [m, k] row-major (k contiguous)      b  [k, n] row-major (n contiguous)
//   bias  [n]                                  d  [m, n] row-major
//   d[i, j] = GELU(Σ_l a[i, l] · b[l, j] + bias[j]),  GELU(x) = x/2 · (1 + erf(x/√2))
// a, b, bias and d of one type (fp16 or bf16); products summed in fp32, the bias and
// GELU in fp32 (gelu_erf: stof/kernels/gelu_erf.hpp), d rounded once.
#pragma once

#include "stof/kernels/elem_type.hpp"
#include "stof/kernels/fused_gemm.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

namespace stof::kernels {

struct GemmGeluArgs {
    ElemType type = ElemType::f16;
    int64_t m = 0, n = 0, k = 0;
    const void* a = nullptr;
    const void* b = nullptr;
    const void* bias = nullptr;
    void* d = nullptr;
};

// The kernel's tile configurations (a plan's GemmStep::algo for these steps):
//   0  128 x 128 tiles, the two consumer warpgroups on alternate tiles (ping-pong: one's
//      epilogue runs under the other's MMAs)
//   1  128 x 256 tiles, both consumer warpgroups on one tile (cooperative)
inline constexpr int kGemmGeluConfigs = 2;

// The fused kernel runs on compute capability 9.0 alone (sm_90a instructions); elsewhere
// a caller runs the GEMM with a bias epilogue and then launch_gelu.

// Why the fused kernel cannot run `a` with `config` on the current device ("" when it can):
// a device other than compute capability 9.0, m, n or k outside [1, 2^31), n or k not a
// multiple of 8, a pointer not 16-byte aligned, a config outside [0, kGemmGeluConfigs).
std::string gemm_gelu_refusal(const GemmGeluArgs& a, int config);
// The kernel prepared for `a` once (its tensor maps built for these pointers and sizes, a
// workspace of its own where it needs one, initialised on `stream`, synchronised before
// returning). nullptr, with `why` set, when refused or when the preparation fails.
std::unique_ptr<FusedGemm> prepare_gemm_gelu(const GemmGeluArgs& a, int config, cudaStream_t stream, std::string& why);

// x[i] = GELU(x[i]) for i < count, in place, any compute capability (the same GELU, for a
// GEMM whose bias epilogue ran elsewhere). Asynchronous on `stream`; cudaErrorInvalidValue
// for a null x or a count below 0.
cudaError_t launch_gelu(ElemType type, void* x, int64_t count, cudaStream_t stream);

}  // namespace stof::kernels
