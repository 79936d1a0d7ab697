/* stof C API (libstof.so): run stofc plans and the prebuilt kernels from C.
 *
 * Every function returns a stof_status; on failure stof_last_error() gives a
 * one-line message. No function aborts the process. Strings and arrays handed
 * out stay valid while the object they describe is open.
 *
 * Installed with the project (`cmake --install`): `find_package(stof)` gives the
 * imported target stof::stof (this header and libstof.so). A `void* stream` is a
 * cudaStream_t; this header needs no CUDA header. */
#ifndef STOF_C_API_H
#define STOF_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define STOF_API __attribute__((visibility("default")))
#else
#define STOF_API
#endif

/* ---- status --------------------------------------------------------------- */

typedef enum stof_status {
    STOF_OK = 0,
    STOF_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, an index out of range, a size that does not match */
    STOF_ERROR_OUT_OF_MEMORY = 2,    /* host or device memory exhausted */
    STOF_ERROR_CUDA = 3,             /* a CUDA runtime, driver or cuBLASLt call failed */
    STOF_ERROR_NO_DEVICE = 4,        /* no CUDA device or no usable driver */
    STOF_ERROR_PLAN = 5,             /* a plan file that cannot be read, is damaged or of another format version */
    STOF_ERROR_INTERNAL = 6          /* an unexpected failure inside stof */
} stof_status;

/* The message of the calling thread's last failed call. Valid until the
 * thread's next stof call. (Implementation files record it with
 * stof::capi::set_last_error, runtime/src/c_api_status.hpp.) */
STOF_API const char* stof_last_error(void);

/* The library's version, "MAJOR.MINOR.PATCH". */
STOF_API const char* stof_version(void);

/* ---- plans ---------------------------------------------------------------- */

/* Element types; the values are stof::DType's (stof/dtype.hpp). */
typedef enum stof_dtype {
    STOF_DTYPE_F32 = 1,
    STOF_DTYPE_F16 = 2,
    STOF_DTYPE_BF16 = 3,
    STOF_DTYPE_F64 = 4,
    STOF_DTYPE_I64 = 5,
    STOF_DTYPE_I32 = 6,
    STOF_DTYPE_I8 = 7,
    STOF_DTYPE_U8 = 8,
    STOF_DTYPE_BOOL = 9
} stof_dtype;

typedef struct stof_plan stof_plan;

/* A model input or output: row-major, `bytes` = product(dims) * element size. */
typedef struct stof_tensor_info {
    const char* name;
    int32_t dtype; /* stof_dtype */
    int32_t rank;
    const int64_t* dims; /* rank entries */
    size_t bytes;
} stof_tensor_info;

/* Opens the plan file `path` on CUDA device `device`: reads and checks it, loads
 * its kernels, allocates device memory and uploads the weights. */
STOF_API stof_status stof_plan_open(const char* path, int device, stof_plan** out);
/* Frees everything the plan holds; null is ignored. */
STOF_API void stof_plan_close(stof_plan* plan);

STOF_API stof_status stof_plan_num_inputs(const stof_plan* plan, size_t* count);
STOF_API stof_status stof_plan_num_outputs(const stof_plan* plan, size_t* count);
STOF_API stof_status stof_plan_input_info(const stof_plan* plan, size_t index, stof_tensor_info* info);
STOF_API stof_status stof_plan_output_info(const stof_plan* plan, size_t index, stof_tensor_info* info);
/* Index of the input / output called `name`. */
STOF_API stof_status stof_plan_find_input(const stof_plan* plan, const char* name, size_t* index);
STOF_API stof_status stof_plan_find_output(const stof_plan* plan, const char* name, size_t* index);

/* Shape ranges. A plan compiled with --shape NAME=MIN..MAX runs any shape in its
 * ranges. stof_plan_input_info / stof_plan_output_info give the actual shapes (at
 * first every range's minimum; the dims pointers stay valid until the next
 * stof_plan_set_input_shape). stof_plan_set_input_shape sets input `index`'s actual
 * shape, which also sets the other inputs' and the outputs' dimensions that follow
 * the same ranges (a seq range shared by input_ids and attention_mask); then set the
 * inputs' contents. A shape outside the ranges, or another shape for a static plan,
 * is STOF_ERROR_INVALID_ARGUMENT. A run picks the smallest compiled bucket that holds
 * the shapes: inputs and outputs of exactly the bucket's shape are bound in place (no
 * copy, as in a plan compiled for that shape), the others are padded with zeros into it
 * and cut back (one kernel launch each way). */
