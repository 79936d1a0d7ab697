// Row kernels: softmax, layer / RMS normalisation and reductions over `len`
// elements of each of `rows` rows. One block of BLOCK threads per row
// (grid-stride over rows). With ITEMS > 0 a row is held in registers
// (len <= BLOCK * ITEMS); with ITEMS == 0 rows of any length are streamed.
//
// The generated kernel supplies the functors:
//   float load(i64 row, int col)              the row's element `col`
//   void store(i64 row, int col, float v)     softmax / layernorm / rmsnorm result
//   void store_row(i64 row, float v)          reduction result
#pragma once

#include "stof/reduce.cuh"

namespace stof {

template <int BLOCK, int ITEMS, class Load, class Store>
__device__ void softmax_rows(const Load& load, const Store& store, i64 rows, int len) {
    static_assert(ITEMS >= 0 && ITEMS <= 64, "ITEMS must be in 0..64");
    __shared__ float scratch[32];
    const float neg_inf = -__int_as_float(0x7f800000);
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        if (ITEMS > 0) {
            float v[ITEMS > 0 ? ITEMS : 1];
            float mx = neg_inf;
#pragma unroll
            for (int t = 0; t < ITEMS; ++t) {
                const int c = threadIdx.x + t * BLOCK;
                v[t] = c < len ? load(row, c) : neg_inf;
                mx = fmaxf(mx, v[t]);
            }
            mx = block_max<BLOCK>(mx, scratch);
            float sum = 0.0f;
#pragma unroll
            for (int t = 0; t < ITEMS; ++t) {
                const int c = threadIdx.x + t * BLOCK;
                v[t] = c < len ? expf(v[t] - mx) : 0.0f;
                sum += v[t];
            }
            sum = block_sum<BLOCK>(sum, scratch);
            const float inv = 1.0f / sum;
#pragma unroll
            for (int t = 0; t < ITEMS; ++t) {
                const int c = threadIdx.x + t * BLOCK;
                if (c < len) store(row, c, v[t] * inv);
            }
        } else {
            float mx = neg_inf;
            for (int c = threadIdx.x; c < len; c += BLOCK) mx = fmaxf(mx, load(row, c));
            mx = block_max<BLOCK>(mx, scratch);
            float sum = 0.0f;
            for (int c = threadIdx.x; c < len; c += BLOCK) sum += expf(load(row, c) - mx);
            sum = block_sum<BLOCK>(sum, scratch);
            const float inv = 1.0f / sum;
            for (int c = threadIdx.x; c < len; c += BLOCK) store(row, c, expf(load(row, c) - mx) * inv);
        }
    }
}

// store(row, col, (x - mean) * rsqrt(var + eps)), with mean = 0 unless CENTER
// (RMS normalisation); the functor applies scale and bias. Statistics in fp32.
template <int BLOCK, int ITEMS, bool CENTER, class Load, class Store>
__device__ void normalize_rows(const Load& load, const Store& store, i64 rows, int len, float eps) {
    static_assert(ITEMS >= 0 && ITEMS <= 64, "ITEMS must be in 0..64");
    __shared__ float scratch[32];
    const float inv_len = 1.0f / static_cast<float>(len);
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        if (ITEMS > 0) {
            float v[ITEMS > 0 ? ITEMS : 1];
            float sum = 0.0f;
#pragma unroll
            for (int t = 0; t < ITEMS; ++t) {
                const int c = threadIdx.x + t * BLOCK;
                v[t] = c < len ? load(row, c) : 0.0f;
                sum += v[t];
            }
            const float mean = CENTER ? block_sum<BLOCK>(sum, scratch) * inv_len : 0.0f;
            float sq = 0.0f;
#pragma unroll
            for (int t = 0; t < ITEMS; ++t) {
                const int c = threadIdx.x + t * BLOCK;
                const float d = c < len ? v[t] - mean : 0.0f;
                sq += d * d;
            }
            const float rstd = rsqrtf(block_sum<BLOCK>(sq, scratch) * inv_len + eps);
#pragma unroll
            for (int t = 0; t < ITEMS; ++t) {
                const int c = threadIdx.x + t * BLOCK;
                if (c < len) store(row, c, (v[t] - mean) * rstd);
            }
        } else {
            float mean = 0.0f;
            if (CENTER) {
                float sum = 0.0f;
                for (int c = threadIdx.x; c < len; c += BLOCK) sum += load(row, c);
                mean = block_sum<BLOCK>(sum, scratch) * inv_len;
            }
            float sq = 0.0f;
            for (int c = threadIdx.x; c < len; c += BLOCK) {
                const float d = load(row, c) - mean;
                sq += d * d;
            }
            const float rstd = rsqrtf(block_sum<BLOCK>(sq, scratch) * inv_len + eps);
            for (int c = threadIdx.x; c < len; c += BLOCK) store(row, c, (load(row, c) - mean) * rstd);
        }
    }
}

// store(row, col, (x - mean) * rsqrt(var + eps)); the functor applies scale and bias.
template <int BLOCK, int ITEMS, class Load, class Store>
__device__ void layernorm_rows(const Load& load, const Store& store, i64 rows, int len, float eps) {
    normalize_rows<BLOCK, ITEMS, true>(load, store, rows, len, eps);
}

// store(row, col, x * rsqrt(mean(x^2) + eps)); the functor applies the scale.
template <int BLOCK, int ITEMS, class Load, class Store>
__device__ void rmsnorm_rows(const Load& load, const Store& store, i64 rows, int len, float eps) {
    normalize_rows<BLOCK, ITEMS, false>(load, store, rows, len, eps);
}

// KIND: 0 sum, 1 mean, 2 max, 3 min.
template <int BLOCK, int KIND, class Load, class Store>
__device__ void reduce_rows(const Load& load, const Store& store_row, i64 rows, int len) {
    static_assert(KIND >= 0 && KIND <= 3, "KIND must be 0 (sum), 1 (mean), 2 (max) or 3 (min)");
    __shared__ float scratch[32];
    const float inf = __int_as_float(0x7f800000);
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        float acc = KIND == 2 ? -inf : KIND == 3 ? inf : 0.0f;
        for (int c = threadIdx.x; c < len; c += BLOCK) {
            const float x = load(row, c);
            if (KIND <= 1) acc += x;
            else if (KIND == 2) acc = (x != x || x > acc) ? x : acc;
            else acc = (x != x || x < acc) ? x : acc;
        }
        if (KIND <= 1) {
            acc = block_sum<BLOCK>(acc, scratch);
        } else if (KIND == 2) {
            acc = block_max<BLOCK>(acc, scratch);
        } else {
            acc = -block_max<BLOCK>(-acc, scratch);
        }
        if (threadIdx.x == 0) store_row(row, KIND == 1 ? acc / static_cast<float>(len) : acc);
    }
}

}  // namespace stof
