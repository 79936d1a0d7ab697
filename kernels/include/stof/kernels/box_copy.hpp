// Box copies: many tensors copied between two shapes in one launch, the padding and
// cutting of a shape-range plan's inputs and outputs. See kernels/box_copy/README.md.
//
// Per entry, over every unit of dst (row-major, `dst_dims`):
//   dst[c] = src[c]  when the coordinate c lies inside `src_dims` (c[d] < src_dims[d] for every d),
//   dst[c] = 0       (all bytes zero) otherwise.
// src is read row-major with `src_dims`. Padding: src_dims <= dst_dims; cutting: src_dims >= dst_dims.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace stof::kernels {

constexpr int kBoxCopyMaxRank = 4;
constexpr int kBoxCopyMaxEntries = 16;

// One tensor. Dimensions are outermost first and counted in units of `unit_bytes` bytes
// (1, 2, 4, 8 or 16); src and dst are aligned to unit_bytes. Only the first `rank` dims count.
struct BoxCopyEntry {
    const void* src = nullptr;
    void* dst = nullptr;
    int64_t src_dims[kBoxCopyMaxRank] = {};
    int64_t dst_dims[kBoxCopyMaxRank] = {};
    int32_t rank = 0;
    int32_t unit_bytes = 0;
};

// Up to kBoxCopyMaxEntries entries, passed to the kernel by value as its argument.
struct BoxCopyTable {
    BoxCopyEntry entries[kBoxCopyMaxEntries];
    int32_t count = 0;
};
static_assert(sizeof(BoxCopyTable) <= 4096, "a box copy table is one kernel argument (at most 4 KiB)");

// The unit of src that unit i of dst (row-major over dst_dims, 0 <= i < their product)
// takes, row-major over src_dims; -1 where unit i lies outside src_dims (zero padding).
// The kernel's indexing, shared with the host so that tests check it without a GPU.
__host__ __device__ inline int64_t box_copy_source(const BoxCopyEntry& e, int64_t i) {
    int64_t at = 0, scale = 1;
    bool inside = true;
    for (int d = kBoxCopyMaxRank - 1; d >= 0; --d) {  // innermost first
        if (d >= e.rank) continue;
        const int64_t c = i % e.dst_dims[d];
        i /= e.dst_dims[d];
        inside = inside && c < e.src_dims[d];
        at += c * scale;
        scale *= e.src_dims[d];
    }
    return inside ? at : -1;
}

// Why `table` cannot be launched ("" when it can): count outside 1..kBoxCopyMaxEntries, a
// rank outside 1..kBoxCopyMaxRank, a negative dimension, a unit size that is no power of
// two up to 16, a null or misaligned pointer.
const char* check_box_copy(const BoxCopyTable& table);

// One launch on `stream` for every entry (no allocation, no synchronisation: capturable in
// a CUDA graph). An invalid table returns cudaErrorInvalidValue (check_box_copy says why);
// otherwise the launch status. src and dst of one entry must not overlap.
cudaError_t launch_box_copy(const BoxCopyTable& table, cudaStream_t stream);

}  // namespace stof::kernels