STOF_API stof_status stof_plan_set_input_shape(stof_plan* plan, size_t index, int32_t rank, const int64_t* dims);
/* The number of shape variables (0: a static plan) and buckets (1 for a static plan),
 * and the bucket the current shapes run on; null outputs are skipped. */
STOF_API stof_status stof_plan_shape_ranges(const stof_plan* plan, size_t* num_vars, size_t* num_buckets, size_t* bucket);

/* Asynchronous runs on device memory and a caller's stream.
 *
 * stof_plan_enqueue enqueues one run on `stream` (a cudaStream_t of the plan's
 * device; null = the legacy default stream) and returns without waiting.
 * `inputs` holds one address per input (num_inputs entries): device, managed or
 * page-locked host memory holding the input row-major in its dtype
 * (stof_tensor_info.bytes bytes); each is copied into the plan's memory on the
 * stream before the steps. `outputs` (num_outputs entries) receive the outputs
 * the same way after them. A null array, or a null entry, means the plan's own
 * buffer (stof_plan_input_address / stof_plan_output_address): write inputs
 * there and read outputs from there to avoid the copies. The caller keeps its
 * buffers alive and unchanged until the stream has passed the run.
 * use_graph != 0 replays a CUDA graph of the steps (captured on the first such
 * run). A plan's runs share its memory: a run enqueued on another stream than
 * the previous one first waits (on the GPU) for that one; a plan is not for
 * concurrent use from several threads. Errors in arguments and launches are
 * reported here; errors during execution surface at the caller's next
 * synchronisation. */
STOF_API stof_status stof_plan_enqueue(stof_plan* plan, const void* const* inputs, void* const* outputs, int use_graph,
                                       void* stream);
/* Device address of the plan's buffer for input / output `index`; valid until the plan is
 * closed (a plan for shape ranges: until the next stof_plan_set_input_shape). */
STOF_API stof_status stof_plan_input_address(const stof_plan* plan, size_t index, void** address);
STOF_API stof_status stof_plan_output_address(const stof_plan* plan, size_t index, void** address);

/* Synchronous convenience calls on host memory (the plan's own stream). */

/* Copies `bytes` bytes of host memory (exactly the input's size) into input `index`. */
STOF_API stof_status stof_plan_set_input(stof_plan* plan, size_t index, const void* data, size_t bytes);
/* Runs every step and waits for the result; use_graph != 0 replays a CUDA
 * graph (captured on the first such run; same results as plain launches). */
STOF_API stof_status stof_plan_run(stof_plan* plan, int use_graph);
/* Copies output `index` (exactly `bytes` bytes) into host memory. */
STOF_API stof_status stof_plan_get_output(stof_plan* plan, size_t index, void* data, size_t bytes);

/* ---- sparse attention ------------------------------------------------------ */
/* The prebuilt sparse attention kernels (kernels/attention/README.md) on caller
 * memory, e.g. torch tensors through ctypes. Device pointers and streams belong
 * to the calling thread's current CUDA device. */

/* A sparse attention mask (stof/sparse_mask.hpp) uploaded to the current device. */
typedef struct stof_mask stof_mask;

/* Uploads a mask given its host arrays (copied, validated first). Sizes:
 * row_ptr [mask_batch * mask_heads * (ceil(rows / tile_m) + 1)], col_idx and
 * bitmap_idx [nnz_tiles], bitmaps [bitmap_words]. Synchronous. */
STOF_API stof_status stof_mask_create(int32_t rows, int32_t cols, int32_t tile_m, int32_t tile_n, int32_t mask_batch,
                                      int32_t mask_heads, const int32_t* row_ptr, size_t row_ptr_len, const int32_t* col_idx,
                                      const int32_t* bitmap_idx, size_t nnz_tiles, const uint64_t* bitmaps, size_t bitmap_words,
                                      stof_mask** out);
