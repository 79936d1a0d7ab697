// The sparse attention part of the C API (stof/c_api.h): masks on the device and
// the attention launch.
#include "c_api_status.hpp"
#include "stof/c_api.h"
#include "stof/error.hpp"
#include "stof/kernels/attention.hpp"
#include "stof/mask_fold.hpp"
#include "stof/sparse_mask.hpp"

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

// A mask that folds (stof/mask_fold.hpp) also holds its folded form, which stof_attention
// runs when the arguments allow (no key_valid, no bias).
struct stof_mask {
    stof::SparseMask shape;  // sizes and tiling only; the arrays live on the device
    stof::SparseMaskStats stats;
    void* device_buffer = nullptr;
    stof::kernels::SparseMaskView view;
    int32_t fold = 1;  // the period of the folded form; 1: none
    stof::SparseMaskStats folded_stats;
    void* folded_buffer = nullptr;
    stof::kernels::SparseMaskView folded_view;
    uint32_t* work_queue = nullptr;   // of the Hopper kernel (AttentionArgs::work_queue), zeroed
    void* split_workspace = nullptr;  // AttentionArgs::split_workspace, where the mask has long rows
};

namespace {

using stof::capi::InvalidArgument;

struct CudaFailure {
    cudaError_t error;
    std::string what;
};

// Runs f like capi::guard (a stof::Error is the caller's mistake here), also
// turning a CudaFailure into STOF_ERROR_CUDA / STOF_ERROR_OUT_OF_MEMORY.
template <class F> stof_status guarded(F&& f) noexcept {
    CudaFailure cuda{cudaSuccess, {}};
    const stof_status s = stof::capi::guard(STOF_ERROR_INVALID_ARGUMENT, [&] {
        try {
            f();
        } catch (const CudaFailure& c) {
            cuda = c;
        }
    });
    if (s != STOF_OK || cuda.error == cudaSuccess) return s;
    stof::capi::set_last_error(cuda.what + ": " + cudaGetErrorName(cuda.error) + " (" + cudaGetErrorString(cuda.error) + ")");
    return cuda.error == cudaErrorMemoryAllocation ? STOF_ERROR_OUT_OF_MEMORY : STOF_ERROR_CUDA;
}

void cuda_check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw CudaFailure{e, what};
}

size_t round_up(size_t n) { return (n + 255) / 256 * 256; }

// Copies m's arrays into one device allocation (*buffer, freed by the caller); m is
// validated by the caller. The view of the copy.
stof::kernels::SparseMaskView upload_arrays(const stof::SparseMask& m, void** buffer) {
    const size_t b_row = m.row_ptr.size() * sizeof(int32_t), b_col = m.col_idx.size() * sizeof(int32_t),
                 b_bmi = m.bitmap_idx.size() * sizeof(int32_t), b_bm = m.bitmaps.size() * sizeof(uint64_t);
    const size_t o_col = round_up(b_row), o_bmi = o_col + round_up(b_col), o_bm = o_bmi + round_up(b_bmi);
    const size_t total = o_bm + round_up(b_bm);
    cuda_check(cudaMalloc(buffer, total > 0 ? total : 256), "stof_mask: cudaMalloc");
    auto* base = static_cast<unsigned char*>(*buffer);
    const struct {
        size_t off, bytes;
        const void* src;
    } parts[] = {{0, b_row, m.row_ptr.data()},
                 {o_col, b_col, m.col_idx.data()},
                 {o_bmi, b_bmi, m.bitmap_idx.data()},
                 {o_bm, b_bm, m.bitmaps.data()}};
    for (const auto& part : parts)
        if (part.bytes)
            cuda_check(cudaMemcpy(base + part.off, part.src, part.bytes, cudaMemcpyHostToDevice), "stof_mask: cudaMemcpy");
    stof::kernels::SparseMaskView v;
    v.row_ptr = reinterpret_cast<const int32_t*>(base);
    v.col_idx = reinterpret_cast<const int32_t*>(base + o_col);
    v.bitmap_idx = reinterpret_cast<const int32_t*>(base + o_bmi);
    v.bitmaps = reinterpret_cast<const uint64_t*>(base + o_bm);
    v.rows = m.rows;
    v.cols = m.cols;
    v.tile_m = m.tile_m;
    v.tile_n = m.tile_n;
    v.mask_batch = m.mask_batch;
    v.mask_heads = m.mask_heads;
    v.fill3 = static_cast<float>(stof::grouped_row_fill(m, 3));
    const stof::TileRowLengths lengths = stof::tile_row_lengths(m);
    v.longest_row = lengths.longest;
    v.mean_row = static_cast<float>(lengths.mean);
    static_assert(stof::kLongRows == stof::kernels::kMaskLongRows);
    std::copy(lengths.long_rows.begin(), lengths.long_rows.end(), v.long_rows);
    return v;
}

