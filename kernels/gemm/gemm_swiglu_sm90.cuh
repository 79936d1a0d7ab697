// The Hopper GEMM + SwiGLU (stof/kernels/gemm_swiglu.hpp) as CUTLASS kernels: TMA loads into
// a multi-stage shared-memory ring, wgmma with both operands in shared memory, a producer
// warpgroup and two consumer warpgroups (both on one tile, or each on its own tile in turn:
// ping-pong), persistent CTAs, and SwigluEpilogue. Compiled for sm_90a alone
// (gemm_swiglu_f16.cu, gemm_swiglu_bf16.cu).
//
// Layouts: A [m, k] row-major (K-major), B [k, 2n] row-major (N-major: wgmma reads it
// transposed) with gate and up columns alternating, D [m, n] row-major.
#pragma once

#include "gemm_swiglu_instances.hpp"
#include "prepared_cutlass_gemm.cuh"

#include "cute/tensor.hpp"
#include "cutlass/arch/barrier.h"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/detail.hpp"
#include "cutlass/epilogue/dispatch_policy.hpp"
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace stof::kernels::gemm {

// silu(g) · u in fp32: g · u / (1 + e^(−g)); 0 where e^(−g) overflows.
__device__ __forceinline__ float swiglu(float g, float u) { return g * u * __frcp_rn(1.f + __expf(-g)); }

// The epilogue of a cooperative tile of kTileM rows and kTileN columns of b: an accumulator
// pair (column 2j, column 2j + 1) of a row is (gate, up) of d's column j. silu(gate) · up goes
// to a kTileM × kTileN/2 staging tile in shared memory, then to d in 16-byte pieces of rows.
// The kernel runs it through CUTLASS's Sm90TmaWarpSpecializedAdapter (as its DefaultEpilogue),
// called by the kThreads threads that computed the tile (both consumer warpgroups of a
// cooperative kernel, one of a ping-pong kernel, whose epilogues run one after the other)
// with their own accumulators.
template <class T, class Tile, int Threads> class SwigluEpilogue {
public:
    static constexpr int kTileM = cute::size<0>(Tile{});
    static constexpr int kTileN = cute::size<1>(Tile{});  // b's columns
    static constexpr int kOutN = kTileN / 2;              // d's columns
    static constexpr int kThreads = Threads;
    static constexpr int kVec = 16 / static_cast<int>(sizeof(T));
    static constexpr int kPitch = kOutN + kVec;  // staging row pitch: consecutive rows 4 banks apart
    static constexpr int kChunksPerRow = kOutN / kVec;
    static_assert(kOutN % kVec == 0, "SwigluEpilogue: d's tile columns in 16-byte pieces");
    static_assert(kTileM * kChunksPerRow % kThreads == 0, "SwigluEpilogue: every thread stores as many pieces");

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

    struct SharedStorage {
        alignas(128) T out[kTileM * kPitch];
    };
    using TensorStorage = SharedStorage;

    struct Arguments {
        T* d = nullptr;  // [m, n]
        int64_t ld = 0;  // d's row pitch in elements
    };
    using Params = Arguments;

    template <class ProblemShape>
    static constexpr Params to_underlying_arguments(const ProblemShape&, const Arguments& a, void*) {
        return a;
    }
    template <class ProblemShape> static size_t get_workspace_size(const ProblemShape&, const Arguments&) { return 0; }
    template <class ProblemShape>
    static cutlass::Status initialize_workspace(const ProblemShape&, const Arguments&, void*, cudaStream_t,
                                                cutlass::CudaHostAdapter* = nullptr) {
        return cutlass::Status::kSuccess;
    }
    template <class ProblemShape> static bool can_implement(const ProblemShape& shape, const Arguments& a) {
        return a.d && cute::get<1>(shape) % (2 * kVec) == 0 && reinterpret_cast<uintptr_t>(a.d) % 16 == 0 && a.ld % kVec == 0 &&
               a.ld >= cute::get<1>(shape) / 2;
    }

    CUTLASS_HOST_DEVICE explicit SwigluEpilogue(const Params& p, const SharedStorage& = SharedStorage()) : params_(p) {}

    CUTLASS_DEVICE bool is_source_needed() { return false; }

    template <class ProblemShapeMNKL, class BlockShapeMNK, class BlockCoordMNKL, class FrgEngine, class FrgLayout,
              class TiledMma, class ResidueMNK>
    CUTLASS_DEVICE void operator()(ProblemShapeMNKL problem, BlockShapeMNK, BlockCoordMNKL blk_coord,
                                   const cute::Tensor<FrgEngine, FrgLayout>& acc, TiledMma tiled_mma, ResidueMNK,
                                   int thread_idx, char* smem) {
        using namespace cute;
        static_assert(is_static<FrgLayout>::value, "SwigluEpilogue: a static accumulator layout");
        // (row, column) within the tile of every accumulator this thread holds; the first mode
        // of a wgmma accumulator fragment pairs columns 2j and 2j + 1 of one row.
        const Tensor coord =
            tiled_mma.get_thread_slice(thread_idx).partition_C(make_identity_tensor(make_shape(Int<kTileM>{}, Int<kTileN>{})));
        static_assert(decltype(size(coord))::value == decltype(size(acc))::value,
                      "SwigluEpilogue: one coordinate an accumulator");
        static_assert(decltype(size<0, 0>(acc))::value == 2, "SwigluEpilogue: accumulators in column pairs");
        T* stage = reinterpret_cast<SharedStorage*>(smem)->out;

        cutlass::arch::NamedBarrier::sync(kThreads, cutlass::arch::ReservedNamedBarriers::EpilogueBarrier);  // last tile stored
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < size(acc); i += 2) {
            const int r = get<0>(coord(i)), c = get<1>(coord(i));
            stage[r * kPitch + c / 2] = T(swiglu(acc(i), acc(i + 1)));
        }
        cutlass::arch::NamedBarrier::sync(kThreads, cutlass::arch::ReservedNamedBarriers::EpilogueBarrier);

        const int64_t m = get<0>(problem), n = get<1>(problem) / 2;
        const int64_t row0 = static_cast<int64_t>(get<0>(blk_coord)) * kTileM;
        const int64_t col0 = static_cast<int64_t>(get<1>(blk_coord)) * kOutN;
        CUTLASS_PRAGMA_UNROLL
        for (int it = 0; it < kTileM * kChunksPerRow / kThreads; ++it) {
            const int piece = it * kThreads + thread_idx;
            const int r = piece / kChunksPerRow, c = piece % kChunksPerRow * kVec;
            if (row0 + r < m && col0 + c < n)
                *reinterpret_cast<uint4*>(params_.d + (row0 + r) * params_.ld + col0 +
                                          c) = *reinterpret_cast<const uint4*>(stage + r * kPitch + c);
        }
    }

private:
    Params params_;
};

