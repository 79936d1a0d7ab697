// gemm_swiglu_refusal, prepare_gemm_swiglu: the checks in front of the sm_90a kernels
// (gemm_swiglu_instances.hpp); interleave_gate_up: the weight layout they read.
#include "gemm_swiglu_instances.hpp"
#include "sm90_device.hpp"

#include <cstdint>
#include <cstring>
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

void interleave_gate_up(const void* gate, const void* up, void* out, int64_t k, int64_t n, int elem_bytes) {
    const auto* g = static_cast<const unsigned char*>(gate);
    const auto* u = static_cast<const unsigned char*>(up);
    auto* o = static_cast<unsigned char*>(out);
    const size_t es = static_cast<size_t>(elem_bytes);
    for (int64_t r = 0; r < k; ++r)
        for (int64_t j = 0; j < n; ++j) {
            const size_t src = static_cast<size_t>(r * n + j) * es, dst = static_cast<size_t>(r * 2 * n + 2 * j) * es;
            std::memcpy(o + dst, g + src, es);
            std::memcpy(o + dst + es, u + src, es);
        }
}

}  // namespace stof::kernels
