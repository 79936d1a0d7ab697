// Shared by the block-wise kernels: the element type of an ElemType, and a cursor over
// one mask tile row's list of non-empty tiles.
#pragma once

#include "params.hpp"

#include <climits>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace stof::kernels::attn {

template <ElemType E> struct ElemOf;
template <> struct ElemOf<ElemType::f16> { using type = __half; };
template <> struct ElemOf<ElemType::bf16> { using type = __nv_bfloat16; };

// A cursor over one tile row's list (entries pos..end-1 of col_idx/bitmap_idx), the
// current entry preloaded.
struct TileList {
    int pos, end;
    int col, bm;  // col == INT_MAX: exhausted

    __device__ __forceinline__ void init(const AttnParams& p, int first, int last) {
        pos = first;
        end = last;
        load(p);
    }
    __device__ __forceinline__ void load(const AttnParams& p) {
        if (pos < end) {
            col = __ldg(p.col_idx + pos);
            bm = __ldg(p.bitmap_idx + pos);
        } else {
            col = INT_MAX;
            bm = -1;
        }
    }
    __device__ __forceinline__ void advance(const AttnParams& p) {
        ++pos;
        load(p);
    }
};

}  // namespace stof::kernels::attn
