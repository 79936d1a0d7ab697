// CumSum along one axis, one thread per scanned line: the axis has `len`
// elements `inner` apart, lines = outer · inner. Acc is float (float tensors)
// or i64 (integers, exact). The generated kernel supplies
//   Acc x(i64 i)             input element i
//   void out(i64 i, Acc v)   output element i
#pragma once

#include "stof/loop.cuh"

namespace stof {

template <class Idx, class Acc, bool EXCLUSIVE, bool REVERSE, class X, class Out>
__device__ void cumsum(Idx lines, Idx len, Idx inner, const X& x, const Out& out) {
    grid_stride<Idx>(lines, [&](Idx line) {
        const Idx base = (line / inner) * len * inner + line % inner;
        Acc acc = 0;
        for (Idx s = 0; s < len; ++s) {
            const Idx at = base + (REVERSE ? len - 1 - s : s) * inner;
            if (EXCLUSIVE) {
                out(at, acc);
                acc += x(at);
            } else {
                acc += x(at);
                out(at, acc);
            }
        }
    });
}

}  // namespace stof