/* Builds and uploads the mask of a dense host keep array (nonzero = keep) of shape
 * [mask_batch, mask_heads, rows, cols], row-major. Synchronous. A mask that keeps (i, j)
 * only where i and j are congruent modulo a period p, with one pattern for every residue
 * (strided masks; stof/mask_fold.hpp), is also stored folded: stof_attention then runs it as
 * attention over rows / p queries per residue, unless it is given key_valid or a bias. */
STOF_API stof_status stof_mask_from_dense(const uint8_t* keep, int32_t mask_batch, int32_t mask_heads, int32_t rows,
                                          int32_t cols, int32_t tile_m, int32_t tile_n, stof_mask** out);
/* Frees the mask (no kernel may still read it); null is ignored. */
STOF_API void stof_mask_destroy(stof_mask* mask);
/* The period p of the mask's folded form (stof_mask_from_dense); 1: it has none. */
STOF_API stof_status stof_mask_get_fold(const stof_mask* mask, int32_t* period);

typedef struct stof_mask_stats {
    int32_t rows, cols, tile_m, tile_n, mask_batch, mask_heads;
    int64_t nnz;    /* kept entries, all patterns */
    double density; /* nnz / (patterns * rows * cols) */
    int64_t empty_tiles, full_tiles, partial_tiles;
    double rho; /* non-empty 16x16 tiles / all 16x16 tiles: the selector's input */
} stof_mask_stats;
STOF_API stof_status stof_mask_get_stats(const stof_mask* mask, stof_mask_stats* out);

/* BLOCK_WISE_SM90: the Hopper kernel (head_dim 64 and 128 on compute capability 9.0;
 * elsewhere it runs BLOCK_WISE). AUTO runs it wherever the selector picks block-wise. */
enum { STOF_KERNEL_AUTO = -1, STOF_KERNEL_BLOCK_WISE = 0, STOF_KERNEL_ROW_WISE = 1, STOF_KERNEL_BLOCK_WISE_SM90 = 2 };

/* A strided 4-D device tensor [batch, heads, seq, head_dim]; strides in elements,
 * the head_dim stride is 1. */
typedef struct stof_attn_tensor {
    void* data;
    int64_t stride_b, stride_h, stride_s;
} stof_attn_tensor;

/* O = softmax(scale * Q K^T + bias over the mask's kept, valid keys) V.
 * q, o: [batch, heads, seq_q, head_dim]; k, v: [batch, kv_heads, seq_k, head_dim]. */
typedef struct stof_attention_params {
    int32_t dtype; /* STOF_DTYPE_F16 or STOF_DTYPE_BF16 */
    int32_t batch, heads, kv_heads, seq_q, seq_k, head_dim;
    stof_attn_tensor q, k, v, o;
    float scale;
    const stof_mask* mask;     /* rows == seq_q, cols == seq_k */
    const uint64_t* key_valid; /* device [batch, ceil(seq_k / 64)] bit words, or null */
    const void* bias;          /* device, dtype: bias[h * bias_stride_h + i * bias_stride_s + j], or null */
    int64_t bias_stride_h, bias_stride_s;
    int32_t kernel;  /* STOF_KERNEL_*; AUTO: the selector on the mask's rho */
    int32_t block_m; /* block-wise query rows per CTA: 0 = auto, 64 or 128 */
} stof_attention_params;

/* Launches one kernel on `stream` (a cudaStream_t; null = the default stream), or one per
 * residue for a folded mask whose tensors cannot be viewed as one problem;
 * no synchronisation: launch errors are reported, execution errors surface later.
 * The Hopper kernel's CTAs draw their work from a queue the mask holds: calls with one mask
 * must not run at the same time (enqueue them on one stream, or use a mask per stream). */
STOF_API stof_status stof_attention(const stof_attention_params* params, void* stream);
/* The kernel the selector picks (STOF_KERNEL_BLOCK_WISE / _ROW_WISE) for the mask at key length seq_k. */
STOF_API stof_status stof_attention_select(const stof_mask* mask, int32_t seq_k, int32_t* kernel);
/* The same for a given rho; and the selector's calibrated tau. */
STOF_API int32_t stof_attention_select_rho(double rho, int32_t seq_k);
STOF_API double stof_attention_selector_tau(void);

#ifdef __cplusplus
}
#endif

#endif /* STOF_C_API_H */
