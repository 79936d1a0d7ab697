// Row-wise sparse attention (very sparse rows, element-sparse masks, short sequences).
//
// One warp per query row (b, h, i), kRowWiseWarps independent warps a CTA (consecutive rows of
// one (b, h), which share K/V lines in L1 where their keys overlap), no block-wide
// synchronisation. The warp reads its row's listed tiles 32 at a time, lane l tile l's 64-bit
// keep word (all in-range columns of a full tile, else the row's bytes of the 8x8 bitmaps, ANDed
// with key validity and the seq_k limit), then appends each tile's kept key indices to a ring in
// its own shared memory. The work is proportional to the kept keys: every
// BATCH of them is gathered and computed at once, KPS keys side by side in groups of LPK lanes
// (lane = slot * LPK + c holds the 16-byte chunks c, c + LPK, ... of its slot's K, V and O rows):
//   scores  the group's chunk products, reduced over its LPK lanes (fp32, q pre-scaled into the
//           log2 domain);
//   softmax one online update per batch (warp max, exp2);
//   PV      each group accumulates p * V of its own keys; the KPS partial sums of O and of the
//           row sum are added across groups once, at the end.
// The K and V rows of a batch are loaded together (2 * U * CPL 16-byte loads in flight a lane).
#pragma once

#include "block_wise.cuh"  // ElemOf
#include "mma.cuh"
#include "params.hpp"

#include <cuda_runtime.h>

namespace stof::kernels::attn {

constexpr int kRowWiseWarps = 8;

template <int D> struct RowWiseTraits {
    static_assert(kIsAttentionHeadDim<D>, "row-wise attention: head_dim must be one of STOF_ATTENTION_HEAD_DIMS");
    static_assert(D % 8 == 0, "row-wise attention: a row is whole 16-byte chunks");
    static constexpr int CH = D / 8;                  // 16-byte chunks of a row
    static constexpr int LPK = CH < 8 ? CH : 8;       // lanes per key
    static constexpr int KPS = 32 / LPK;              // keys side by side (lane groups)
    static constexpr int CPL = (CH + LPK - 1) / LPK;  // chunks per lane
    static constexpr int BATCH = CPL == 1 ? 8 : 4;    // keys per softmax update
    static constexpr int U = BATCH / KPS;             // keys per lane group and batch
    static constexpr int RING = 128;                  // kept key indices a warp holds
    static_assert(32 % LPK == 0 && (LPK & (LPK - 1)) == 0, "row-wise attention: lane groups split the warp evenly");
    static_assert(BATCH % KPS == 0 && U >= 1, "row-wise attention: a batch is whole steps");
    static_assert(RING >= BATCH - 1 + 64 && (RING & (RING - 1)) == 0,
                  "row-wise attention: the ring holds a batch's remainder and one tile's keys");
    // Three CTAs a multiprocessor (80 registers a thread): the kernel is latency-bound on sparse
    // rows, where 24 warps with half the batch measured up to 1.5x 16 warps with twice it (median
    // 1.10x; 0.63x on dense rows at head dim 128; docs/PERF.md).
    static constexpr int MIN_BLOCKS = 3;
};

// Eight 16-bit elements (one 16-byte chunk) -> floats.
template <typename T> __device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int u = 0; u < 4; ++u) {
        const float2 x = unpack2<T>(w[u]);
        f[2 * u] = x.x;
        f[2 * u + 1] = x.y;
    }
}

