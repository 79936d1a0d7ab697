// gemm_swiglu_refusal, prepare_gemm_swiglu: the checks in front of the sm_90a kernels
// (gemm_swiglu_instances.hpp).
#include "gemm_swiglu_instances.hpp"
#include "sm90_device.hpp"

#include <cstdint>
#include <string>

namespace stof::kernels {

std::string gemm_swiglu_refusal(const GemmSwigluArgs& a, int config) {
    if (config < 0 || config >= kGemmSwigluConfigs)
        return "config " + std::to_string(config) + " is not one of 0.." + std::to_string(kGemmSwigluConfigs - 1);
    if (a.type != ElemType::f16 && a.type != ElemType::bf16) return "the element type is neither fp16 nor bf16";
    constexpr int64_t kLimit = int64_t{1} << 31;
    if (a.m < 1 || a.n < 1 || a.k < 1 || a.m >= kLimit || 2 * a.n >= kLimit || a.k >= kLimit)
        return "m, 2n and k must lie in [1, 2^31)";
    if (a.n % 8 != 0 || a.k % 8 != 0) return "n and k must be multiples of 8 (16-byte rows for the tensor copies)";
    if (!a.a || !a.b || !a.d) return "a pointer is null";
    for (const void* p : {a.a, static_cast<const void*>(a.b), static_cast<const void*>(a.d)})
        if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return "a pointer is not 16-byte aligned";
    return gemm::sm90_device_refusal();
}

std::unique_ptr<FusedGemm> prepare_gemm_swiglu(const GemmSwigluArgs& a, int config, cudaStream_t stream, std::string& why) {
    why = gemm_swiglu_refusal(a, config);
    if (!why.empty()) return nullptr;
    return a.type == ElemType::bf16 ? gemm::SwigluInstances<ElemType::bf16>::prepare(a, config, stream, why)
                                    : gemm::SwigluInstances<ElemType::f16>::prepare(a, config, stream, why);
}

}  // namespace stof::kernels
