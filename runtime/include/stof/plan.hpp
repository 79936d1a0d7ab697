// The in-memory form of a plan: what `stofc compile` produces and `stof-run`
// executes. plan_format.hpp defines how it is laid out in a file.
//
// Device memory: two buffers. `weights` holds every constant, uploaded once
// from Plan::weights. `arena` holds inputs, outputs and intermediates at
// offsets planned by liveness at compile time (Plan::arena_bytes long).
// Offsets are multiples of kAlignment.
#pragma once

#include "stof/dtype.hpp"
#include "stof/sparse_mask.hpp"
#include "stof/tensor.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace stof::plan {

constexpr uint64_t kAlignment = 256;

enum class BufferKind : uint8_t { arena = 0, weights = 1 };
enum class TensorRole : uint8_t { intermediate = 0, input = 1, output = 2, weight = 3 };

struct TensorDesc {
    std::string name;  // the IR value's name
    DType dtype = DType::undefined;
    Shape shape;
    BufferKind buffer = BufferKind::arena;
    uint64_t offset = 0;  // bytes into the buffer
    TensorRole role = TensorRole::intermediate;
    // Inputs only: valid integer range [lo, hi] for generated random inputs
    // (token ids: [0, vocab - 1]); lo > hi when unconstrained.
    int64_t int_lo = 1, int_hi = 0;

    uint64_t bytes() const { return static_cast<uint64_t>(numel(shape)) * dtype_size(dtype); }
};

// One NVRTC-compiled kernel. At least one of cubin / ptx is present; the
// runtime loads the cubin when its arch matches the device, else the PTX.
enum class ParamKind : uint8_t { pointer = 0, i32 = 1, i64 = 2, f32 = 3 };

struct KernelDesc {
    std::string key;    // readable and unique: "ew_f16_mul_add_gelu_b4_sm90"
    std::string entry;  // __global__ function name in the module
    std::string arch;   // "sm_90": the arch of `cubin`
    std::vector<uint8_t> cubin;
    std::string ptx;
    std::vector<ParamKind> params;  // the kernel's parameter list, in order
};

// A kernel argument: a tensor's device address (plus a byte offset) or a scalar.
struct Arg {
    ParamKind kind = ParamKind::pointer;
    int32_t tensor = -1;       // pointer: index into Plan::tensors
    uint64_t byte_offset = 0;  // pointer: added to the tensor's address
    int64_t i = 0;             // i32 / i64
    float f = 0;               // f32
};

struct LaunchStep {
    int32_t kernel = -1;  // index into Plan::kernels
    uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    uint32_t shared_bytes = 0;
    std::vector<Arg> args;  // matches KernelDesc::params
};

// D[b] = alpha * op(A[b]) op(B[b]) + beta * C[b], then the epilogue, through
// cuBLASLt. Matrices are row-major: op(A) is m×k, op(B) is k×n, C and D m×n.
// ld* are row strides in elements; batch_stride_* in elements (0 broadcasts).
// gelu is cuBLASLt's tanh approximation; bias_gelu_erf the exact GELU, x/2·(1 + erf(x/√2)),
// run by the fused kernel of kernels/gemm (compute capability 9.0; elsewhere cuBLASLt with
// a bias epilogue, then the GELU alone): one 16-bit GEMM, not batched or transposed, rows
// contiguous (lda = k, ldb = n, ldd = n), alpha 1, no C.
// swiglu gates the product's column pairs: d[i, j] = silu(p[i, 2j]) · p[i, 2j + 1] with p = A·B,
// silu(x) = x/(1 + e^(−x)) (B's columns alternate a gate's and an up projection's); d has n/2
// columns (ldd = n/2). Run by the fused kernel of kernels/gemm alone (compute capability 9.0;
// elsewhere the plan does not run), on the conditions of bias_gelu_erf but with no bias.
// rotary applies the rotary position embedding (rotate-half form) to the product's columns
// [0, rotary.cols) in heads of rotary.head_dim (stof/kernels/gemm_rotary.hpp): with p = A·B,
// e = c % head_dim, h = head_dim / 2 and position q = i % rotary.rows,
//   d[i, c] = p[i, c]·cos[q, e] − p[i, c + h]·sin[q, e]  (e < h),  p[i, c]·cos[q, e] + p[i, c − h]·sin[q, e]  (e ≥ h),
// d[i, c] = p[i, c] for c ≥ rotary.cols; cos and sin [rotary.rows, head_dim] tensors of d's
// dtype. Run by the fused kernel of kernels/gemm alone, on swiglu's conditions (ldd = n).
enum class Epilogue : uint8_t {
    none = 0,
    bias = 1,
    gelu = 2,
    bias_gelu = 3,
    relu = 4,
    bias_relu = 5,
    bias_gelu_erf = 6,
    swiglu = 7,
    rotary = 8
};

