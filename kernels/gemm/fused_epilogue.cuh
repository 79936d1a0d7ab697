// What the fused GEMMs with epilogues of their own (gemm_swiglu_sm90.cuh, gemm_rotary_sm90.cuh)
// share: the members CUTLASS's Sm90TmaWarpSpecializedAdapter asks of an epilogue beyond its
// Arguments, SharedStorage, can_implement and operator(); the walk over a thread's
// accumulators; the store of a staged tile; the tile shapes; the CUTLASS GEMM around such an epilogue and its preparation.
#pragma once

#include "prepared_cutlass_gemm.cuh"

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/detail.hpp"
#include "cutlass/epilogue/dispatch_policy.hpp"
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

namespace stof::kernels::gemm {

// Base of an epilogue E that stores d itself from the accumulators (no C operand, no
// workspace); E's Params are its Arguments.
template <class T> struct OwnEpilogue {
    using EpilogueSchedule = cutlass::epilogue::NoSmemWarpSpecialized;
    using DispatchPolicy = EpilogueSchedule;
    using ThreadEpilogueOp = cutlass::epilogue::thread::LinearCombination<T, 1, float, float>;  // types only
    using ElementOutput = T;
    using ElementAccumulator = float;
    using ElementCompute = float;
    using ElementScalar = float;
    using ElementC = T;
    using ElementD = T;
    using StrideC = cute::Stride<int64_t, cute::Int<1>, int64_t>;
    using StrideD = StrideC;
    using GmemTiledCopyC = void;
    using GmemTiledCopyD = void;

    template <class ProblemShape, class Arguments>
    static constexpr Arguments to_underlying_arguments(const ProblemShape&, const Arguments& a, void*) {
        return a;
    }
    template <class ProblemShape, class Arguments> static size_t get_workspace_size(const ProblemShape&, const Arguments&) {
        return 0;
    }
    template <class ProblemShape, class Arguments>
    static cutlass::Status initialize_workspace(const ProblemShape&, const Arguments&, void*, cudaStream_t,
                                                cutlass::CudaHostAdapter* = nullptr) {
        return cutlass::Status::kSuccess;
    }
    CUTLASS_DEVICE bool is_source_needed() { return false; }
};

// Calls f(acc(i), acc(i + 1), row, col) for every pair of accumulators this thread holds of a
// TileM × TileN tile: the first mode of a wgmma accumulator fragment pairs columns col and
// col + 1 (col even) of one row.
template <int TileM, int TileN, class Engine, class Layout, class TiledMma, class F>
CUTLASS_DEVICE void for_each_pair(const cute::Tensor<Engine, Layout>& acc, const TiledMma& tiled_mma, int thread_idx, F&& f) {
    using namespace cute;
    static_assert(is_static<Layout>::value, "for_each_pair: a static accumulator layout");
    const Tensor coord =
        tiled_mma.get_thread_slice(thread_idx).partition_C(make_identity_tensor(make_shape(Int<TileM>{}, Int<TileN>{})));
    static_assert(decltype(size(coord))::value == decltype(size(acc))::value, "for_each_pair: one coordinate an accumulator");
    static_assert(decltype(size<0, 0>(acc))::value == 2, "for_each_pair: accumulators in column pairs");
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < size(acc); i += 2) f(acc(i), acc(i + 1), get<0>(coord(i)), get<1>(coord(i)));
}

// Stores a TileM × TileN staging tile (row-major, pitch Pitch elements) at rows [row0, row0 +
// TileM) and columns [col0, col0 + TileN) of d [m, ld] row-major, in 16-byte pieces of rows
// (a row's pieces from consecutive threads), clipped to m rows and n columns (n and col0
// multiples of 16 bytes). Called by the Threads threads that staged the tile, after a barrier.
template <int TileM, int TileN, int Pitch, int Threads, class T>
CUTLASS_DEVICE void store_staged(const T* stage, T* d, int64_t ld, int64_t row0, int64_t col0, int64_t m, int64_t n,
                                 int thread_idx) {
    constexpr int kVec = 16 / static_cast<int>(sizeof(T));
    constexpr int kChunksPerRow = TileN / kVec;
    static_assert(TileN % kVec == 0 && Pitch % kVec == 0, "store_staged: rows in 16-byte pieces");
    static_assert(TileM * kChunksPerRow % Threads == 0, "store_staged: every thread stores as many pieces");
    CUTLASS_PRAGMA_UNROLL
    for (int it = 0; it < TileM * kChunksPerRow / Threads; ++it) {
        const int piece = it * Threads + thread_idx;
        const int r = piece / kChunksPerRow, c = piece % kChunksPerRow * kVec;
        if (row0 + r < m && col0 + c < n)
            *reinterpret_cast<uint4*>(d + (row0 + r) * ld + col0 + c) = *reinterpret_cast<const uint4*>(stage + r * Pitch + c);
    }
}

