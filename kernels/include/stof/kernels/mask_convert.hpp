// Dense → sparse attention mask conversion on the GPU: the run-time path for a
// 4-D mask input, run every time the mask arrives.
//
// Input (DenseMaskInput): keep[b, h, i, j], bool or uint8 (nonzero = keep), of
// logical shape [batch, heads, rows, cols] at
//     data + b * stride_b + h * stride_h + i * stride_row + j * stride_col
// (strides in elements = bytes, all >= 0). A stride of 0 on b or h broadcasts:
// stride_b == 0 or batch == 1 gives mask_batch = 1, else mask_batch = batch;
// likewise mask_heads. P = mask_batch * mask_heads patterns, pattern
// p = b * mask_heads + h (stof/sparse_mask.hpp).
//
// Output: exactly the arrays stof::from_dense() builds for those P patterns,
// written to caller-provided device buffers sized for the worst case (every
// tile non-empty and partial). With TR = ceil(rows / tile_m),
// TC = ceil(cols / tile_n), T = P * TR * TC, WPT = (tile_m / 8) * (tile_n / 8):
//     row_ptr     int32  [P * (TR + 1)]  all written
//     col_idx     int32  [T]             the first counts[0] written
//     bitmap_idx  int32  [T]             the first counts[0] written
//     bitmaps     uint64 [T * WPT]       the first counts[1] * WPT written
//     counts      int32  [2]             {non-empty tiles, partial tiles}
// Nothing past those prefixes is written. mask_convert_sizes() gives every size.
//
// workspace: mask_convert_sizes().workspace_bytes, 256-byte aligned, device
// memory owned by the caller; its content between calls does not matter. Layout:
//     flags   uint64 [T + 1]    per tile: non-empty | partial << 32 (last: 0)
//     offsets uint64 [T + 1]    exclusive prefix sum of flags
//     words   uint64 [T * WPT]  bitmaps of partial tiles, uncompacted
//     scan    CUB's temporary storage
// each region starting at a multiple of 256 bytes.
//
// convert_dense_mask is asynchronous on `stream`: three launches (classify and
// build bitmap words, CUB exclusive scan, scatter), no allocation, no host
// synchronisation, so it can be captured in a CUDA graph.
// Constraints: tile_m, tile_n multiples of 8 in 8..256; rows, cols >= 0;
// batch, heads >= 1; T + 1 <= 2^31 - 1.
#pragma once

#include "stof/kernels/attention.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace stof::kernels {

struct DenseMaskInput {
    const uint8_t* data = nullptr;  // device memory
    int32_t batch = 1, heads = 1, rows = 0, cols = 0;
    int64_t stride_b = 0, stride_h = 0, stride_row = 0, stride_col = 1;
};

struct SparseMaskBuffers {
    int32_t* row_ptr = nullptr;
    int32_t* col_idx = nullptr;
    int32_t* bitmap_idx = nullptr;
    uint64_t* bitmaps = nullptr;
    int32_t* counts = nullptr;
};

struct MaskConvertSizes {
    int32_t mask_batch = 1, mask_heads = 1;
    int32_t tile_rows = 0, tile_cols = 0, words_per_tile = 0;
    int64_t tiles = 0;  // T
    size_t row_ptr_bytes = 0, col_idx_bytes = 0, bitmap_idx_bytes = 0, bitmaps_bytes = 0, counts_bytes = 0;
    size_t workspace_bytes = 0;
};

// "" when these arguments are supported, else what is wrong with them.
std::string check_mask_convert_args(const DenseMaskInput& in, int32_t tile_m, int32_t tile_n);

// Every buffer size for these arguments. The scan's share of the workspace
// depends on the current device: query on the device that will run it.
// Invalid arguments return cudaErrorInvalidValue.
cudaError_t mask_convert_sizes(const DenseMaskInput& in, int32_t tile_m, int32_t tile_n, MaskConvertSizes* sizes);

// Launches the conversion on `stream`. Invalid arguments (including a null or
// too small workspace, or a null output buffer) return cudaErrorInvalidValue;
// launch failures return the CUDA error.
cudaError_t convert_dense_mask(const DenseMaskInput& in, int32_t tile_m, int32_t tile_n, const SparseMaskBuffers& out,
                               void* workspace, size_t workspace_bytes, cudaStream_t stream);

// The attention kernels' view of the converted mask (valid once the conversion ran).
SparseMaskView sparse_mask_view(const DenseMaskInput& in, int32_t tile_m, int32_t tile_n, const SparseMaskBuffers& out);

}  // namespace stof::kernels