// The tables and extent of Epilogue::rotary (unused by other epilogues: all zero, tensors -1).
struct RotaryOperands {
    int32_t cos = -1, sin = -1;  // tensor indices of [rows, head_dim]
    int64_t rows = 0;            // positions: row i of the product takes position i % rows
    int64_t cols = 0;            // the product's columns [0, cols) are rotated; a multiple of head_dim
    int32_t head_dim = 0;        // 64 or 128
};

struct GemmStep {
    int32_t a = -1, b = -1, c = -1, d = -1, bias = -1;                // tensor indices; c, bias optional (-1)
    uint64_t a_offset = 0, b_offset = 0, c_offset = 0, d_offset = 0;  // byte offsets into the tensors
    bool trans_a = false, trans_b = false;
    int64_t m = 0, n = 0, k = 0, batch = 1;
    int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;
    int64_t batch_stride_a = 0, batch_stride_b = 0, batch_stride_c = 0, batch_stride_d = 0;
    float alpha = 1, beta = 0;
    Epilogue epilogue = Epilogue::none;  // bias: [n] broadcast over rows
    // Which of cuBLASLt's heuristic candidates for this GEMM (0: its first; < kGemmAlgos); with
    // a fused epilogue, which of the fused kernel's tile configurations (< fused_configs).
    uint8_t algo = 0;
    RotaryOperands rotary;
};

// Candidates a GemmStep::algo may pick from: for some shapes cuBLASLt 13's seventh is the
// fastest (BERT's and LLaMA's projections at 16-32k rows on the H100, by 5-17 %).
constexpr uint8_t kGemmAlgos = 8;
// The fused GEMMs' tile configurations (stof::kernels::kGemmGeluConfigs, kGemmSwigluConfigs,
// kGemmRotaryConfigs; the executor asserts that they agree).
constexpr uint8_t kGemmGeluConfigs = 2;
constexpr uint8_t kGemmSwigluConfigs = 2;
constexpr uint8_t kGemmRotaryConfigs = 2;
// Whether GemmStep::epilogue is run by a fused kernel of kernels/gemm, and its configurations.
constexpr bool fused_epilogue(Epilogue e) {
    return e == Epilogue::bias_gelu_erf || e == Epilogue::swiglu || e == Epilogue::rotary;
}
constexpr uint8_t fused_configs(Epilogue e) {
    return e == Epilogue::swiglu ? kGemmSwigluConfigs : e == Epilogue::rotary ? kGemmRotaryConfigs : kGemmGeluConfigs;
}

// Sparse multi-head attention on a prebuilt kernel (kernels/attention).
// q, o: [batch, heads, seq_q, head_dim]; k, v: [batch, kv_heads, seq_k, head_dim],
// each addressed as tensor + byte offset with element strides (b, h, s).
struct AttentionOperand {
    int32_t tensor = -1;
    uint64_t byte_offset = 0;
    int64_t stride_b = 0, stride_h = 0, stride_s = 0;
};

