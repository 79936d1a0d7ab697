// Block-wide reductions for row kernels. BLOCK threads (a multiple of 32,
// at most 1024) all call these; `scratch` holds BLOCK / 32 floats.
#pragma once

namespace stof {

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Combines v over the block with the warp reduction WARP; lanes past the last
// warp contribute `identity`.
template <int BLOCK, float (*WARP)(float)>
__device__ __forceinline__ float block_reduce(float v, float* scratch, float identity) {
    static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
    v = WARP(v);
    if (BLOCK == 32) return v;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < BLOCK / 32 ? scratch[lane] : identity;
    return WARP(v);
}

template <int BLOCK> __device__ __forceinline__ float block_sum(float v, float* scratch) {
    return block_reduce<BLOCK, warp_sum>(v, scratch, 0.0f);
}

template <int BLOCK> __device__ __forceinline__ float block_max(float v, float* scratch) {
    return block_reduce<BLOCK, warp_max>(v, scratch, -__int_as_float(0x7f800000));
}

}  // namespace stof
