// The Hopper GEMM + bias + GELU (stof/kernels/gemm_gelu.hpp) as CUTLASS kernels: TMA loads
// into a multi-stage shared-memory ring, wgmma with both operands in shared memory, a
// producer warpgroup and two consumer warpgroups, persistent CTAs, and an epilogue that
// computes GELU(acc + bias) in fp32 (gelu_erf) and stores D through shared memory by TMA. Compiled for
// sm_90a alone (gemm_gelu_f16.cu, gemm_gelu_bf16.cu instantiate it).
//
// Layouts: A [m, k] row-major (K-major), B [k, n] row-major (N-major: wgmma reads it
// transposed), D [m, n] row-major; the bias is a per-column vector; no C operand.
#pragma once

#include "gemm_gelu_instances.hpp"
#include "prepared_cutlass_gemm.cuh"
#include "stof/kernels/gelu_erf.hpp"

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

namespace stof::kernels::gemm {

// The epilogue's activation: gelu_erf on each fp32 value (CUTLASS applies it to arrays).
template <class T> struct GeluErf;
template <> struct GeluErf<float> {
    static constexpr bool kIsHeavy = true;
    CUTLASS_HOST_DEVICE float operator()(float x) const { return gelu_erf(x); }
};
template <int N> struct GeluErf<cutlass::Array<float, N>> {
    static constexpr bool kIsHeavy = true;
    CUTLASS_HOST_DEVICE cutlass::Array<float, N> operator()(const cutlass::Array<float, N>& x) const {
        cutlass::Array<float, N> y;
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < N; ++i) y[i] = gelu_erf(x[i]);
        return y;
    }
};

template <int Config> struct GemmGeluConfig;
template <> struct GemmGeluConfig<0> {
    using Tile = cute::Shape<cute::_128, cute::_128, cute::_64>;
    using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
    using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
};
template <> struct GemmGeluConfig<1> {
    using Tile = cute::Shape<cute::_128, cute::_256, cute::_64>;
    using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
    using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
};
static_assert(kGemmGeluConfigs == 2, "gemm_gelu: one GemmGeluConfig per config");

// T: cutlass::half_t or cutlass::bfloat16_t.
template <class T, int Config> struct GemmGeluKernel {
    using Cfg = GemmGeluConfig<Config>;
    static constexpr int kAlign = 8;  // elements per 16 bytes: TMA's alignment
    using Cluster = cute::Shape<cute::_1, cute::_1, cute::_1>;
    // D = GELU(1 · acc + bias), the exact (erf) GELU in fp32 (gelu_erf).
    using Fusion = cutlass::epilogue::fusion::LinCombPerColBiasEltAct<GeluErf, T, float, T, void>;
    using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, typename Cfg::Tile, Cluster,
        cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, cutlass::layout::RowMajor, kAlign, T,
        cutlass::layout::RowMajor, kAlign, typename Cfg::EpilogueSchedule, Fusion>::CollectiveOp;
    using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, T, cutlass::layout::RowMajor, kAlign, T, cutlass::layout::RowMajor,
        kAlign, float, typename Cfg::Tile, Cluster,
        cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
        typename Cfg::MainloopSchedule>::CollectiveOp;
    using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Mainloop, Epilogue>;
    using Device = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

    static typename Device::Arguments arguments(const GemmGeluArgs& a) {
        const int m = static_cast<int>(a.m), n = static_cast<int>(a.n), k = static_cast<int>(a.k);
        const auto sa = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, cute::make_shape(m, k, 1));
        const auto sb = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, cute::make_shape(n, k, 1));
        const auto sd = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, cute::make_shape(m, n, 1));
        typename Device::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                        {m, n, k, 1},
                                        {static_cast<const T*>(a.a), sa, static_cast<const T*>(a.b), sb},
                                        {{}, nullptr, {}, static_cast<T*>(a.d), sd}};
        args.epilogue.thread.alpha = 1.f;
        args.epilogue.thread.beta = 0.f;
        args.epilogue.thread.bias_ptr = static_cast<const T*>(a.bias);
        return args;
    }
};

template <ElemType E> using CutlassOf = std::conditional_t<E == ElemType::f16, cutlass::half_t, cutlass::bfloat16_t>;

template <class T, int Config>
std::unique_ptr<FusedGemm> prepare_of(const GemmGeluArgs& a, cudaStream_t stream, std::string& why) {
    using K = GemmGeluKernel<T, Config>;
    return prepare_cutlass_gemm<typename K::Device>(K::arguments(a), stream, why);
}

template <ElemType E>
std::unique_ptr<FusedGemm> Instances<E>::prepare(const GemmGeluArgs& a, int config, cudaStream_t stream, std::string& why) {
    return config == 0 ? prepare_of<CutlassOf<E>, 0>(a, stream, why) : prepare_of<CutlassOf<E>, 1>(a, stream, why);
}

}  // namespace stof::kernels::gemm