template <typename T, int D>
__global__ void __launch_bounds__(kRowWiseWarps * 32, RowWiseTraits<D>::MIN_BLOCKS) row_wise_kernel(const AttnParams p) {
    using Tr = RowWiseTraits<D>;
    constexpr int CH = Tr::CH, LPK = Tr::LPK, KPS = Tr::KPS, CPL = Tr::CPL, U = Tr::U, RING = Tr::RING;

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int slot = lane / LPK, c = lane % LPK;
    const int64_t gw = static_cast<int64_t>(blockIdx.x) * kRowWiseWarps + warp;
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

    __shared__ int32_t ring_smem[kRowWiseWarps][RING];  // kept key indices, [head, tail) pending
    int32_t* ring = ring_smem[warp];

    // The lane's chunks of q, times scale * log2(e).
    float q[CPL][8];
    {
        const uint4* qr = reinterpret_cast<const uint4*>(static_cast<const T*>(p.q) + b * p.q_sb + h * p.q_sh + i * p.q_ss);
#pragma unroll
        for (int cc = 0; cc < CPL; ++cc) {
            const int ch = c + cc * LPK;
            unpack8<T>(ch < CH ? __ldg(qr + ch) : make_uint4(0, 0, 0, 0), q[cc]);
#pragma unroll
            for (int e = 0; e < 8; ++e) q[cc][e] *= p.scale_log2;
        }
    }

    float acc[CPL][8];
#pragma unroll
    for (int cc = 0; cc < CPL; ++cc)
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[cc][e] = 0.f;
    float m = -INFINITY, lsum = 0.f;  // m: warp-uniform; lsum: this lane group's keys
    uint32_t head = 0, tail = 0;      // warp-uniform ring counters

    // Scores, softmax update and PV of the n (1..BATCH) keys at ring[head, head + n).
    auto run_batch = [&](int n) {
        int key[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int idx = u * KPS + slot;
            key[u] = idx < n ? ring[(head + idx) & (RING - 1)] : -1;
        }
        uint4 kv[U][CPL], vv[U][CPL];
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int cc = 0; cc < CPL; ++cc) {
                const int ch = c + cc * LPK;
                const bool ok = key[u] >= 0 && ch < CH;
                kv[u][cc] = ok ? __ldg(reinterpret_cast<const uint4*>(kg + static_cast<int64_t>(key[u]) * p.k_ss) + ch)
                               : make_uint4(0, 0, 0, 0);
                vv[u][cc] = ok ? __ldg(reinterpret_cast<const uint4*>(vg + static_cast<int64_t>(key[u]) * p.v_ss) + ch)
                               : make_uint4(0, 0, 0, 0);
            }
        float s[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            float d0 = 0.f, d1 = 0.f;
#pragma unroll
            for (int cc = 0; cc < CPL; ++cc) {
                float kf[8];
                unpack8<T>(kv[u][cc], kf);
#pragma unroll
                for (int e = 0; e < 8; e += 2) {
                    d0 = fmaf(q[cc][e], kf[e], d0);
                    d1 = fmaf(q[cc][e + 1], kf[e + 1], d1);
                }
            }
            float d = d0 + d1;
#pragma unroll
            for (int off = LPK / 2; off > 0; off >>= 1) d += __shfl_xor_sync(0xffffffffu, d, off);
            if (key[u] >= 0 && bias_row) d += load_elem(bias_row + key[u]) * kLog2e;
            s[u] = key[u] >= 0 ? d : -INFINITY;
        }
        float mx = s[0];
#pragma unroll
        for (int u = 1; u < U; ++u) mx = fmaxf(mx, s[u]);
#pragma unroll
        for (int off = LPK; off < 32; off <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
        const float m_new = fmaxf(m, mx);
        const float base = m_new == -INFINITY ? 0.f : m_new;
        const float alpha = exp2_approx(m - base);
        m = m_new;
        lsum *= alpha;
#pragma unroll
        for (int cc = 0; cc < CPL; ++cc)
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[cc][e] *= alpha;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const float pr = exp2_approx(s[u] - base);
            lsum += pr;
#pragma unroll
            for (int cc = 0; cc < CPL; ++cc) {
                float vf[8];
                unpack8<T>(vv[u][cc], vf);
#pragma unroll
                for (int e = 0; e < 8; ++e) acc[cc][e] = fmaf(pr, vf[e], acc[cc][e]);
            }
        }
        head += n;
    };

    const int pat = (p.mask_batch == 1 ? 0 : b) * p.mask_heads + (p.mask_heads == 1 ? 0 : h);
    const int tr = i / p.tile_m, r = i % p.tile_m;
    const int32_t* rp = p.row_ptr + pat * (p.tile_rows + 1) + tr;
    const int t_end = __ldg(rp + 1);
    const uint32_t below = (1u << lane) - 1u;  // lanes under this one
    // The row's tiles 32 at a time: lane l reads tile t0 + l's column, bitmap (byte r % 8 of each of
    // the 8 words of its inner row r / 8: bit 8m + c is column 8m + c) and key validity, then
    // the warp appends each tile's kept keys in turn.
    for (int t0 = __ldg(rp); t0 < t_end; t0 += 32) {
        const int t = t0 + lane;
        int my_col = 0;
        unsigned long long my_keep = 0;
        if (t < t_end) {
            my_col = __ldg(p.col_idx + t);
            const int bm = __ldg(p.bitmap_idx + t);
            my_keep = ~0ull;
            if (bm >= 0) {
                const unsigned long long* w = bitmaps + static_cast<int64_t>(bm) * p.words_per_tile + (r >> 3) * 8;
                my_keep = 0;
#pragma unroll
                for (int m = 0; m < 8; ++m) my_keep |= ((__ldg(w + m) >> (8 * (r & 7))) & 0xffull) << (8 * m);
            }
            if (kv_row) my_keep &= __ldg(kv_row + my_col);
            const int rem = p.seq_k - my_col * 64;
            if (rem < 64) my_keep &= (1ull << rem) - 1;
        }
        const int n_tiles = min(32, t_end - t0);
        for (int j = 0; j < n_tiles; ++j) {
            const uint32_t lo = __shfl_sync(0xffffffffu, static_cast<uint32_t>(my_keep), j);
            const uint32_t hi = __shfl_sync(0xffffffffu, static_cast<uint32_t>(my_keep >> 32), j);
            if (!(lo | hi)) continue;  // warp-uniform
            const int col = __shfl_sync(0xffffffffu, my_col, j);
            __syncwarp();  // the last batch's reads of the ring are done
            if ((lo >> lane) & 1u) ring[(tail + __popc(lo & below)) & (RING - 1)] = col * 64 + lane;
            if ((hi >> lane) & 1u) ring[(tail + __popc(lo) + __popc(hi & below)) & (RING - 1)] = col * 64 + 32 + lane;
            tail += __popc(lo) + __popc(hi);
            __syncwarp();
            while (tail - head >= Tr::BATCH) run_batch(Tr::BATCH);
        }
    }
    if (tail != head) run_batch(static_cast<int>(tail - head));

#pragma unroll
    for (int off = LPK; off < 32; off <<= 1) {
        lsum += __shfl_xor_sync(0xffffffffu, lsum, off);
#pragma unroll
        for (int cc = 0; cc < CPL; ++cc)
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[cc][e] += __shfl_xor_sync(0xffffffffu, acc[cc][e], off);
    }
    if (slot != 0) return;
    const float inv = lsum > 0.f ? 1.f / lsum : 0.f;
    uint4* orow = reinterpret_cast<uint4*>(static_cast<T*>(p.o) + b * p.o_sb + h * p.o_sh + i * p.o_ss);
#pragma unroll
    for (int cc = 0; cc < CPL; ++cc) {
        const int ch = c + cc * LPK;
        if (ch >= CH) continue;
        const float* a = acc[cc];
        orow[ch] = make_uint4(pack2<T>(a[0] * inv, a[1] * inv), pack2<T>(a[2] * inv, a[3] * inv),
                              pack2<T>(a[4] * inv, a[5] * inv), pack2<T>(a[6] * inv, a[7] * inv));
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