// A kernel's shape: the CTA tile (rows, b's columns, k), the cluster, the mainloop schedule
// (KernelTmaWarpSpecializedCooperative: both consumers on one tile; ...Pingpong: one each,
// their epilogues one after the other), the persistent tile scheduler's swizzle (tiles walked
// in bands of Swizzle tiles across the raster order, so concurrent CTAs share operand tiles in
// L2) and how many threads run an epilogue.
template <class TileShape, class ClusterShape, class Schedule, int Swizzle = 1> struct FusedGemmShape {
    static_assert(Swizzle == 1 || Swizzle == 2 || Swizzle == 4 || Swizzle == 8, "FusedGemmShape: CUTLASS's swizzles");
    using Tile = TileShape;
    using Cluster = ClusterShape;
    using MainloopSchedule = Schedule;
    static constexpr int kSwizzle = Swizzle;
    static constexpr int kEpilogueThreads = std::is_same_v<Schedule, cutlass::gemm::KernelTmaWarpSpecializedCooperative> ? 256
                                                                                                                         : 128;
};
// Ping-pong over 128 × 128 tiles, without clusters in bands of 4 tiles and with 2 × 1 clusters:
// the two fastest of sweeps of the SwiGLU kernel at LLaMA's gate|up shapes on the H200 and the
// H100 (docs/PERF.md; without the bands, 128 × 128 tiles are bound by L2 bandwidth on the H100).
using Pingpong128 = FusedGemmShape<cute::Shape<cute::_128, cute::_128, cute::_64>, cute::Shape<cute::_1, cute::_1, cute::_1>,
                                   cutlass::gemm::KernelTmaWarpSpecializedPingpong, 4>;
using Pingpong128Cluster2 =
    FusedGemmShape<cute::Shape<cute::_128, cute::_128, cute::_64>, cute::Shape<cute::_2, cute::_1, cute::_1>,
                   cutlass::gemm::KernelTmaWarpSpecializedPingpong>;

// The CUTLASS GEMM of shape Cfg (a FusedGemmShape) over A [m, k] and B [k, n] row-major of
// type T, fp32 sums, with the epilogue E<T, Tile, threads> (an OwnEpilogue); the shared
// memory E needs is carved out of the mainloop's stages.
template <class T, class Cfg, template <class, class, int> class E> struct OwnEpilogueGemm {
    static constexpr int kAlign = 8;  // elements per 16 bytes: TMA's alignment
    using EpilogueOp = E<T, typename Cfg::Tile, Cfg::kEpilogueThreads>;
    using Epilogue = cutlass::epilogue::collective::detail::Sm90TmaWarpSpecializedAdapter<EpilogueOp>;
    using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, T, cutlass::layout::RowMajor, kAlign, T, cutlass::layout::RowMajor,
        kAlign, float, typename Cfg::Tile, typename Cfg::Cluster,
        cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename EpilogueOp::SharedStorage))>,
        typename Cfg::MainloopSchedule>::CollectiveOp;
    using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Mainloop, Epilogue>;
    using Device = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
    using Shape = Cfg;
};

// K (an OwnEpilogueGemm with arguments(a)) prepared for `a`, its tiles walked in K::Shape's swizzle.
template <class K, class Args>
std::unique_ptr<FusedGemm> prepare_own_epilogue_gemm(const Args& a, cudaStream_t stream, std::string& why) {
    typename K::Device::Arguments args = K::arguments(a);
    args.scheduler.max_swizzle_size = K::Shape::kSwizzle;
    return prepare_cutlass_gemm<typename K::Device>(args, stream, why);
}

// Kernel<T, shape> (a GEMM with an own epilogue: Device, arguments(a)) at `config` of the
// ping-pong shapes (0: Pingpong128, 1: Pingpong128Cluster2), prepared for `a`.
inline constexpr int kPingpongConfigs = 2;
template <template <class, class> class Kernel, class T, class Args>
std::unique_ptr<FusedGemm> prepare_pingpong(const Args& a, int config, cudaStream_t stream, std::string& why) {
    return config == 0 ? prepare_own_epilogue_gemm<Kernel<T, Pingpong128>>(a, stream, why)
                       : prepare_own_epilogue_gemm<Kernel<T, Pingpong128Cluster2>>(a, stream, why);
}

}  // namespace stof::kernels::gemm
