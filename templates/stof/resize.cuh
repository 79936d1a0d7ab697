// Resize (separable interpolation), one thread per output element: along each
// resized axis a table of taps (input index and weight per output coordinate,
// computed by the compiler: ops/resize_taps.hpp); other axes map through.
// The generated kernel supplies
//   float x(i64 i)            input element i (row-major)
//   void out(i64 i, float v)  output element i (row-major)
#pragma once

#include "stof/loop.cuh"

namespace stof {

template <int RANK> struct ResizeAxes {
    i64 out[RANK];              // output shape
    i64 in_stride[RANK];        // input strides, in elements
    int taps[RANK];             // taps per output coordinate; 0: the axis maps through
    const int* index[RANK];     // [out[d], taps[d]] input coordinates (resized axes)
    const float* weight[RANK];  // [out[d], taps[d]] their weights
};

// acc += (weight · Π of the taps' weights) · x at the taps of axes D.., output coordinates c.
template <int D, int RANK, class Idx, class X>
__device__ __forceinline__ void resize_taps(const ResizeAxes<RANK>& a, const Idx (&c)[RANK], Idx at, float weight, const X& x,
                                            float& acc) {
    if constexpr (D == RANK) {
        acc += weight * x(at);
    } else if (a.taps[D] == 0) {
        resize_taps<D + 1>(a, c, at + c[D] * static_cast<Idx>(a.in_stride[D]), weight, x, acc);
    } else {
        for (int t = 0; t < a.taps[D]; ++t) {
            const Idx k = c[D] * a.taps[D] + t;
            resize_taps<D + 1>(a, c, at + static_cast<Idx>(a.index[D][k]) * static_cast<Idx>(a.in_stride[D]),
                               weight * a.weight[D][k], x, acc);
        }
    }
}

template <int RANK, class Idx, class X, class Out>
__device__ void resize(const ResizeAxes<RANK>& a, const X& x, const Out& out) {
    static_assert(RANK >= 1 && RANK <= 8, "resize: rank 1 to 8");
    Idx total = 1;
    for (int d = 0; d < RANK; ++d) total *= static_cast<Idx>(a.out[d]);
    grid_stride<Idx>(total, [&](Idx i) {
        Idx c[RANK];
        Idx r = i;
        for (int d = RANK - 1; d >= 0; --d) {
            c[d] = r % static_cast<Idx>(a.out[d]);
            r /= static_cast<Idx>(a.out[d]);
        }
        float acc = 0.0f;
        resize_taps<0>(a, c, Idx(0), 1.0f, x, acc);
        out(i, acc);
    });
}

}  // namespace stof
