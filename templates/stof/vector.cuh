// Accesses of V consecutive elements (V a power of two): one 16-, 8- or 4-byte
// access per chunk when the address is aligned for it, element by element
// otherwise (unaligned tensors still give the right answer, only slower).
// Arrays passed as `out` / `v` must be declared alignas(16).
#pragma once

#include "stof/common.cuh"

namespace stof {

template <int V, class T> __device__ __forceinline__ void load_vec(const T* p, T (&out)[V]) {
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

// Four bytes of converted elements packed into one word, element 0 in the low bits.
__device__ __forceinline__ unsigned pack_word(const float* v) { return __float_as_uint(v[0]); }
__device__ __forceinline__ unsigned pack_word(const f16* v) { return v[0].bits | (static_cast<unsigned>(v[1].bits) << 16); }
__device__ __forceinline__ unsigned pack_word(const bf16* v) { return v[0].bits | (static_cast<unsigned>(v[1].bits) << 16); }

// Stores v[0..V) converted to T (float, f16 or bf16) at p .. p + V - 1 (global
// memory): the converted elements are packed into words in registers, then
// written with 16- or 8-byte stores where the address allows.
template <int V, class T> __device__ __forceinline__ void store_vec(T* p, const float (&v)[V]) {
    static_assert(V >= 1 && (V & (V - 1)) == 0, "V must be a power of two");
    T tmp[V];
#pragma unroll
    for (int k = 0; k < V; ++k) store(&tmp[k], v[k]);
    constexpr int kPer = 4 / static_cast<int>(sizeof(T));  // elements a word
    constexpr int kWords = V / (kPer > 0 ? kPer : 1);
    const unsigned long long a = reinterpret_cast<unsigned long long>(p);
    if constexpr (sizeof(T) <= 4 && V * sizeof(T) >= 4) {
        unsigned w[kWords];
#pragma unroll
        for (int i = 0; i < kWords; ++i) w[i] = pack_word(&tmp[i * kPer]);
        if constexpr (kWords % 4 == 0) {
            if ((a & 15) == 0) {
#pragma unroll
                for (int i = 0; i < kWords; i += 4)
                    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(reinterpret_cast<char*>(p) + 4 * i),
                                 "r"(w[i]), "r"(w[i + 1]), "r"(w[i + 2]), "r"(w[i + 3])
                                 : "memory");
                return;
            }
        }
        if constexpr (kWords % 2 == 0) {
            if ((a & 7) == 0) {
#pragma unroll
                for (int i = 0; i < kWords; i += 2)
                    asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(reinterpret_cast<char*>(p) + 4 * i), "r"(w[i]),
                                 "r"(w[i + 1])
                                 : "memory");
                return;
            }
        }
    }
#pragma unroll
    for (int k = 0; k < V; ++k) p[k] = tmp[k];
}

}  // namespace stof
