// The Hopper GEMM + rotary embedding (stof/kernels/gemm_rotary.hpp) as CUTLASS kernels: the
// ping-pong mainloop of gemm_swiglu_sm90.cuh (TMA, wgmma, a producer and two consumer
// warpgroups, each consumer on a tile of its own) and RotaryEpilogue. Compiled for sm_90a
// alone (gemm_rotary_f16.cu, gemm_rotary_bf16.cu).
//
// Layouts: A [m, k] row-major (K-major), B [k, n] row-major (N-major: wgmma reads it
// transposed), D [m, ldd] row-major, cos and sin [cos_rows, head_dim] row-major.
#pragma once

#include "fused_epilogue.cuh"
#include "gemm_rotary_instances.hpp"

#include "cute/tensor.hpp"
#include "cutlass/arch/barrier.h"
#include "cutlass/cutlass.h"
#include "cutlass/util/packed_stride.hpp"

#include <cuda_runtime.h>

#include <cstdint>

namespace stof::kernels::gemm {

// The epilogue of a tile of kTileM rows and kTileN columns. The accumulators go to a kTileM ×
// kTileN fp32 staging tile in shared memory (no rounding before the rotation); then each
// thread takes 8 consecutive columns of a row at a time: in the rotated columns it combines
// them with the 8 columns head_dim / 2 away in the same head (a tile holds whole heads: its
// columns start at a multiple of kTileN, a multiple of head_dim) and that position's cos and
// sin, and stores 8 elements of d. Run through CUTLASS's Sm90TmaWarpSpecializedAdapter by the
// kThreads threads that computed the tile; the ping-pong kernel runs its consumers' epilogues
// one after the other, so they share the staging tile.
template <class T, class Tile, int Threads> class RotaryEpilogue : public OwnEpilogue<T> {
public:
    static constexpr int kTileM = cute::size<0>(Tile{});
    static constexpr int kTileN = cute::size<1>(Tile{});
    static constexpr int kThreads = Threads;
    static constexpr int kVec = 8;             // elements a thread stores at once: 16 bytes
    static constexpr int kPitch = kTileN + 8;  // staging row pitch (floats): a half-warp's 8-byte stores in distinct banks
    static constexpr int kChunksPerRow = kTileN / kVec;
    static_assert(sizeof(T) == 2, "RotaryEpilogue: 16-bit elements");
    static_assert(kTileN % 128 == 0, "RotaryEpilogue: a tile holds whole heads of 64 or 128 columns");
    static_assert(kTileM * kChunksPerRow % kThreads == 0, "RotaryEpilogue: every thread stores as many pieces");

    struct SharedStorage {
        alignas(128) float x[kTileM * kPitch];
    };
    using TensorStorage = SharedStorage;

    struct Arguments {
        T* d = nullptr;  // [m, ld]
        int64_t ld = 0;
        int64_t rot_cols = 0;
        int head_dim = 64;
        int64_t cos_rows = 1;
        const T* cos = nullptr;  // [cos_rows, head_dim]
        const T* sin = nullptr;
    };
    using Params = Arguments;

    template <class ProblemShape> static bool can_implement(const ProblemShape& shape, const Arguments& a) {
        const int64_t n = cute::get<1>(shape);
        const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
        return a.d && aligned(a.d) && n % kVec == 0 && a.ld % kVec == 0 && a.ld >= n &&
               (a.head_dim == 64 || a.head_dim == 128) && a.rot_cols >= 0 && a.rot_cols <= n && a.rot_cols % a.head_dim == 0 &&
               a.cos_rows >= 1 && (a.rot_cols == 0 || (a.cos && a.sin && aligned(a.cos) && aligned(a.sin)));
    }

    CUTLASS_HOST_DEVICE explicit RotaryEpilogue(const Params& p, const SharedStorage& = SharedStorage()) : params_(p) {}

    template <class ProblemShapeMNKL, class BlockShapeMNK, class BlockCoordMNKL, class FrgEngine, class FrgLayout,
              class TiledMma, class ResidueMNK>
    CUTLASS_DEVICE void operator()(ProblemShapeMNKL problem, BlockShapeMNK, BlockCoordMNKL blk_coord,
                                   const cute::Tensor<FrgEngine, FrgLayout>& acc, TiledMma tiled_mma, ResidueMNK,
                                   int thread_idx, char* smem) {
        using namespace cute;
        float* stage = reinterpret_cast<SharedStorage*>(smem)->x;
        cutlass::arch::NamedBarrier::sync(kThreads, cutlass::arch::ReservedNamedBarriers::EpilogueBarrier);  // last tile stored
        for_each_pair<kTileM, kTileN>(acc, tiled_mma, thread_idx, [&](float x0, float x1, int r, int c) {
            *reinterpret_cast<float2*>(stage + r * kPitch + c) = make_float2(x0, x1);
        });
        cutlass::arch::NamedBarrier::sync(kThreads, cutlass::arch::ReservedNamedBarriers::EpilogueBarrier);

        const int64_t m = get<0>(problem), n = get<1>(problem);
        const int64_t row0 = static_cast<int64_t>(get<0>(blk_coord)) * kTileM;
        const int64_t col0 = static_cast<int64_t>(get<1>(blk_coord)) * kTileN;
        const int half = params_.head_dim / 2;
        CUTLASS_PRAGMA_UNROLL
        for (int it = 0; it < kTileM * kChunksPerRow / kThreads; ++it) {
            const int piece = it * kThreads + thread_idx;
            const int r = piece / kChunksPerRow, c = piece % kChunksPerRow * kVec;
            const int64_t row = row0 + r, col = col0 + c;
            if (row >= m || col >= n) continue;
            const float* x = stage + r * kPitch + c;
            float v[kVec];
            *reinterpret_cast<float4*>(v) = *reinterpret_cast<const float4*>(x);
            *reinterpret_cast<float4*>(v + 4) = *reinterpret_cast<const float4*>(x + 4);
            if (col < params_.rot_cols) {
                const int e = static_cast<int>(col) & (params_.head_dim - 1);  // column within its head
                const bool first = e < half;
                const float* y = x + (first ? half : -half);
                float u[kVec];
                *reinterpret_cast<float4*>(u) = *reinterpret_cast<const float4*>(y);
                *reinterpret_cast<float4*>(u + 4) = *reinterpret_cast<const float4*>(y + 4);
                const int64_t at = row % params_.cos_rows * params_.head_dim + e;
                alignas(16) T cs[kVec], sn[kVec];
                *reinterpret_cast<uint4*>(cs) = __ldg(reinterpret_cast<const uint4*>(params_.cos + at));
                *reinterpret_cast<uint4*>(sn) = __ldg(reinterpret_cast<const uint4*>(params_.sin + at));
                CUTLASS_PRAGMA_UNROLL
                for (int j = 0; j < kVec; ++j) {
                    const float s = static_cast<float>(sn[j]);
                    v[j] = v[j] * static_cast<float>(cs[j]) + (first ? -u[j] : u[j]) * s;
                }
            }
            alignas(16) T out[kVec];
            CUTLASS_PRAGMA_UNROLL
            for (int j = 0; j < kVec; ++j) out[j] = T(v[j]);
            *reinterpret_cast<uint4*>(params_.d + row * params_.ld + col) = *reinterpret_cast<const uint4*>(out);
        }
    }

private:
    Params params_;
};

static_assert(kGemmRotaryConfigs == kPingpongConfigs, "gemm_rotary: the ping-pong shapes are its configs");

// T: cutlass::half_t or cutlass::bfloat16_t; Cfg: a FusedGemmShape.
template <class T, class Cfg> struct GemmRotaryKernel : OwnEpilogueGemm<T, Cfg, RotaryEpilogue> {
    using Kernel = typename GemmRotaryKernel::Kernel;
    using Device = typename GemmRotaryKernel::Device;
    using EpilogueOp = typename GemmRotaryKernel::EpilogueOp;

    static typename Device::Arguments arguments(const GemmRotaryArgs& a) {
        const int m = static_cast<int>(a.m), n = static_cast<int>(a.n), k = static_cast<int>(a.k);
        const auto sa = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, cute::make_shape(m, k, 1));
        const auto sb = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, cute::make_shape(n, k, 1));
        typename EpilogueOp::Arguments e;
        e.d = static_cast<T*>(a.d);
        e.ld = a.ldd;
        e.rot_cols = a.rot_cols;
        e.head_dim = a.head_dim;
        e.cos_rows = a.cos_rows;
        e.cos = static_cast<const T*>(a.cos);
        e.sin = static_cast<const T*>(a.sin);
        return {cutlass::gemm::GemmUniversalMode::kGemm,
                {m, n, k, 1},
                {static_cast<const T*>(a.a), sa, static_cast<const T*>(a.b), sb},
                e};
    }
};

template <ElemType E>
std::unique_ptr<FusedGemm> RotaryInstances<E>::prepare(const GemmRotaryArgs& a, int config, cudaStream_t stream,
                                                       std::string& why) {
    using T = std::conditional_t<E == ElemType::f16, cutlass::half_t, cutlass::bfloat16_t>;
    return prepare_pingpong<GemmRotaryKernel, T>(a, config, stream, why);
}

}  // namespace stof::kernels::gemm
