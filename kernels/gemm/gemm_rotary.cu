// gemm_rotary_refusal, prepare_gemm_rotary: the checks in front of the sm_90a kernels
// (gemm_rotary_instances.hpp).
#include "gemm_rotary_instances.hpp"
#include "sm90_device.hpp"

#include <cstdint>
#include <string>

namespace stof::kernels {

std::string gemm_rotary_refusal(const GemmRotaryArgs& a, int config) {
    if (config < 0 || config >= kGemmRotaryConfigs)
        return "config " + std::to_string(config) + " is not one of 0.." + std::to_string(kGemmRotaryConfigs - 1);
    if (a.type != ElemType::f16 && a.type != ElemType::bf16) return "the element type is neither fp16 nor bf16";
    constexpr int64_t kLimit = int64_t{1} << 31;
    if (a.m < 1 || a.n < 1 || a.k < 1 || a.m >= kLimit || a.n >= kLimit || a.k >= kLimit)
        return "m, n and k must lie in [1, 2^31)";
    if (a.n % 8 != 0 || a.k % 8 != 0 || a.ldd % 8 != 0)
        return "n, k and ldd must be multiples of 8 (16-byte rows for the tensor copies and stores)";
    if (a.ldd < a.n) return "ldd is smaller than n";
    if (a.head_dim != 64 && a.head_dim != 128) return "head_dim " + std::to_string(a.head_dim) + " is not 64 or 128";
    if (a.rot_cols < 0 || a.rot_cols > a.n || a.rot_cols % a.head_dim != 0)
        return "rot_cols must be a multiple of head_dim in [0, n]";
    if (a.cos_rows < 1) return "cos_rows must be at least 1";
    if (!a.a || !a.b || !a.d || !a.cos || !a.sin) return "a pointer is null";
    for (const void* p : {a.a, a.b, a.cos, a.sin, static_cast<const void*>(a.d)})
        if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return "a pointer is not 16-byte aligned";
    return gemm::sm90_device_refusal();
}

std::unique_ptr<FusedGemm> prepare_gemm_rotary(const GemmRotaryArgs& a, int config, cudaStream_t stream, std::string& why) {
    why = gemm_rotary_refusal(a, config);
    if (!why.empty()) return nullptr;
    return a.type == ElemType::bf16 ? gemm::RotaryInstances<ElemType::bf16>::prepare(a, config, stream, why)
                                    : gemm::RotaryInstances<ElemType::f16>::prepare(a, config, stream, why);
}

}  // namespace stof::kernels