// The device mask of m, and of its folded form when fold.period > 1.
stof_mask* upload(stof::SparseMask&& m, const stof::MaskFold& fold = {}) {
    auto h = std::make_unique<stof_mask>();
    const auto free_buffers = [&] {
        cudaFree(h->device_buffer);
        cudaFree(h->folded_buffer);
        cudaFree(h->work_queue);
        cudaFree(h->split_workspace);
    };
    try {
        cuda_check(cudaMalloc(&h->work_queue, 2 * sizeof(uint32_t)), "stof_mask: cudaMalloc");
        cuda_check(cudaMemset(h->work_queue, 0, 2 * sizeof(uint32_t)), "stof_mask: cudaMemset");
        h->stats = stof::mask_stats(m);
        h->view = upload_arrays(m, &h->device_buffer);
        if (fold.period > 1) {
            h->fold = fold.period;
            h->folded_stats = stof::mask_stats(fold.mask);
            h->folded_view = upload_arrays(fold.mask, &h->folded_buffer);
        }
        if (h->view.long_rows[0] >= 0 || (fold.period > 1 && h->folded_view.long_rows[0] >= 0)) {
            cuda_check(cudaMalloc(&h->split_workspace, stof::kernels::kAttentionSplitBytes), "stof_mask: cudaMalloc");
            cuda_check(cudaMemset(h->split_workspace, 0, stof::kernels::kAttentionSplitBytes), "stof_mask: cudaMemset");
        }
    } catch (...) {
        free_buffers();
        throw;
    }
    m.row_ptr = {};
    m.col_idx = {};
    m.bitmap_idx = {};
    m.bitmaps = {};
    h->shape = std::move(m);
    return h.release();
}

stof::kernels::AttnTensor tensor(const stof_attn_tensor& t) { return {t.data, t.stride_b, t.stride_h, t.stride_s}; }

}  // namespace

