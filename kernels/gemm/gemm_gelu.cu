// gemm_gelu_refusal, prepare_gemm_gelu: the checks in front of the
// sm_90a kernels (gemm_gelu_instances.hpp); launch_gelu: the GELU alone, for any device.
#include "gemm_gelu_instances.hpp"
#include "sm90_device.hpp"
#include "stof/kernels/gelu_erf.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace stof::kernels {

namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <class T> __device__ __forceinline__ float to_f32(T x);
template <> __device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ __half from_f32(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32(float x) { return __float2bfloat16_rn(x); }

template <class T> __global__ void gelu_kernel(T* x, int64_t count) {
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
        x[i] = from_f32<T>(gelu_erf(to_f32(x[i])));
}

}  // namespace

std::string gemm_gelu_refusal(const GemmGeluArgs& a, int config) {
    if (config < 0 || config >= kGemmGeluConfigs)
        return "config " + std::to_string(config) + " is not one of 0.." + std::to_string(kGemmGeluConfigs - 1);
    if (a.type != ElemType::f16 && a.type != ElemType::bf16) return "the element type is neither fp16 nor bf16";
    constexpr int64_t kLimit = int64_t{1} << 31;
    if (a.m < 1 || a.n < 1 || a.k < 1 || a.m >= kLimit || a.n >= kLimit || a.k >= kLimit)
        return "m, n and k must lie in [1, 2^31)";
    if (a.n % 8 != 0 || a.k % 8 != 0) return "n and k must be multiples of 8 (16-byte rows for the tensor copies)";
    if (!a.a || !a.b || !a.bias || !a.d) return "a pointer is null";
    if (!aligned16(a.a) || !aligned16(a.b) || !aligned16(a.bias) || !aligned16(a.d)) return "a pointer is not 16-byte aligned";
    return gemm::sm90_device_refusal();
}

std::unique_ptr<FusedGemm> prepare_gemm_gelu(const GemmGeluArgs& a, int config, cudaStream_t stream, std::string& why) {
    why = gemm_gelu_refusal(a, config);
    if (!why.empty()) return nullptr;
    return a.type == ElemType::bf16 ? gemm::Instances<ElemType::bf16>::prepare(a, config, stream, why)
                                    : gemm::Instances<ElemType::f16>::prepare(a, config, stream, why);
}

cudaError_t launch_gelu(ElemType type, void* x, int64_t count, cudaStream_t stream) {
    if (!x || count < 0) return cudaErrorInvalidValue;
    if (count == 0) return cudaSuccess;
    constexpr int kThreads = 256;
    const int64_t blocks = std::min<int64_t>((count + kThreads - 1) / kThreads, 65536);
    if (type == ElemType::bf16)
        gelu_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(x), count);
    else gelu_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(static_cast<__half*>(x), count);
    return cudaGetLastError();
}

}  // namespace stof::kernels
