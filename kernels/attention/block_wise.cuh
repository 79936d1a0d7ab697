// Block-wise sparse attention (the general kernel).
//
// One CTA per (block of BM query rows, head, batch); BM = 64 (4 warps) or 128 (8 warps),
// every warp owns 16 query rows and keeps its Q fragment in registers. The CTA walks
// the listed 64-column key tiles of its rows in ascending order: with BM = 128 over a
// 64-row mask it merges the two tile rows' lists and a warp skips a tile its own tile
// row does not list. K/V tiles (and the 8x8 bitmaps of partial tiles) come through
// shared memory by cp.async, double buffered: tile i+1 is fetched while tile i is
// computed, one barrier per tile. QK^T and PV run on mma.sync m16n8k16 with fp32
// accumulation; the online softmax works in the log2 domain (scale * log2 e folded in).
// Full tiles whose keys are all valid and in range do no mask work at all.
//
// Shared memory (SMEM_BYTES): [stage 0: K | V][stage 1: K | V][bitmaps: stage x half x 64 words].
// K, V and Q tiles are row-major with DP halves per row (D rounded up to 32, 64 or
// 128; chunks past D are never written or read), the 16-byte chunk c of row r
// stored at chunk c ^ swizzle(r) (conflict-free ldmatrix and cp.async). Q is staged in
// stage 1 before the loop, O in stage 0 after it.
#pragma once

#include "launch.cuh"
#include "mma.cuh"
#include "params.hpp"
#include "tile_list.cuh"

#include <climits>
#include <cuda_runtime.h>

