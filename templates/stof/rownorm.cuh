// Row normalisation (LayerNorm, RMSNorm) and softmax over the `len` trailing
// elements of each of `rows` rows, vectorised: THREADS threads a row (one warp,
// ROWS rows a CTA; or the whole CTA, ROWS == 1), VEC consecutive elements a thread
// per access, ITEMS such vectors a thread held in registers
// (len <= THREADS * VEC * ITEMS, len a multiple of VEC). Statistics in fp32; the
// variance from the centred values (two passes over registers).
//
// The generated kernel supplies the functors:
//   void load(i64 row, int col, float (&x)[VEC])         elements col .. col + VEC - 1 of the row
//                                                       (computes the row's input: the prologue)
//   void store(i64 row, int col, const float (&y)[VEC])  the normalised values (the functor applies
//                                                       scale and bias and writes them)
#pragma once

#include "stof/reduce.cuh"

namespace stof {

enum RowNormOp { kLayerNorm = 0, kRmsNorm = 1, kSoftmax = 2 };

template <int THREADS, float (*WARP)(float)>
__device__ __forceinline__ float row_reduce(float v, float* scratch, float identity) {
    if constexpr (THREADS == 32) return WARP(v);
    else return block_reduce<THREADS, WARP>(v, scratch, identity);
}

template <int THREADS, int ROWS, int VEC, int ITEMS, int OP, class Load, class Store>
__device__ void rownorm(const Load& load, const Store& store, i64 rows, int len, float eps) {
    static_assert(THREADS == 32 || (THREADS % 32 == 0 && THREADS <= 1024 && ROWS == 1),
                  "a row takes one warp (ROWS rows a CTA) or a whole CTA of up to 1024 threads");
    static_assert(ROWS >= 1 && ROWS * THREADS <= 1024, "at most 1024 threads a CTA");
    static_assert(VEC >= 1 && VEC <= 8 && (VEC & (VEC - 1)) == 0, "VEC must be 1, 2, 4 or 8");
    static_assert(ITEMS >= 1 && ITEMS <= 16, "ITEMS must be in 1..16");
    static_assert(OP == kLayerNorm || OP == kRmsNorm || OP == kSoftmax, "OP must be a RowNormOp");
    __shared__ float scratch[32];
    const float inf = __int_as_float(0x7f800000);
    const int t = static_cast<int>(threadIdx.x) % THREADS;
    for (i64 row = static_cast<i64>(blockIdx.x) * ROWS + threadIdx.x / THREADS; row < rows;
         row += static_cast<i64>(gridDim.x) * ROWS) {
        float x[ITEMS][VEC];
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            const int col = (it * THREADS + t) * VEC;
            if (col < len) {
                load(row, col, x[it]);
            } else {
#pragma unroll
                for (int k = 0; k < VEC; ++k) x[it][k] = OP == kSoftmax ? -inf : 0.0f;
            }
        }
        if constexpr (OP == kSoftmax) {
            float mx = -inf;
#pragma unroll
            for (int it = 0; it < ITEMS; ++it)
#pragma unroll
                for (int k = 0; k < VEC; ++k) mx = fmaxf(mx, x[it][k]);
            mx = row_reduce<THREADS, warp_max>(mx, scratch, -inf);
            float sum = 0.0f;
#pragma unroll
            for (int it = 0; it < ITEMS; ++it)
#pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    x[it][k] = (it * THREADS + t) * VEC < len ? expf(x[it][k] - mx) : 0.0f;
                    sum += x[it][k];
                }
            const float inv = 1.0f / row_reduce<THREADS, warp_sum>(sum, scratch, 0.0f);
#pragma unroll
            for (int it = 0; it < ITEMS; ++it)
#pragma unroll
                for (int k = 0; k < VEC; ++k) x[it][k] *= inv;
        } else {
            const float inv_len = 1.0f / static_cast<float>(len);
            float mean = 0.0f;
            if constexpr (OP == kLayerNorm) {
                float sum = 0.0f;
#pragma unroll
                for (int it = 0; it < ITEMS; ++it)
#pragma unroll
                    for (int k = 0; k < VEC; ++k) sum += x[it][k];
                mean = row_reduce<THREADS, warp_sum>(sum, scratch, 0.0f) * inv_len;
            }
            float sq = 0.0f;
#pragma unroll
            for (int it = 0; it < ITEMS; ++it)
#pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    const float d = (it * THREADS + t) * VEC < len ? x[it][k] - mean : 0.0f;
                    sq += d * d;
                }
            const float rstd = rsqrtf(row_reduce<THREADS, warp_sum>(sq, scratch, 0.0f) * inv_len + eps);
#pragma unroll
            for (int it = 0; it < ITEMS; ++it)
#pragma unroll
                for (int k = 0; k < VEC; ++k) x[it][k] = (x[it][k] - mean) * rstd;
        }
#pragma unroll
        for (int it = 0; it < ITEMS; ++it) {
            const int col = (it * THREADS + t) * VEC;
            if (col < len) store(row, col, x[it]);
        }
    }
}

}  // namespace stof
