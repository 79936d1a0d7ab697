// Runs one attention configuration on the GPU and checks it against a dense CPU
// reference (double accumulation over the fp16/bf16-rounded inputs).
#pragma once

#include "stof/kernels/attention.hpp"
#include "test_rng.hpp"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace stof::test {

enum class Layout { bhsd, bshd };  // [batch, heads, seq, D] or [batch, seq, heads, D]

struct AttentionCase {
    int batch = 2, heads = 2, kv_heads = 2, seq_q = 64, seq_k = 64, head_dim = 64;
    kernels::ElemType dtype = kernels::ElemType::f16;
    Layout layout = Layout::bhsd;
    int out_gap = 0;            // extra elements after each output row (checked to stay untouched)
    std::vector<uint8_t> keep;  // [mask_batch, mask_heads, seq_q, seq_k], nonzero = keep
    int mask_batch = 1, mask_heads = 1, tile_m = 64;
    int fold = 0;                 // > 1: keep folds with this period (stof/mask_fold.hpp); run folded (launch_folded_attention)
    std::vector<int> valid_len;   // per batch: keys >= valid_len[b] invalid (empty: no key_valid)
    double invalid_fraction = 0;  // also drop this fraction of keys at random (needs valid_len)
    bool bias = false;            // random additive bias [heads, seq_q, seq_k]
    int bias_inf_row = -1;        // with bias: this query row gets -inf bias on every key
    kernels::AttentionKernel kernel = kernels::AttentionKernel::block_wise;
    int block_m = 0;
    int check_rows = -1;  // compare this many sampled rows per (b, h) (-1: all)
};

struct AttentionResult {
    double rel_error = 0, max_abs_error = 0;
    int64_t unwritten = 0;           // poisoned (NaN) outputs left, or non-finite ones
    int64_t gap_touched = 0;         // elements outside the output rows that changed
    int64_t nonzero_empty_rows = 0;  // rows with nothing kept whose output is not exactly zero
    std::string sm90_refusal;        // block_wise_sm90: why it ran block_wise ("": the Hopper kernel ran)
};

// Runs the case; REQUIREs every CUDA call to succeed.
AttentionResult run_attention_case(const AttentionCase& c, std::mt19937_64& rng);

// Tolerances for the element type: relative (Frobenius) and max-abs.
double rel_tolerance(kernels::ElemType t);
double abs_tolerance(kernels::ElemType t);

// Mask families, [rows, cols] keep arrays.
std::vector<uint8_t> mask_family(const std::string& name, int rows, int cols, std::mt19937_64& rng);
const std::vector<std::string>& mask_families();

}  // namespace stof::test
