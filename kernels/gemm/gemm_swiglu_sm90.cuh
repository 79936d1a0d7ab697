// The Hopper GEMM + SwiGLU (stof/kernels/gemm_swiglu.hpp) as CUTLASS kernels: TMA loads into
// a multi-stage shared-memory ring, wgmma with both operands in shared memory, a producer
// warpgroup and two consumer warpgroups, each on a tile of its own in turn (ping-pong),
// persistent CTAs, and SwigluEpilogue. Compiled for sm_90a alone (gemm_swiglu_f16.cu,
// gemm_swiglu_bf16.cu).
//
// Layouts: A [m, k] row-major (K-major), B [k, 2n] row-major (N-major: wgmma reads it
// transposed) with gate and up columns alternating, D [m, n] row-major.
#pragma once

#include "fused_epilogue.cuh"
#include "gemm_swiglu_instances.hpp"

#include "cute/tensor.hpp"
#include "cutlass/arch/barrier.h"
#include "cutlass/cutlass.h"
#include "cutlass/util/packed_stride.hpp"

#include <cuda_runtime.h>

#include <cstdint>

namespace stof::kernels::gemm {

// silu(g) · u in fp32: g · u / (1 + e^(−g)); 0 where e^(−g) overflows.
__device__ __forceinline__ float swiglu(float g, float u) { return g * u * __frcp_rn(1.f + __expf(-g)); }

// The epilogue of a tile of kTileM rows and kTileN columns of b: an accumulator
// pair (column 2j, column 2j + 1) of a row is (gate, up) of d's column j. silu(gate) · up goes
// to a kTileM × kTileN/2 staging tile in shared memory, then to d in 16-byte pieces of rows.
// The kernel runs it through CUTLASS's Sm90TmaWarpSpecializedAdapter (as its DefaultEpilogue),
// called by the kThreads threads that computed the tile (both consumer warpgroups of a
// cooperative kernel, one of a ping-pong kernel, whose epilogues run one after the other)
// with their own accumulators.
template <class T, class Tile, int Threads> class SwigluEpilogue : public OwnEpilogue<T> {
public:
    static constexpr int kTileM = cute::size<0>(Tile{});
    static constexpr int kTileN = cute::size<1>(Tile{});  // b's columns
    static constexpr int kOutN = kTileN / 2;              // d's columns
    static constexpr int kThreads = Threads;
    static constexpr int kVec = 16 / static_cast<int>(sizeof(T));
    static constexpr int kPitch = kOutN + kVec;  // staging row pitch: consecutive rows 4 banks apart

    struct SharedStorage {
        alignas(128) T out[kTileM * kPitch];
    };
    using TensorStorage = SharedStorage;

    struct Arguments {
        T* d = nullptr;  // [m, n]
        int64_t ld = 0;  // d's row pitch in elements
    };
    using Params = Arguments;

    template <class ProblemShape> static bool can_implement(const ProblemShape& shape, const Arguments& a) {
        return a.d && cute::get<1>(shape) % (2 * kVec) == 0 && reinterpret_cast<uintptr_t>(a.d) % 16 == 0 && a.ld % kVec == 0 &&
               a.ld >= cute::get<1>(shape) / 2;
    }

    CUTLASS_HOST_DEVICE explicit SwigluEpilogue(const Params& p, const SharedStorage& = SharedStorage()) : params_(p) {}

    template <class ProblemShapeMNKL, class BlockShapeMNK, class BlockCoordMNKL, class FrgEngine, class FrgLayout,
              class TiledMma, class ResidueMNK>
    CUTLASS_DEVICE void operator()(ProblemShapeMNKL problem, BlockShapeMNK, BlockCoordMNKL blk_coord,
                                   const cute::Tensor<FrgEngine, FrgLayout>& acc, TiledMma tiled_mma, ResidueMNK,
                                   int thread_idx, char* smem) {
        using namespace cute;
        T* stage = reinterpret_cast<SharedStorage*>(smem)->out;
        cutlass::arch::NamedBarrier::sync(kThreads, cutlass::arch::ReservedNamedBarriers::EpilogueBarrier);  // last tile stored
        for_each_pair<kTileM, kTileN>(acc, tiled_mma, thread_idx, [&](float gate, float up, int r, int c) {
            stage[r * kPitch + c / 2] = T(swiglu(gate, up));
        });
        cutlass::arch::NamedBarrier::sync(kThreads, cutlass::arch::ReservedNamedBarriers::EpilogueBarrier);

        const int64_t row0 = static_cast<int64_t>(get<0>(blk_coord)) * kTileM;
        const int64_t col0 = static_cast<int64_t>(get<1>(blk_coord)) * kOutN;
        store_staged<kTileM, kOutN, kPitch, kThreads>(stage, params_.d, params_.ld, row0, col0, get<0>(problem),
                                                      get<1>(problem) / 2, thread_idx);
    }

private:
    Params params_;
};

static_assert(kGemmSwigluConfigs == kPingpongConfigs, "gemm_swiglu: the ping-pong shapes are its configs");

// T: cutlass::half_t or cutlass::bfloat16_t; Cfg: a FusedGemmShape.
template <class T, class Cfg> struct GemmSwigluKernel : OwnEpilogueGemm<T, Cfg, SwigluEpilogue> {
    using Kernel = typename GemmSwigluKernel::Kernel;
    using Device = typename GemmSwigluKernel::Device;

    static typename Device::Arguments arguments(const GemmSwigluArgs& a) {
        const int m = static_cast<int>(a.m), n2 = static_cast<int>(2 * a.n), k = static_cast<int>(a.k);
        const auto sa = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, cute::make_shape(m, k, 1));
        const auto sb = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, cute::make_shape(n2, k, 1));
        return {cutlass::gemm::GemmUniversalMode::kGemm,
                {m, n2, k, 1},
                {static_cast<const T*>(a.a), sa, static_cast<const T*>(a.b), sb},
                {static_cast<T*>(a.d), a.n}};
    }
};

template <ElemType E>
std::unique_ptr<FusedGemm> SwigluInstances<E>::prepare(const GemmSwigluArgs& a, int config, cudaStream_t stream,
                                                       std::string& why) {
    using T = std::conditional_t<E == ElemType::f16, cutlass::half_t, cutlass::bfloat16_t>;
    return prepare_pingpong<GemmSwigluKernel, T>(a, config, stream, why);
}

}  // namespace stof::kernels::gemm
