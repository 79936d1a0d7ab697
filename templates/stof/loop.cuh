// Building blocks of the loop kernels (conv.cuh, resize.cuh, scan.cuh,
// scatter.cuh): a grid-stride loop and the element functors the generated
// kernel passes them. NVRTC-clean: no host headers.
#pragma once

#include "stof/common.cuh"

namespace stof {

// f(i) for every i in [0, n), spread over the launch's threads (grid-stride).
template <class Idx, class F> __device__ __forceinline__ void grid_stride(Idx n, const F& f) {
    for (Idx i = blockIdx.x * static_cast<Idx>(blockDim.x) + threadIdx.x; i < n; i += static_cast<Idx>(gridDim.x) * blockDim.x)
        f(i);
}

// Element i of p as a float / as an exact integer.
template <class T> struct LoadFloat {
    const T* p;
    __device__ __forceinline__ float operator()(i64 i) const { return to_float(p[i]); }
};
template <class T> struct LoadInt {
    const T* p;
    __device__ __forceinline__ i64 operator()(i64 i) const { return to_int(p[i]); }
};
// Stores v at element i of p, converted to T.
template <class T> struct StoreAt {
    T* p;
    template <class V> __device__ __forceinline__ void operator()(i64 i, V v) const { store(p + i, v); }
};
// A bias that is absent.
struct Zero {
    __device__ __forceinline__ float operator()(i64) const { return 0.0f; }
};

}  // namespace stof
