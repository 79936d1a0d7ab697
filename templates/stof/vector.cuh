// Accesses of V consecutive elements (V a power of two): one 16-, 8- or 4-byte
// access per chunk when the address is aligned for it, element by element
// otherwise (unaligned tensors still give the right answer, only slower).
// Arrays passed as `out` / `v` must be declared alignas(16).
#pragma once

#include "stof/common.cuh"

namespace stof {

template <int V, class T>
__device__ __forceinline__ void load_vec(const T* p, T (&out)[V]) {
    static_assert(V >= 1 && (V & (V - 1)) == 0, "V must be a power of two");
    constexpr int kBytes = V * static_cast<int>(sizeof(T));
    const unsigned long long a = reinterpret_cast<unsigned long long>(p);
    if constexpr (kBytes % 16 == 0) {
        if ((a & 15) == 0) {
#pragma unroll
            for (int c = 0; c < kBytes / 16; ++c) reinterpret_cast<uint4*>(out)[c] = reinterpret_cast<const uint4*>(p)[c];
            return;
        }
    } else if constexpr (kBytes % 8 == 0) {
        if ((a & 7) == 0) {
#pragma unroll
            for (int c = 0; c < kBytes / 8; ++c) reinterpret_cast<uint2*>(out)[c] = reinterpret_cast<const uint2*>(p)[c];
            return;
        }
    } else if constexpr (kBytes % 4 == 0) {
        if ((a & 3) == 0) {
#pragma unroll
            for (int c = 0; c < kBytes / 4; ++c) reinterpret_cast<unsigned*>(out)[c] = reinterpret_cast<const unsigned*>(p)[c];
            return;
        }
    }
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = p[k];
}

// Stores v[0..V) converted to T at p .. p + V - 1.
template <int V, class T>
__device__ __forceinline__ void store_vec(T* p, const float (&v)[V]) {
    static_assert(V >= 1 && (V & (V - 1)) == 0, "V must be a power of two");
    alignas(16) T tmp[V];
#pragma unroll
    for (int k = 0; k < V; ++k) store(&tmp[k], v[k]);
    constexpr int kBytes = V * static_cast<int>(sizeof(T));
    const unsigned long long a = reinterpret_cast<unsigned long long>(p);
    if constexpr (kBytes % 16 == 0) {
        if ((a & 15) == 0) {
#pragma unroll
            for (int c = 0; c < kBytes / 16; ++c) reinterpret_cast<uint4*>(p)[c] = reinterpret_cast<const uint4*>(tmp)[c];
            return;
        }
    } else if constexpr (kBytes % 8 == 0) {
        if ((a & 7) == 0) {
#pragma unroll
            for (int c = 0; c < kBytes / 8; ++c) reinterpret_cast<uint2*>(p)[c] = reinterpret_cast<const uint2*>(tmp)[c];
            return;
        }
    }
#pragma unroll
    for (int k = 0; k < V; ++k) p[k] = tmp[k];
}

}  // namespace stof