extern "C" {

stof_status stof_mask_create(int32_t rows, int32_t cols, int32_t tile_m, int32_t tile_n, int32_t mask_batch, int32_t mask_heads,
                             const int32_t* row_ptr, size_t row_ptr_len, const int32_t* col_idx, const int32_t* bitmap_idx,
                             size_t nnz_tiles, const uint64_t* bitmaps, size_t bitmap_words, stof_mask** out) {
    return guarded([&] {
        if (!out) throw InvalidArgument{"stof_mask_create: out is null"};
        *out = nullptr;
        if ((row_ptr_len && !row_ptr) || (nnz_tiles && (!col_idx || !bitmap_idx)) || (bitmap_words && !bitmaps))
            throw InvalidArgument{"stof_mask_create: a non-empty array is null"};
        stof::SparseMask m;
        m.rows = rows;
        m.cols = cols;
        m.tile_m = tile_m;
        m.tile_n = tile_n;
        m.mask_batch = mask_batch;
        m.mask_heads = mask_heads;
        if (row_ptr_len) m.row_ptr.assign(row_ptr, row_ptr + row_ptr_len);
        if (nnz_tiles) {
            m.col_idx.assign(col_idx, col_idx + nnz_tiles);
            m.bitmap_idx.assign(bitmap_idx, bitmap_idx + nnz_tiles);
        }
        if (bitmap_words) m.bitmaps.assign(bitmaps, bitmaps + bitmap_words);
        m.validate();
        *out = upload(std::move(m));
    });
}

stof_status stof_mask_from_dense(const uint8_t* keep, int32_t mask_batch, int32_t mask_heads, int32_t rows, int32_t cols,
                                 int32_t tile_m, int32_t tile_n, stof_mask** out) {
    return guarded([&] {
        if (!out) throw InvalidArgument{"stof_mask_from_dense: out is null"};
        *out = nullptr;
        if (mask_batch < 1 || mask_heads < 1 || rows < 0 || cols < 0)
            throw InvalidArgument{"stof_mask_from_dense: invalid shape"};
        if (!keep && static_cast<int64_t>(rows) * cols > 0) throw InvalidArgument{"stof_mask_from_dense: keep is null"};
        stof::SparseMask m = stof::from_dense(keep, mask_batch, mask_heads, rows, cols, tile_m, tile_n);
        m.validate();
        const stof::MaskFold f = stof::find_fold(m);
        *out = upload(std::move(m), f);
    });
}

void stof_mask_destroy(stof_mask* mask) {
    if (!mask) return;
    cudaFree(mask->device_buffer);
    cudaFree(mask->folded_buffer);
    cudaFree(mask->work_queue);
    cudaFree(mask->split_workspace);
    delete mask;
}

stof_status stof_mask_get_fold(const stof_mask* mask, int32_t* period) {
    return guarded([&] {
        if (!mask || !period) throw InvalidArgument{"stof_mask_get_fold: null argument"};
        *period = mask->fold;
    });
}

stof_status stof_mask_get_stats(const stof_mask* mask, stof_mask_stats* out) {
    return guarded([&] {
        if (!mask || !out) throw InvalidArgument{"stof_mask_get_stats: null argument"};
        const auto& m = mask->shape;
        const auto& s = mask->stats;
        *out = stof_mask_stats{m.rows, m.cols,    m.tile_m,      m.tile_n,     m.mask_batch,    m.mask_heads,
                               s.nnz,  s.density, s.empty_tiles, s.full_tiles, s.partial_tiles, s.rho};
    });
}

stof_status stof_attention(const stof_attention_params* params, void* stream) {
    return guarded([&] {
        if (!params) throw InvalidArgument{"stof_attention: params is null"};
        const stof_attention_params& P = *params;
        if (!P.mask) throw InvalidArgument{"stof_attention: mask is null"};
        stof::kernels::AttentionArgs a;
        if (P.dtype == STOF_DTYPE_F16) a.dtype = stof::kernels::ElemType::f16;
        else if (P.dtype == STOF_DTYPE_BF16) a.dtype = stof::kernels::ElemType::bf16;
        else
            throw InvalidArgument{"stof_attention: dtype " + std::to_string(P.dtype) +
                                  " is not supported (STOF_DTYPE_F16 or STOF_DTYPE_BF16)"};
        a.batch = P.batch;
        a.heads = P.heads;
        a.kv_heads = P.kv_heads;
        a.seq_q = P.seq_q;
        a.seq_k = P.seq_k;
        a.head_dim = P.head_dim;
        a.q = tensor(P.q);
        a.k = tensor(P.k);
        a.v = tensor(P.v);
        a.o = tensor(P.o);
        a.scale = P.scale;
        a.key_valid = P.key_valid;
        a.bias = P.bias;
        a.bias_stride_h = P.bias_stride_h;
        a.bias_stride_s = P.bias_stride_s;
        a.block_m = P.block_m;
        a.work_queue = P.mask->work_queue;
        a.split_workspace = P.mask->split_workspace;
        if (P.kernel != STOF_KERNEL_AUTO && P.kernel != STOF_KERNEL_BLOCK_WISE && P.kernel != STOF_KERNEL_ROW_WISE &&
            P.kernel != STOF_KERNEL_BLOCK_WISE_SM90)
            throw InvalidArgument{"stof_attention: unknown kernel " + std::to_string(P.kernel)};
        const stof_mask& M = *P.mask;
        const auto pick = [&](const stof::SparseMaskStats& st, int32_t seq_k) {
            if (P.kernel != STOF_KERNEL_AUTO) return static_cast<stof::kernels::AttentionKernel>(P.kernel);
            const auto k = stof::kernels::select_attention_kernel(st.rho, seq_k);
            return k == stof::kernels::AttentionKernel::block_wise ? stof::kernels::AttentionKernel::block_wise_sm90 : k;
        };
        const cudaStream_t s = static_cast<cudaStream_t>(stream);
        // The caller's key_valid words are in the unfolded layout: with them, the unfolded mask runs.
        if (M.fold > 1 && !P.key_valid && !P.bias) {
            a.mask = M.folded_view;
            const stof::kernels::AttentionKernel kernel = pick(M.folded_stats, P.seq_k / M.fold);
            if (stof::kernels::check_folded_attention_args(a, kernel, M.fold).empty()) {
                cuda_check(stof::kernels::launch_folded_attention(a, kernel, M.fold, s), "stof_attention: launch");
                return;
            }
        }
        a.mask = M.view;
        const stof::kernels::AttentionKernel kernel = pick(M.stats, P.seq_k);
        if (std::string why = stof::kernels::check_attention_args(a, kernel); !why.empty())
            throw InvalidArgument{"stof_attention: " + why};
        cuda_check(stof::kernels::launch_attention(a, kernel, s), "stof_attention: launch");
    });
}

stof_status stof_attention_select(const stof_mask* mask, int32_t seq_k, int32_t* kernel) {
    return guarded([&] {
        if (!mask || !kernel) throw InvalidArgument{"stof_attention_select: null argument"};
        // A folded mask runs as its folded form where stof_attention can.
        *kernel = static_cast<int32_t>(mask->fold > 1
                                           ? stof::kernels::select_attention_kernel(mask->folded_stats.rho, seq_k / mask->fold)
                                           : stof::kernels::select_attention_kernel(mask->stats.rho, seq_k));
    });
}

int32_t stof_attention_select_rho(double rho, int32_t seq_k) {
    return static_cast<int32_t>(stof::kernels::select_attention_kernel(rho, seq_k));
}

double stof_attention_selector_tau(void) { return stof::kernels::attention_selector_tau(); }

}  // extern "C"
