// Row-wise sparse attention (very sparse rows, short sequences).
//
// One warp per query row (b, h, i), 4 independent warps a CTA, no block-wide
// synchronisation; each warp keeps its query row in its own D * 2 bytes of shared memory. The warp walks the row's listed tiles; per tile
// it builds the row's 64-bit keep word (all in-range columns of a full tile, else the
// row's bits of the 8x8 bitmaps, gathered by two ballots), ANDs key validity and the
// seq_k limit, and handles each 32-column half that keeps anything:
//   scores  lane c computes q . K[j0 + c] for a kept column c (fp32; q read by broadcast);
//   softmax warp max / exp2 online update (log2 domain), per-lane partial sums;
//   PV      for each kept column, in groups of 8 loads in flight, the lanes accumulate
//           p_c * V[j0 + c, lane's D/32 elements].
#pragma once

#include "block_wise.cuh"  // ElemOf
#include "mma.cuh"
#include "params.hpp"

#include <cuda_runtime.h>

namespace stof::kernels::attn {

constexpr int kRowWiseWarps = 4;

// A lane's slice of a row of V and O: 1 element (half a word), 2 (one word) or 4 (two
// words); D / PER_LANE lanes hold one (all 32, except for D = 80 and 96).
template <int D> struct RowSlice { using type = uint2; };
template <> struct RowSlice<32> { using type = unsigned short; };
template <> struct RowSlice<64> { using type = uint32_t; };

template <typename T, int D> __global__ void __launch_bounds__(kRowWiseWarps * 32, 6) row_wise_kernel(const AttnParams p) {
    static_assert(kIsAttentionHeadDim<D>, "row-wise attention: head_dim must be one of STOF_ATTENTION_HEAD_DIMS");
    using Slice = typename RowSlice<D>::type;
    constexpr int NV = D / 8;                                      // 16-byte vectors per row
    constexpr int PER_LANE = static_cast<int>(sizeof(Slice)) / 2;  // output elements per lane
    constexpr int LANES = D / PER_LANE;                            // lanes holding a slice
    const bool has_slice = (threadIdx.x & 31) < LANES;
    constexpr int GROUP = 8;  // V rows in flight

    const int lane = threadIdx.x & 31;
    const int64_t gw = static_cast<int64_t>(blockIdx.x) * kRowWiseWarps + (threadIdx.x >> 5);
    if (gw >= static_cast<int64_t>(p.batch) * p.heads * p.seq_q) return;  // whole warp
    const int i = static_cast<int>(gw % p.seq_q);
    const int64_t bh = gw / p.seq_q;
    const int h = static_cast<int>(bh % p.heads), b = static_cast<int>(bh / p.heads);

    const T* kg = static_cast<const T*>(p.k) + b * p.k_sb + (h / p.group) * p.k_sh;
    const T* vg = static_cast<const T*>(p.v) + b * p.v_sb + (h / p.group) * p.v_sh;
    const T* bias_row = p.bias ? static_cast<const T*>(p.bias) + h * p.bias_sh + i * p.bias_ss : nullptr;
    const unsigned long long* kv_row =
        p.key_valid ? reinterpret_cast<const unsigned long long*>(p.key_valid) + static_cast<int64_t>(b) * p.kv_words : nullptr;
    const unsigned long long* bitmaps = reinterpret_cast<const unsigned long long*>(p.bitmaps);

    __shared__ uint4 q_smem[kRowWiseWarps][NV];  // the query row of each warp
    const uint4* qv = q_smem[threadIdx.x >> 5];
    if (lane < NV) {
        const uint4* qr = reinterpret_cast<const uint4*>(static_cast<const T*>(p.q) + b * p.q_sb + h * p.q_sh + i * p.q_ss);
        q_smem[threadIdx.x >> 5][lane] = __ldg(qr + lane);
    }
    __syncwarp();

    float acc[PER_LANE];
#pragma unroll
    for (int e = 0; e < PER_LANE; ++e) acc[e] = 0.f;
    float m = -INFINITY, lsum = 0.f;

    const int pat = (p.mask_batch == 1 ? 0 : b) * p.mask_heads + (p.mask_heads == 1 ? 0 : h);
    const int tr = i / p.tile_m, r = i % p.tile_m;
    const int32_t* rp = p.row_ptr + pat * (p.tile_rows + 1) + tr;
    const int t_end = __ldg(rp + 1);
    for (int t = __ldg(rp); t < t_end; ++t) {
        const int col = __ldg(p.col_idx + t), bm = __ldg(p.bitmap_idx + t);
        unsigned long long keep = ~0ull;
        if (bm >= 0) {
            const unsigned long long* w = bitmaps + static_cast<int64_t>(bm) * p.words_per_tile + (r >> 3) * 8;
            const int sh = (r & 7) * 8 + (lane & 7);
            const uint32_t lo = static_cast<uint32_t>(__ldg(w + (lane >> 3)) >> sh) & 1u;
            const uint32_t hi = static_cast<uint32_t>(__ldg(w + 4 + (lane >> 3)) >> sh) & 1u;
            keep = static_cast<unsigned long long>(__ballot_sync(0xffffffffu, lo)) |
                   (static_cast<unsigned long long>(__ballot_sync(0xffffffffu, hi)) << 32);
        }
        if (kv_row) keep &= __ldg(kv_row + col);
        const int rem = p.seq_k - col * 64;
        if (rem < 64) keep &= (1ull << rem) - 1;

#pragma unroll 1
        for (int hf = 0; hf < 2; ++hf) {
            uint32_t bits = static_cast<uint32_t>(keep >> (32 * hf));
            if (!bits) continue;
            const int j0 = col * 64 + 32 * hf;
            float sc = -INFINITY;
            if ((bits >> lane) & 1u) {
                const uint4* kr = reinterpret_cast<const uint4*>(kg + static_cast<int64_t>(j0 + lane) * p.k_ss);
                float d0 = 0.f, d1 = 0.f;
#pragma unroll 8
                for (int v = 0; v < NV; ++v) {
                    const uint4 kv = __ldg(kr + v);
                    const uint4 qq = qv[v];
                    const uint32_t qw[4] = {qq.x, qq.y, qq.z, qq.w};
                    const uint32_t kw[4] = {kv.x, kv.y, kv.z, kv.w};
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        const float2 a = unpack2<T>(qw[u]), c = unpack2<T>(kw[u]);
                        d0 = fmaf(a.x, c.x, d0);
                        d1 = fmaf(a.y, c.y, d1);
                    }
                }
                sc = (d0 + d1) * p.scale_log2;
                if (bias_row) sc += load_elem(bias_row + j0 + lane) * kLog2e;
            }
            float mx = sc;
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            const float m_new = fmaxf(m, mx);
            const float base = m_new == -INFINITY ? 0.f : m_new;
            const float alpha = exp2_approx(m - base);
            const float pr = exp2_approx(sc - base);
            m = m_new;
            lsum = lsum * alpha + pr;
#pragma unroll
            for (int e = 0; e < PER_LANE; ++e) acc[e] *= alpha;

            while (bits) {  // warp-uniform
                int kc[GROUP];
                float pk[GROUP];
                Slice vv[GROUP]{};
#pragma unroll
                for (int u = 0; u < GROUP; ++u) {
                    kc[u] = bits ? __ffs(bits) - 1 : -1;
                    bits &= bits - 1u;
                }
#pragma unroll
                for (int u = 0; u < GROUP; ++u) pk[u] = __shfl_sync(0xffffffffu, pr, kc[u] < 0 ? 0 : kc[u]);
#pragma unroll
                for (int u = 0; u < GROUP; ++u)
                    if (kc[u] >= 0 && has_slice)
                        vv[u] = __ldg(reinterpret_cast<const Slice*>(vg + static_cast<int64_t>(j0 + kc[u]) * p.v_ss) + lane);
#pragma unroll
                for (int u = 0; u < GROUP; ++u) {
                    if (kc[u] < 0) continue;
                    if constexpr (PER_LANE == 1) {
                        acc[0] = fmaf(pk[u], unpack2<T>(vv[u]).x, acc[0]);
                    } else if constexpr (PER_LANE == 2) {
                        const float2 x = unpack2<T>(vv[u]);
                        acc[0] = fmaf(pk[u], x.x, acc[0]);
                        acc[1] = fmaf(pk[u], x.y, acc[1]);
                    } else {
                        const float2 x = unpack2<T>(vv[u].x), y = unpack2<T>(vv[u].y);
                        acc[0] = fmaf(pk[u], x.x, acc[0]);
                        acc[1] = fmaf(pk[u], x.y, acc[1]);
                        acc[2] = fmaf(pk[u], y.x, acc[2]);
                        acc[3] = fmaf(pk[u], y.y, acc[3]);
                    }
                }
            }
        }
    }

#pragma unroll
    for (int off = 16; off > 0; off >>= 1) lsum += __shfl_xor_sync(0xffffffffu, lsum, off);
    const float inv = lsum > 0.f ? 1.f / lsum : 0.f;
    T* orow = static_cast<T*>(p.o) + b * p.o_sb + h * p.o_sh + i * p.o_ss;
    if (!has_slice) return;
    if constexpr (PER_LANE == 1) {
        reinterpret_cast<unsigned short*>(orow)[lane] = static_cast<unsigned short>(pack2<T>(acc[0] * inv, 0.f));
    } else if constexpr (PER_LANE == 2) {
        reinterpret_cast<uint32_t*>(orow)[lane] = pack2<T>(acc[0] * inv, acc[1] * inv);
    } else {
        reinterpret_cast<uint2*>(orow)[lane] = make_uint2(pack2<T>(acc[0] * inv, acc[1] * inv),
                                                          pack2<T>(acc[2] * inv, acc[3] * inv));
    }
}

template <ElemType E, int D> cudaError_t launch_row_wise(const AttnParams& p, cudaStream_t stream) {
    using T = typename ElemOf<E>::type;
    const int64_t rows = static_cast<int64_t>(p.batch) * p.heads * p.seq_q;
    const int64_t blocks = (rows + kRowWiseWarps - 1) / kRowWiseWarps;
    if (blocks > 0x7fffffff) return cudaErrorInvalidValue;
    row_wise_kernel<T, D><<<static_cast<unsigned>(blocks), kRowWiseWarps * 32, 0, stream>>>(p);
    return cudaGetLastError();
}

}  // namespace stof::kernels::attn
