// AttnParams: the kernel-side form of stof::kernels::AttentionArgs (plain data,
// passed by value to both attention kernels). Strides are in elements.
#pragma once

#include "stof/kernels/attention.hpp"

#include <cstdint>

namespace stof::kernels::attn {

struct AttnParams {
    const void* q = nullptr;  // [batch, heads, seq_q, D]
    const void* k = nullptr;  // [batch, kv_heads, seq_k, D]
    const void* v = nullptr;  // [batch, kv_heads, seq_k, D]
    void* o = nullptr;        // [batch, heads, seq_q, D]
    int64_t q_sb = 0, q_sh = 0, q_ss = 0;
    int64_t k_sb = 0, k_sh = 0, k_ss = 0;
    int64_t v_sb = 0, v_sh = 0, v_ss = 0;
    int64_t o_sb = 0, o_sh = 0, o_ss = 0;
    int32_t batch = 0, heads = 0, group = 1, seq_q = 0, seq_k = 0;
    float scale_log2 = 0.f;  // scale * log2(e): scores live in the log2 domain

    // Mask (stof/sparse_mask.hpp), device arrays.
    const int32_t* row_ptr = nullptr;
    const int32_t* col_idx = nullptr;
    const int32_t* bitmap_idx = nullptr;
    const uint64_t* bitmaps = nullptr;
    int32_t tile_rows = 0, tile_m = 64, words_per_tile = 64, mask_batch = 1, mask_heads = 1;
    float fill3 = 0.f;        // SparseMaskView::fill3
    int32_t longest_row = 0;  // SparseMaskView::longest_row
    float mean_row = 0.f;     // SparseMaskView::mean_row
    // SparseMaskView::long_rows: the first long_row_count of them (those < tile_rows).
    int32_t long_rows[kMaskLongRows] = {-1, -1, -1, -1};
    int32_t long_row_count = 0;

    const uint64_t* key_valid = nullptr;  // [batch, kv_words]
    int32_t kv_words = 0;
    const void* bias = nullptr;  // bias[h * bias_sh + i * bias_ss + j]
    int64_t bias_sh = 0, bias_ss = 0;
    uint32_t* work_queue = nullptr;   // AttentionArgs::work_queue
    void* split_workspace = nullptr;  // AttentionArgs::split_workspace
    // Set by the Hopper kernel's launcher: the pieces of each long row that slice items walk
    // in other CTAs (0: none; needs split_workspace).
    int32_t slices = 0;
};

AttnParams make_params(const AttentionArgs& a);

// Launchers, defined in the per-(dtype, head_dim) translation units.
// block_m: 64 or 128 (checked by the caller).
template <ElemType E, int D> cudaError_t launch_block_wise(const AttnParams& p, int block_m, cudaStream_t stream);
template <ElemType E, int D> cudaError_t launch_row_wise(const AttnParams& p, cudaStream_t stream);

// The Hopper block-wise kernel (block_wise_sm90.cuh): cudaErrorNotSupported, launching
// nothing, when sm90_refusal gives a reason.
cudaError_t launch_block_wise_sm90(const AttnParams& p, ElemType e, int head_dim, cudaStream_t stream);
// "" when the Hopper kernel takes p on the current device, else why not: head_dim not 64
// or 128, a device not of compute capability 9.0, bitmaps not 16-byte aligned, or tensors
// a tensor map cannot describe.
std::string sm90_refusal(const AttnParams& p, ElemType e, int head_dim);
bool sm90_device();  // the current device has compute capability 9.0

}  // namespace stof::kernels::attn
