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

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace stof::kernels::gemm {

// The epilogue of a tile of kTileM rows and kTileN columns. A tile holds whole heads (its
// columns start at a multiple of kTileN, a multiple of head_dim), and a thread's accumulators
// of a row hold each of its columns together with the column head_dim / 2 away: the wgmma
// fragment ((2, 2, kTileN / 8), M blocks, 1) is (column pair, row + 8, column block of 8), so
// column block j's partner is block j ^ (head_dim / 16). Each thread rotates its pairs in
// registers (fp32, no rounding before the rotation) with that position's cos and sin, rounds
// them into a kTileM × kTileN staging tile in shared memory, and the tile goes to d in 16-byte
// pieces of rows (store_staged). Run through CUTLASS's Sm90TmaWarpSpecializedAdapter by the
// kThreads threads that computed the tile; the ping-pong kernel runs its consumers' epilogues
// one after the other, so they share the staging tile.
template <class T, class Tile, int Threads> class RotaryEpilogue : public OwnEpilogue<T> {
public:
    static constexpr int kTileM = cute::size<0>(Tile{});
    static constexpr int kTileN = cute::size<1>(Tile{});
    static constexpr int kThreads = Threads;
    static constexpr int kVec = 16 / static_cast<int>(sizeof(T));
    static constexpr int kPitch = kTileN + kVec;  // staging row pitch: a warp's 4-byte stores of 8 rows in distinct banks
    static_assert(sizeof(T) == 2, "RotaryEpilogue: 16-bit elements");
    static_assert(kTileN % 128 == 0, "RotaryEpilogue: a tile holds whole heads of 64 or 128 columns");

    struct SharedStorage {
        alignas(128) T out[kTileM * kPitch];
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
        T* stage = reinterpret_cast<SharedStorage*>(smem)->out;
        const int64_t row0 = static_cast<int64_t>(get<0>(blk_coord)) * kTileM;
        const int64_t col0 = static_cast<int64_t>(get<1>(blk_coord)) * kTileN;
        const Tensor coord =
            tiled_mma.get_thread_slice(thread_idx).partition_C(make_identity_tensor(make_shape(Int<kTileM>{}, Int<kTileN>{})));
        cutlass::arch::NamedBarrier::sync(kThreads, cutlass::arch::ReservedNamedBarriers::EpilogueBarrier);  // last tile stored
        if (params_.head_dim == 64) rotate<64>(acc, coord, row0, col0, stage);
        else rotate<128>(acc, coord, row0, col0, stage);
        cutlass::arch::NamedBarrier::sync(kThreads, cutlass::arch::ReservedNamedBarriers::EpilogueBarrier);
        store_staged<kTileM, kTileN, kPitch, kThreads>(stage, params_.d, params_.ld, row0, col0, get<0>(problem),
                                                       get<1>(problem), thread_idx);
    }

private:
    // The tile's heads of HeadDim columns rotated where col0 + their first column < rot_cols,
    // the rest copied, into stage (row-major, pitch kPitch).
    template <int HeadDim, class Acc, class Coord>
    CUTLASS_DEVICE void rotate(const Acc& acc, const Coord& coord, int64_t row0, int64_t col0, T* stage) const {
        using namespace cute;
        static_assert(rank(Acc{}) == 3 && decltype(size<0, 0>(acc))::value == 2 && decltype(size<0, 1>(acc))::value == 2 &&
                          decltype(size<0, 2>(acc))::value == kTileN / 8 && decltype(size<2>(acc))::value == 1,
                      "RotaryEpilogue: the wgmma fragment ((2, 2, kTileN / 8), M blocks, 1) of a whole tile row");
        constexpr int kHalfBlocks = HeadDim / 16;  // column blocks of 8 in half a head
        using T2 = std::conditional_t<std::is_same_v<T, cutlass::half_t>, __half2, __nv_bfloat162>;
        CUTLASS_PRAGMA_UNROLL
        for (int mb = 0; mb < size<1>(acc); ++mb) {
            CUTLASS_PRAGMA_UNROLL
            for (int v1 = 0; v1 < 2; ++v1) {
                const auto at = [&](int j, int v0) { return make_coord(make_coord(v0, v1, j), mb, 0); };
                const int r = get<0>(coord(at(0, 0)));
                const int64_t p = (row0 + r) % params_.cos_rows;
                CUTLASS_PRAGMA_UNROLL
                for (int jj = 0; jj < kHalfBlocks; ++jj) {  // column pair e, e + 1 of the first half of each head
                    const int e = get<1>(coord(at(jj, 0)));
                    // This row's cos and sin at columns e, e + 1 and their partners, the same for
                    // every head of the tile: loaded once (cos may be null where nothing is rotated).
                    float2 c1{}, s1{}, c2{}, s2{};
                    if (col0 < params_.rot_cols) {
                        const T* cs = params_.cos + p * HeadDim + e;
                        const T* sn = params_.sin + p * HeadDim + e;
                        c1 = to_float2(*reinterpret_cast<const T2*>(cs));
                        s1 = to_float2(*reinterpret_cast<const T2*>(sn));
                        c2 = to_float2(*reinterpret_cast<const T2*>(cs + HeadDim / 2));
                        s2 = to_float2(*reinterpret_cast<const T2*>(sn + HeadDim / 2));
                    }
                    CUTLASS_PRAGMA_UNROLL
                    for (int head = 0; head < kTileN / HeadDim; ++head) {
                        const int j1 = head * 2 * kHalfBlocks + jj, j2 = j1 + kHalfBlocks;
                        float x1[2] = {acc(at(j1, 0)), acc(at(j1, 1))}, x2[2] = {acc(at(j2, 0)), acc(at(j2, 1))};
                        if (col0 + head * HeadDim < params_.rot_cols) {
                            const float y1[2] = {x1[0] * c1.x - x2[0] * s1.x, x1[1] * c1.y - x2[1] * s1.y};
                            const float y2[2] = {x2[0] * c2.x + x1[0] * s2.x, x2[1] * c2.y + x1[1] * s2.y};
                            x1[0] = y1[0], x1[1] = y1[1], x2[0] = y2[0], x2[1] = y2[1];
                        }
                        const int c = get<1>(coord(at(j1, 0)));
                        *reinterpret_cast<T2*>(stage + r * kPitch + c) = from_float2(x1[0], x1[1]);
                        *reinterpret_cast<T2*>(stage + r * kPitch + c + HeadDim / 2) = from_float2(x2[0], x2[1]);
                    }
                }
            }
        }
    }

    template <class T2> CUTLASS_DEVICE static float2 to_float2(T2 v) {
        if constexpr (std::is_same_v<T2, __half2>) return __half22float2(v);
        else return __bfloat1622float2(v);
    }
    CUTLASS_DEVICE static auto from_float2(float a, float b) {
        if constexpr (std::is_same_v<T, cutlass::half_t>) return __floats2half2_rn(a, b);
        else return __floats2bfloat162_rn(a, b);
    }

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
