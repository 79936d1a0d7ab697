// ScatterND with reduction "none": out (already a copy of data) gets each
// update slice written at its index tuple; one thread per updated element.
// Indices [count, Q] address the first Q dims of data (negative: from the end;
// clamped into range); each update is a slice of `slice` elements.
//   i64 index(i64 i)   element i of the indices
#pragma once

#include "stof/loop.cuh"

namespace stof {

template <int Q> struct ScatterDims {
    i64 size[Q];    // data's first Q dims
    i64 stride[Q];  // their strides, in elements
};

template <int Q, class Index, class U, class T>
__device__ void scatter_nd(const ScatterDims<Q>& dims, i64 count, i64 slice, const Index& index, const U* updates, T* out) {
    static_assert(Q >= 1, "scatter_nd: indices address at least one dim");
    grid_stride<i64>(count * slice, [&](i64 i) {
        const i64 k = i / slice;
        i64 at = i % slice;
        for (int d = 0; d < Q; ++d) {
            i64 j = index(k * Q + d);
            if (j < 0) j += dims.size[d];
            j = min(max(j, 0LL), dims.size[d] - 1);
            at += j * dims.stride[d];
        }
        out[at] = updates[i];
    });
}

}  // namespace stof