struct AttentionStep {
    AttentionOperand q, k, v, o;
    int32_t batch = 0, heads = 0, kv_heads = 0, seq_q = 0, seq_k = 0, head_dim = 0;
    float scale = 1;
    int32_t mask = -1;       // index into Plan::masks (a run-time one after the mask_convert step that fills it)
    int32_t key_valid = -1;  // tensor of [batch, ceil(seq_k/64)] u64 validity words, or -1
    int32_t bias = -1;       // tensor of additive bias (dtype of q), or -1
    int64_t bias_stride_h = 0, bias_stride_s = 0;
    int32_t kernel = 0;  // 0 block-wise, 1 row-wise, 2 block-wise sm_90 (stof::kernels::AttentionKernel)
    // > 1: the mask is the keep pattern folded with this period (stof/mask_fold.hpp),
    // [seq_q / fold, seq_k / fold], run by kernels::launch_folded_attention; key_valid words
    // of a KeyValidStep of the same fold; the bias as its residue blocks (that function's layout).
    int32_t fold = 1;
};

// Packs a [batch, seq] padding mask (any integer or bool dtype, nonzero = valid)
// into the u64 validity words an AttentionStep reads: [batch, ceil(seq / 64)], or for the
// attention steps of that fold [fold, batch, ceil(seq / fold / 64)] (kernels::launch_key_valid).
struct KeyValidStep {
    int32_t mask = -1, words = -1;  // tensor indices
    int32_t batch = 0, seq = 0;
    int32_t fold = 1;
};

// Converts a dense keep tensor that arrives at run time (bool, contiguous
// [mask_batch, mask_heads, rows, cols] of the run-time mask entry, nonzero = keep)
// into that entry's two-level sparse mask, on the GPU, every run.
struct MaskConvertStep {
    int32_t keep = -1;  // tensor index
    int32_t mask = -1;  // index into Plan::masks; a run-time entry
};

struct CopyStep {
    int32_t src = -1, dst = -1;
    uint64_t src_offset = 0, dst_offset = 0, bytes = 0;
};

enum class StepKind : uint8_t { launch = 0, gemm = 1, attention = 2, key_valid = 3, copy = 4, mask_convert = 5 };

struct Step {
    StepKind kind = StepKind::launch;
    std::string label;  // for inspect and profiles: what it computes ("fused", "gemm", ...)
    std::string nodes;  // the IR nodes it implements, comma-separated
    LaunchStep launch;
    GemmStep gemm;
    AttentionStep attention;
    KeyValidStep key_valid;
    CopyStep copy;
    MaskConvertStep mask_convert;
};

struct MaskEntry {
    std::string spec;  // the mask spec or a description of its origin
    // Run time: filled on the GPU by a mask_convert step every run; `mask` holds only
    // rows, cols, tile_m, tile_n, mask_batch and mask_heads (no arrays).
    bool runtime = false;
    SparseMask mask;
    std::string kernel_reason;  // why the selector chose the kernel
};

struct Meta {
    std::string model;  // source model file name
    std::string stofc_version;
    std::string target_arch;    // "sm_90"
    std::string nvrtc_version;  // "13.0"
    std::string precision;      // "fp32" | "fp16" | "bf16"
    std::string created;        // ISO-8601 UTC
    std::string notes;          // free text (compile options)
};

// One fusion segment: which ops run together, with what, and why (stofc inspect).
struct SegmentInfo {
    std::string kind;    // "elementwise", "rownorm", "gemm", "attention", ...
    std::string templ;   // the template or library that runs it ("elementwise", "rownorm", "cublasLt", ...)
    std::string config;  // its launch parameters ("block=256,grid=8192"; "default")
    std::string source;  // how they were chosen: "measured", "cache", "model" or "rule"
    float time_us = -1;  // the time they were chosen by (measured or estimated); -1: none
    std::string moves;   // the fusion moves that formed it, "; "-separated
    std::string nodes;   // its IR nodes, comma-separated
    // stofc compile --tune-sweep: every config of the segment's kernel timed (sweep_space 0:
    // not swept; then the other fields are -1 and empty).
    uint32_t sweep_space = 0;  // configs timed
    float stage2_us = -1;      // stage 2's choice and its time
    std::string stage2_config;
    float sweep_us = -1;  // the fastest config and its time
    std::string sweep_config;
};

