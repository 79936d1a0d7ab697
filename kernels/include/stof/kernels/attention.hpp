// Sparse multi-head attention kernels: the launch interface.
//
//   O[b, h, i, :] = sum_j P[i, j] V[b, h_kv, j, :],
//   P[i, :] = softmax over kept j of (scale * Q[b, h, i, :] · K[b, h_kv, j, :] + bias[h, i, j])
// with h_kv = h / (heads / kv_heads) (grouped-query attention), keep(i, j) =
// mask pattern of (b, h) at (i, j) AND key j valid for batch b. A row with no
// kept key outputs zeros. Accumulation in fp32; inputs and output fp16 or bf16.
// See kernels/attention/README.md for the full contract.
#pragma once

#include "stof/kernels/attention_instances.hpp"
#include "stof/kernels/elem_type.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

namespace stof::kernels {

inline constexpr int kMaskLongRows = 4;                          // SparseMaskView::long_rows
inline constexpr size_t kAttentionSplitBytes = size_t{5} << 20;  // AttentionArgs::split_workspace

// Device view of a stof::SparseMask (stof/sparse_mask.hpp); arrays in device memory.
struct SparseMaskView {
    const int32_t* row_ptr = nullptr;
    const int32_t* col_idx = nullptr;
    const int32_t* bitmap_idx = nullptr;
    const uint64_t* bitmaps = nullptr;
    int32_t rows = 0, cols = 0, tile_m = 64, tile_n = 64, mask_batch = 1, mask_heads = 1;
    float fill3 = 0.f;  // stof::grouped_row_fill(mask, 3); 0 when not known
    // stof::tile_row_lengths(mask): the most tiles a tile row lists and the mean; 0 when not known
    int32_t longest_row = 0;
    float mean_row = 0.f;
    // stof::tile_row_lengths(mask).long_rows: tile rows that list many times the mean; -1 past them
    int32_t long_rows[kMaskLongRows] = {-1, -1, -1, -1};
};

// A strided 4-D tensor [batch, heads, seq, head_dim]; strides in elements, the
// head_dim stride is 1. [B,S,H,D] and [B,H,S,D] layouts are both expressible.
struct AttnTensor {
    void* data = nullptr;
    int64_t stride_b = 0, stride_h = 0, stride_s = 0;
};

struct AttentionArgs {
    ElemType dtype = ElemType::f16;
    int32_t batch = 0, heads = 0, kv_heads = 0, seq_q = 0, seq_k = 0, head_dim = 0;
    AttnTensor q, k, v, o;  // q, o: [batch, heads, seq_q, D]; k, v: [batch, kv_heads, seq_k, D]
    float scale = 1.0f;
    SparseMaskView mask;  // rows == seq_q, cols == seq_k
    // Optional per-key validity (padding): [batch, ceil(seq_k / 64)] words; bit j % 64 of
    // word j / 64 set = key j valid. nullptr: every key valid.
    const uint64_t* key_valid = nullptr;
    // Optional additive bias of dtype `dtype`, broadcast over batch:
    // bias[h * bias_stride_h + i * bias_stride_s + j]. nullptr: none.
    const void* bias = nullptr;
    int64_t bias_stride_h = 0, bias_stride_s = 0;
    // block_wise_sm90 (required there): two 32-bit words of device memory, zero before the
    // launch and zero again after it, from which the Hopper kernel's CTAs draw their work.
    // Launches that may run at the same time need their own words; launches one after another
    // on a stream can share them.
    uint32_t* work_queue = nullptr;
    // block_wise_sm90, optional: kAttentionSplitBytes of device memory, 16-byte aligned and
    // zero-filled before the first launch that uses it (a launch leaves its first KiB zero for
    // the next), where CTAs leave their parts of the mask's long rows (SparseMaskView::long_rows)
    // for the CTA that owns each; nullptr: a long row stays in one CTA. Launches one after
    // another on a stream can share it.
    void* split_workspace = nullptr;
    // Block-wise kernel only: query rows per CTA, 64 or 128 (128 also walks two 64-row
    // mask tile rows at once); 0 picks by problem size. A tile_m = 128 mask needs 128.
    // block_wise_sm90 picks 128 or 192 rows per CTA itself; block_m = 64 makes it run block_wise.
    int32_t block_m = 0;
};

// block_wise: the sm_80 kernel (mma.sync, cp.async), every head dim.
// row_wise: one warp per query row.
// block_wise_sm90: the Hopper kernel (TMA, wgmma, warp specialisation) on compute
//   capability 9.0, every head dim on its instance of 64 or 128 (sm90_instance_head_dim);
//   where attention_sm90_refusal gives a reason it runs block_wise. Same contract and
//   arguments as block_wise.
enum class AttentionKernel : int32_t { block_wise = 0, row_wise = 1, block_wise_sm90 = 2 };

// True when block_wise_sm90 runs the Hopper kernel for `head_dim` on the current device.
bool attention_sm90_available(int32_t head_dim);
// "" when block_wise_sm90 runs the Hopper kernel for `a` (valid arguments) on the current
// device, else why it runs block_wise instead (block_m 64, another GPU, tensors a tensor map
// cannot describe).
std::string attention_sm90_refusal(const AttentionArgs& a);

// "" when the kernels support these arguments, else what is wrong with them.
std::string check_attention_args(const AttentionArgs& a, AttentionKernel kernel);

// Launches one kernel on `stream`. Invalid arguments return cudaErrorInvalidValue
// (call check_attention_args for the reason); launch failures return the CUDA error.
cudaError_t launch_attention(const AttentionArgs& a, AttentionKernel kernel, cudaStream_t stream);

// Attention under a mask folded with period p (stof/mask_fold.hpp); queries i'p + r attend
// keys j'p + r. a.mask is the folded mask ([seq_q / p, seq_k / p]); a.key_valid is null or
// in the folded layout of launch_key_valid ([p, batch, ceil(seq_k / p / 64)] words); a.bias
// is null or folded too: p residue blocks one after the other, block r holding
// bias(h, i'p + r, j'p + r) at h * bias_stride_h + i' * bias_stride_s + j' (blocks
// heads * bias_stride_h elements apart, or seq_q / p * bias_stride_s when bias_stride_h is 0).
// Without a bias it runs as one problem: without key_valid, with p times the heads
// (residue-major) when every tensor's row stride is heads (kv_heads for k, v) times its head
// stride ([b, s, h, d]) and the mask is one pattern per batch; else, at batch 1 with one
// pattern per head, with the residues as the batch; else, without key_valid, with
// (batch, head) pairs as the batch and the residues as the heads when heads == kv_heads, the
// mask is one pattern and every tensor's batch stride is heads times its head stride. Else,
// and with a bias, as p problems, one per residue.
std::vector<AttentionArgs> folded_attention_problems(const AttentionArgs& a, int32_t p);
// "" when a folded launch supports these arguments, else what is wrong with them.
std::string check_folded_attention_args(const AttentionArgs& a, AttentionKernel kernel, int32_t p);
// Launches the problems of folded_attention_problems on `stream`; invalid arguments return
// cudaErrorInvalidValue (call check_folded_attention_args for the reason).
cudaError_t launch_folded_attention(const AttentionArgs& a, AttentionKernel kernel, int32_t p, cudaStream_t stream);

// The analytical selector: row-wise when rho - tau / log2(seq / 16)^2 < 0, where
// rho = non-empty 16x16 tiles / all 16x16 tiles (stof::mask_stats().rho).
// tau is calibrated on the GPU by tools/bench/calibrate_selector.py (kernels/attention/README.md records how).
double attention_selector_tau();
AttentionKernel select_attention_kernel(double rho, int32_t seq_k, double tau = attention_selector_tau());

}  // namespace stof::kernels