namespace stof::kernels::attn {

template <int D, int BM> struct BlockWiseTraits {
    static_assert(kIsAttentionHeadDim<D>, "block-wise attention: head_dim must be one of STOF_ATTENTION_HEAD_DIMS");
    static_assert(BM == 64 || BM == 128, "block-wise attention: block_m must be 64 or 128");
    static constexpr int BN = 64;  // key columns per tile (mask tile_n)
    static constexpr int WARPS = BM / 16;
    static constexpr int THREADS = WARPS * 32;
    static constexpr int DP = D <= 32 ? 32 : D <= 64 ? 64 : 128;  // the row in shared memory
    static constexpr int CHUNKS = DP / 8;                         // 16-byte chunks per shared-memory row
    static constexpr int DCHUNKS = D / 8;                         // of which hold data
    static constexpr int ROW_BYTES = DP * 2;
    static constexpr int TILE_BYTES = BN * ROW_BYTES;   // one K or V tile
    static constexpr int STAGE_BYTES = 2 * TILE_BYTES;  // K then V
    static constexpr int BITMAP_HALF_BYTES = 64 * 8;    // 64 8x8 words: 64 rows x 64 columns
    static constexpr int BITMAP_OFFSET = 2 * STAGE_BYTES;
    static constexpr int SMEM_BYTES = 2 * STAGE_BYTES + 2 * 2 * BITMAP_HALF_BYTES;
    static constexpr int ROWS_PER_PASS = THREADS / CHUNKS;  // rows one cp.async pass covers
    // Register budget: D <= 64 fits 128 registers a thread, larger D needs the full 255.
    static constexpr int MIN_BLOCKS = D <= 64 ? 256 * 2 / THREADS : 128 * 2 / THREADS;
    static_assert(BM * ROW_BYTES <= STAGE_BYTES, "block-wise attention: the Q tile must fit in one stage");
    static_assert(ROWS_PER_PASS % 8 == 0, "block-wise attention: a copy pass must cover whole swizzle periods");
    static_assert(BN % ROWS_PER_PASS == 0 && BM % ROWS_PER_PASS == 0, "block-wise attention: tile rows per pass");

    // The chunk a row's chunk c is stored at is c ^ swizzle(r & 7): eight rows read at
    // one chunk then cover all eight 16-byte bank groups (with 4 chunks a row, two rows
    // share a 128-byte line, so rows pair up).
    static __device__ __forceinline__ int swizzle(int r7) { return CHUNKS >= 8 ? r7 : (r7 >> 1) & (CHUNKS - 1); }
};

// One key tile as the CTA sees it: which halves (64-row groups) compute it and how.
struct TileRef {
    int col;                  // tile column; INT_MAX: none
    int bm0, bm1;             // per half: -2 not listed, -1 full, >= 0 bitmap index
    unsigned long long cols;  // keys that are valid and < seq_k (bit c = column c of the tile)
};

// The part of a TileRef one warp computes with.
struct WarpTile {
    int col, bm;  // bm as in TileRef, of this warp's half
    unsigned long long cols;
};

template <typename T, int D, int BM>
__global__ void __launch_bounds__(BlockWiseTraits<D, BM>::THREADS, BlockWiseTraits<D, BM>::MIN_BLOCKS)
    block_wise_kernel(const AttnParams p) {
    using Tr = BlockWiseTraits<D, BM>;
    constexpr int CHUNKS = Tr::CHUNKS, ROW_BYTES = Tr::ROW_BYTES, RPP = Tr::ROWS_PER_PASS;
    extern __shared__ __align__(128) unsigned char smem[];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t4 = lane & 3;
    const int qblk = static_cast<int>(gridDim.x) - 1 - static_cast<int>(blockIdx.x);  // late (heavy) rows first
    const int h = blockIdx.y, b = blockIdx.z;
    const int q0 = qblk * BM;

    const T* qg = static_cast<const T*>(p.q) + b * p.q_sb + h * p.q_sh;
    const T* kg = static_cast<const T*>(p.k) + b * p.k_sb + (h / p.group) * p.k_sh;
    const T* vg = static_cast<const T*>(p.v) + b * p.v_sb + (h / p.group) * p.v_sh;
    T* og = static_cast<T*>(p.o) + b * p.o_sb + h * p.o_sh;

    const uint32_t sbase = smem_addr(smem);

    // This thread's part of every tile copy: chunk cp_c of rows cp_r, cp_r + RPP, ...
    // (nothing when cp_c is past the head dim).
    const int cp_c = tid % CHUNKS, cp_r = tid / CHUNKS;
    const bool cp_on = cp_c < Tr::DCHUNKS;
    const uint32_t cp_dst = cp_r * ROW_BYTES + ((cp_c ^ Tr::swizzle(cp_r & 7)) << 4);

    // Q -> stage 1.
#pragma unroll
    for (int i = 0; i < BM / RPP; ++i) {
        const int qi = q0 + cp_r + i * RPP;
        const bool ok = qi < p.seq_q;
        if (cp_on)
            cp_async_16(sbase + Tr::STAGE_BYTES + cp_dst + i * RPP * ROW_BYTES, qg + (ok ? qi : 0) * p.q_ss + cp_c * 8, ok);
    }
    cp_async_commit();

    // The mask lists of this CTA's rows.
    const int pat = (p.mask_batch == 1 ? 0 : b) * p.mask_heads + (p.mask_heads == 1 ? 0 : h);
    const int32_t* rp = p.row_ptr + pat * (p.tile_rows + 1);
    const bool shared_list = BM == 128 && p.tile_m == 128;  // one 128-row mask tile row for both halves
    const int tr0 = q0 / p.tile_m;
    TileList la, lb;
    la.init(p, __ldg(rp + tr0), __ldg(rp + tr0 + 1));
    if constexpr (BM == 128) {
        if (!shared_list && tr0 + 1 < p.tile_rows) lb.init(p, __ldg(rp + tr0 + 1), __ldg(rp + tr0 + 2));
        else lb.init(p, 0, 0);
    }
    const unsigned long long* kv_row =
        p.key_valid ? reinterpret_cast<const unsigned long long*>(p.key_valid) + static_cast<int64_t>(b) * p.kv_words : nullptr;

    auto next_tile = [&]() {
        TileRef r;
        r.cols = ~0ull;
        if constexpr (BM == 128) {
            r.col = min(la.col, lb.col);
            r.bm0 = la.col == r.col ? la.bm : -2;
            r.bm1 = shared_list ? r.bm0 : lb.col == r.col ? lb.bm : -2;
        } else {
            r.col = la.col;
            r.bm0 = la.bm;
            r.bm1 = -2;
        }
        if (r.col != INT_MAX) {
            if (r.bm0 != -2) la.advance(p);
            if constexpr (BM == 128)
                if (!shared_list && r.bm1 != -2) lb.advance(p);
            if (kv_row) r.cols = __ldg(kv_row + r.col);
            const int rem = p.seq_k - r.col * Tr::BN;
            if (rem < Tr::BN) r.cols &= (1ull << rem) - 1;
        }
        return r;
    };

    // K, V and the partial-tile bitmaps of tile r -> stage s.
    auto load_tile = [&](int s, const TileRef& r) {
        const uint32_t dst = sbase + s * Tr::STAGE_BYTES + cp_dst;
        const int k0 = r.col * Tr::BN;
#pragma unroll
        for (int i = 0; i < Tr::BN / RPP; ++i) {
            const int key = k0 + cp_r + i * RPP;
            const bool ok = key < p.seq_k;
            const int64_t kr = ok ? key : 0;
            if (cp_on) {
                cp_async_16(dst + i * RPP * ROW_BYTES, kg + kr * p.k_ss + cp_c * 8, ok);
                cp_async_16(dst + Tr::TILE_BYTES + i * RPP * ROW_BYTES, vg + kr * p.v_ss + cp_c * 8, ok);
            }
        }
        if (tid < 64) {
            const int hf = tid >> 5, c = tid & 31;
            const int bm = hf == 0 ? r.bm0 : r.bm1;
            if ((BM == 128 || hf == 0) && bm >= 0) {
                const uint64_t* src = p.bitmaps + static_cast<int64_t>(bm) * p.words_per_tile + (shared_list ? 64 * hf : 0) +
                                      c * 2;
                cp_async_16(sbase + Tr::BITMAP_OFFSET + (s * 2 + hf) * Tr::BITMAP_HALF_BYTES + c * 16, src, true);
            }
        }
    };

    const int half = BM == 128 ? warp >> 2 : 0;  // which 64-row group (mask tile row) this warp is in
    auto for_warp = [&](const TileRef& r) { return WarpTile{r.col, half == 0 ? r.bm0 : r.bm1, r.cols}; };
    WarpTile cur;
    {
        const TileRef first = next_tile();
        if (first.col != INT_MAX) load_tile(0, first);
        cur = for_warp(first);
    }
    cp_async_commit();
    cp_async_wait<1>();  // Q landed
    __syncthreads();

    // Per-lane ldmatrix offsets (row part, and the swizzled chunk per 16-wide k step).
    const int wrow = warp * 16;  // first row of this warp within the CTA block
    uint32_t qf[D / 16][4];
    {
        const uint32_t qa = sbase + Tr::STAGE_BYTES + (wrow + (lane & 15)) * ROW_BYTES;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(qf[kk], qa + (((2 * kk + (lane >> 4)) ^ Tr::swizzle(lane & 7)) << 4));
    }
    const uint32_t k_row = (((lane >> 4) << 3) + (lane & 7)) * ROW_BYTES;  // K: keys 16jj + this, chunk 2kk + (lane>>3)&1
    const uint32_t v_row = (lane & 15) * ROW_BYTES;                        // V: keys 16kk + this, chunk 2dd + lane>>4
    const int k_c = (lane >> 3) & 1, v_c = lane >> 4, sw = Tr::swizzle(lane & 7);

    const int wq = warp & 3;         // warp within its half: bitmap row blocks 2wq, 2wq+1
    const int row0 = q0 + wrow + g;  // global query rows of this lane: row0, row0 + 8
    const T* bias_h = p.bias ? static_cast<const T*>(p.bias) + h * p.bias_sh : nullptr;

    float o[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};

    int s = 0;
    while (cur.col != INT_MAX) {
        cp_async_wait<0>();
        __syncthreads();  // tile `cur` is in stage s; everyone is done with stage s^1 (and Q)
        WarpTile nxt;
        {
            const TileRef r = next_tile();
            if (r.col != INT_MAX) load_tile(s ^ 1, r);
            nxt = for_warp(r);
        }
        cp_async_commit();

        if (cur.bm != -2) {
            const int bm = cur.bm;
            const uint32_t kb = sbase + s * Tr::STAGE_BYTES + k_row;
            float sc[8][4];
#pragma unroll
            for (int n = 0; n < 8; ++n) sc[n][0] = sc[n][1] = sc[n][2] = sc[n][3] = 0.f;
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                const uint32_t koff = ((2 * kk + k_c) ^ sw) << 4;
#pragma unroll
                for (int jj = 0; jj < 4; ++jj) {
                    uint32_t bf[4];
                    ldmatrix_x4(bf, kb + jj * 16 * ROW_BYTES + koff);
                    mma_16816<T>(sc[2 * jj], qf[kk], bf[0], bf[1]);
                    mma_16816<T>(sc[2 * jj + 1], qf[kk], bf[2], bf[3]);
                }
            }
#pragma unroll
            for (int n = 0; n < 8; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) sc[n][e] *= p.scale_log2;

            if (bias_h) {
                const int j0 = cur.col * Tr::BN + 2 * t4;
#pragma unroll
                for (int n = 0; n < 8; ++n)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int i = row0 + (e >> 1) * 8, j = j0 + n * 8 + (e & 1);
                        if (i < p.seq_q && j < p.seq_k) sc[n][e] += load_elem(bias_h + i * p.bias_ss + j) * kLog2e;
                    }
            }

            if (bm >= 0 || cur.cols != ~0ull) {
                const unsigned char* words = smem + Tr::BITMAP_OFFSET + (s * 2 + half) * Tr::BITMAP_HALF_BYTES;
#pragma unroll
                for (int n = 0; n < 8; ++n) {
                    const uint32_t cb = static_cast<uint32_t>(cur.cols >> (8 * n + 2 * t4)) & 3u;
                    uint32_t k0 = cb, k1 = cb;  // keep bits (column 2t4, 2t4 + 1) of rows g and g + 8
                    if (bm >= 0) {
                        k0 &= static_cast<uint32_t>(words[((2 * wq) * 8 + n) * 8 + g]) >> (2 * t4);
                        k1 &= static_cast<uint32_t>(words[((2 * wq + 1) * 8 + n) * 8 + g]) >> (2 * t4);
                    }
                    if (!(k0 & 1u)) sc[n][0] = -INFINITY;
                    if (!(k0 & 2u)) sc[n][1] = -INFINITY;
                    if (!(k1 & 1u)) sc[n][2] = -INFINITY;
                    if (!(k1 & 2u)) sc[n][3] = -INFINITY;
                }
            }

            // Online softmax; rows g (r = 0) and g + 8 (r = 1), reduced over the quad.
            float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
            for (int n = 0; n < 8; ++n) {
                mx[0] = fmaxf(mx[0], fmaxf(sc[n][0], sc[n][1]));
                mx[1] = fmaxf(mx[1], fmaxf(sc[n][2], sc[n][3]));
            }
            float base[2], alpha[2];
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
                mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
                const float m_new = fmaxf(m_r[r], mx[r]);
                base[r] = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing kept yet stays at zero
                alpha[r] = exp2_approx(m_r[r] - base[r]);
                m_r[r] = m_new;
            }
            float rs[2] = {0.f, 0.f};
#pragma unroll
            for (int n = 0; n < 8; ++n) {
                sc[n][0] = exp2_approx(sc[n][0] - base[0]);
                sc[n][1] = exp2_approx(sc[n][1] - base[0]);
                sc[n][2] = exp2_approx(sc[n][2] - base[1]);
                sc[n][3] = exp2_approx(sc[n][3] - base[1]);
                rs[0] += sc[n][0] + sc[n][1];
                rs[1] += sc[n][2] + sc[n][3];
            }
            l_r[0] = l_r[0] * alpha[0] + rs[0];
            l_r[1] = l_r[1] * alpha[1] + rs[1];
#pragma unroll
            for (int n = 0; n < D / 8; ++n) {
                o[n][0] *= alpha[0];
                o[n][1] *= alpha[0];
                o[n][2] *= alpha[1];
                o[n][3] *= alpha[1];
            }