// A kernel's shape: the CTA tile (rows, b's columns, k), the cluster, the mainloop schedule
// (KernelTmaWarpSpecializedCooperative: both consumers on one tile; ...Pingpong: one each).
template <class TileShape, class ClusterShape, class Schedule> struct SwigluShape {
    using Tile = TileShape;
    using Cluster = ClusterShape;
    using MainloopSchedule = Schedule;
    static constexpr int kEpilogueThreads = std::is_same_v<Schedule, cutlass::gemm::KernelTmaWarpSpecializedCooperative> ? 256
                                                                                                                         : 128;
};
// Ping-pong over 128 × 128 tiles (64 of d's columns) with and without 2 × 1 clusters, the two
// fastest of a sweep at LLaMA's gate|up shapes on the H200 (docs/PERF.md).
template <int Config> struct GemmSwigluConfig;
template <>
struct GemmSwigluConfig<0>
    : SwigluShape<cute::Shape<cute::_128, cute::_128, cute::_64>, cute::Shape<cute::_1, cute::_1, cute::_1>,
                  cutlass::gemm::KernelTmaWarpSpecializedPingpong> {};
template <>
struct GemmSwigluConfig<1>
    : SwigluShape<cute::Shape<cute::_128, cute::_128, cute::_64>, cute::Shape<cute::_2, cute::_1, cute::_1>,
                  cutlass::gemm::KernelTmaWarpSpecializedPingpong> {};
static_assert(kGemmSwigluConfigs == 2, "gemm_swiglu: one GemmSwigluConfig per config");

// T: cutlass::half_t or cutlass::bfloat16_t; Cfg: a SwigluShape.
template <class T, class Cfg> struct GemmSwigluKernel {
    static constexpr int kAlign = 8;  // elements per 16 bytes: TMA's alignment
    using Tile = typename Cfg::Tile;
    using Cluster = typename Cfg::Cluster;
    using EpilogueOp = SwigluEpilogue<T, Tile, Cfg::kEpilogueThreads>;
    using Epilogue = cutlass::epilogue::collective::detail::Sm90TmaWarpSpecializedAdapter<EpilogueOp>;
    using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, T, cutlass::layout::RowMajor, kAlign, T, cutlass::layout::RowMajor,
        kAlign, float, Tile, Cluster,
        cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename EpilogueOp::SharedStorage))>,
        typename Cfg::MainloopSchedule>::CollectiveOp;
    using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Mainloop, Epilogue>;
    using Device = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

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
    using K0 = GemmSwigluKernel<T, GemmSwigluConfig<0>>;
    using K1 = GemmSwigluKernel<T, GemmSwigluConfig<1>>;
    return config == 0 ? prepare_cutlass_gemm<typename K0::Device>(K0::arguments(a), stream, why)
                       : prepare_cutlass_gemm<typename K1::Device>(K1::arguments(a), stream, why);
}

}  // namespace stof::kernels::gemm