// A plan for a range of input shapes (stofc compile --shape NAME=MIN..MAX): one static
// plan per shape bucket. Each shape variable (a symbolic dimension such as "seq", or
// one dimension of one input, "input_ids[1]") takes any size in [min, max] at run time;
// its buckets are the powers of two in [min, max) and max (bucket_sizes). The runtime
// runs the smallest bucket that holds the actual sizes: inputs zero-padded up to it,
// outputs cut back to the actual sizes (stof/shape_ranges.hpp).
struct ShapeVar {
    std::string name;
    int64_t min = 1, max = 1;
};

struct ShapeRanges {
    std::vector<ShapeVar> vars;
    // Per model input / output (in Plan::inputs / outputs order), per dimension: the
    // index of the shape variable that dimension follows, or -1 (fixed).
    std::vector<std::vector<int32_t>> input_dims, output_dims;
    // Per bucket (Plan::buckets), the size of each variable.
    std::vector<std::vector<int64_t>> bucket_values;
};

struct Plan {
    Meta meta;
    std::vector<TensorDesc> tensors;
    uint64_t arena_bytes = 0;
    std::vector<int32_t> inputs, outputs;  // tensor indices, in model order
    std::vector<KernelDesc> kernels;
    std::vector<MaskEntry> masks;
    std::vector<Step> steps;
    std::vector<SegmentInfo> segments;  // the fusion plan the steps were lowered from
    std::vector<uint8_t> weights;       // contents of the weights buffer
    // A timing plan of the tuning worker (codegen::LowerOptions::placeholder_weights): the
    // weight tensors listed here carry no contents; they lie in the weights buffer past
    // `weights` (from weights.size() rounded up to kAlignment), which is then
    // placeholder_end bytes long, and the tuning worker fills them with placeholder values
    // (tune/measure.hpp). Every other runtime refuses such a plan. Empty and 0 otherwise.
    std::vector<int32_t> placeholders;
    uint64_t placeholder_end = 0;
    // A plan for shape ranges: the variables and one static plan per bucket (the fields
    // above other than meta are then empty). A static plan: no variables, no buckets.
    ShapeRanges ranges;
    std::vector<Plan> buckets;

    bool ranged() const { return !buckets.empty(); }
    bool has_placeholders() const { return !placeholders.empty(); }
    // The weights buffer's size on the device.
    uint64_t weights_bytes() const { return placeholders.empty() ? weights.size() : placeholder_end; }
};

// The tensors step s reads or writes (absent optional ones left out), in no particular order.
std::vector<int32_t> step_tensors(const Step& s);
// Whether tensor `t` is a padding mask: read by a key_valid step (nonzero = the key is valid).
bool is_padding_mask(const Plan& p, int32_t t);

// "launch", "gemm", "attention", "key_valid", "copy", "mask_convert" and "none", "bias", "gelu", ...
const char* step_kind_name(StepKind k);
const char* epilogue_name(Epilogue e);
// The fused kernel of kernels/gemm running epilogue e ("gemm_gelu", "gemm_swiglu", "gemm_rotary"),
// "cublasLt" when e is not fused_epilogue.
const char* fused_gemm_kernel_name(Epilogue e);
// "attention_block_wise" / "attention_row_wise" / "attention_block_wise_sm90" (AttentionStep::kernel 0 / 1 / 2).
const char* attention_kernel_name(int32_t kernel);
// What a step is, for listings and profiles: its label, else its kind's name in
// words ("sparse_attention" for attention); and the kernel that runs it (the
// launch's kernel key, "cublasLt", "gemm_gelu" for the fused GEMM, an attention kernel, "memcpy", ...).
std::string step_label(const Step& s);
std::string step_kernel_name(const Plan& p, const Step& s);

// Why a plan with placeholder weights does not run (the runtime's error).
constexpr const char* kPlaceholderRefusal =
    "the plan has placeholder weights: it is a timing plan of stofc's tuning worker, not a compiled model; "
    "run a plan written by stofc compile";

// Checks every index, offset, size and shape in `p` against the rest of the
// plan (tensors inside their buffers, kernel args matching params, ...); a ranged
// plan: every bucket, and its inputs and outputs against the shape ranges.
// Throws stof::Error naming the section ("schedule step 12: ...").
void validate(const Plan& p);

}  // namespace stof::plan