            // O += P V.
            const uint32_t vb = sbase + s * Tr::STAGE_BYTES + Tr::TILE_BYTES + v_row;
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                uint32_t pa[4];
                pa[0] = pack2<T>(sc[2 * kk][0], sc[2 * kk][1]);
                pa[1] = pack2<T>(sc[2 * kk][2], sc[2 * kk][3]);
                pa[2] = pack2<T>(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
                pa[3] = pack2<T>(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
#pragma unroll
                for (int dd = 0; dd < D / 16; ++dd) {
                    uint32_t bf[4];
                    ldmatrix_x4_trans(bf, vb + kk * 16 * ROW_BYTES + (((2 * dd + v_c) ^ sw) << 4));
                    mma_16816<T>(o[2 * dd], pa, bf[0], bf[1]);
                    mma_16816<T>(o[2 * dd + 1], pa, bf[2], bf[3]);
                }
            }
        }
        cur = nxt;
        s ^= 1;
    }

    // O / l (zero for a row with nothing kept), staged in stage 0, stored 16 bytes a lane.
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        l_r[r] += __shfl_xor_sync(0xffffffffu, l_r[r], 1);
        l_r[r] += __shfl_xor_sync(0xffffffffu, l_r[r], 2);
        inv[r] = l_r[r] > 0.f ? 1.f / l_r[r] : 0.f;
    }
    __syncthreads();                                                  // every warp is done reading K/V
    unsigned char* stage_o = smem + (wrow + g) * ROW_BYTES + t4 * 4;  // rows wrow+g and +8 share one swizzle
    const int osw = Tr::swizzle(g);
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
        *reinterpret_cast<uint32_t*>(stage_o + ((n ^ osw) << 4)) = pack2<T>(o[n][0] * inv[0], o[n][1] * inv[0]);
        *reinterpret_cast<uint32_t*>(stage_o + 8 * ROW_BYTES + ((n ^ osw) << 4)) = pack2<T>(o[n][2] * inv[1], o[n][3] * inv[1]);
    }
    __syncwarp();
#pragma unroll
    for (int i = 0; i < 16 * CHUNKS / 32; ++i) {
        const int idx = lane + 32 * i, r = wrow + idx / CHUNKS, c = idx % CHUNKS;
        const int qi = q0 + r;
        if (qi < p.seq_q && c < Tr::DCHUNKS) {
            const uint4 val = *reinterpret_cast<const uint4*>(smem + r * ROW_BYTES + ((c ^ Tr::swizzle(r & 7)) << 4));
            *reinterpret_cast<uint4*>(og + qi * p.o_ss + c * 8) = val;
        }
    }
}

// Sets the kernel's shared-memory limit once per device, then launches.
template <ElemType E, int D, int BM> cudaError_t launch_block_wise_bm(const AttnParams& p, cudaStream_t stream) {
    using T = typename ElemOf<E>::type;
    using Tr = BlockWiseTraits<D, BM>;
    constexpr auto kernel = block_wise_kernel<T, D, BM>;
    int dev = 0;
    const cudaError_t e = configure_shared_memory<kernel>(Tr::SMEM_BYTES, dev);
    if (e != cudaSuccess) return e;
    const dim3 grid((p.seq_q + BM - 1) / BM, p.heads, p.batch);
    kernel<<<grid, Tr::THREADS, Tr::SMEM_BYTES, stream>>>(p);
    return cudaGetLastError();
}

template <ElemType E, int D> cudaError_t launch_block_wise(const AttnParams& p, int block_m, cudaStream_t stream) {
    return block_m == 128 ? launch_block_wise_bm<E, D, 128>(p, stream) : launch_block_wise_bm<E, D, 64>(p, stream);
}

}  // namespace stof::kernels::attn
