// Dense → sparse mask conversion (stof/kernels/mask_convert.hpp states the contract).
#include "stof/kernels/mask_convert.hpp"

#include <cub/device/device_scan.cuh>

#include <limits>

namespace stof::kernels {

namespace {

#define STOF_CUDA_TRY(expr)                             \
    do {                                                \
        const cudaError_t stof_err_ = (expr);           \
        if (stof_err_ != cudaSuccess) return stof_err_; \
    } while (0)

constexpr size_t kAlign = 256;

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Sizes every kernel needs, derived once on the host.
struct Geometry {
    const uint8_t* data;
    int64_t stride_b, stride_h, stride_row, stride_col;  // stride_b / stride_h are 0 for a shared dimension
    int32_t rows, cols, tile_m, tile_n;
    int32_t mask_batch, mask_heads, tile_rows, tile_cols, words_per_tile;
    int64_t tiles;  // P * tile_rows * tile_cols
};

Geometry make_geometry(const DenseMaskInput& in, int32_t tile_m, int32_t tile_n) {
    Geometry g{};
    g.mask_batch = in.batch > 1 && in.stride_b != 0 ? in.batch : 1;
    g.mask_heads = in.heads > 1 && in.stride_h != 0 ? in.heads : 1;
    g.data = in.data;
    g.stride_b = g.mask_batch > 1 ? in.stride_b : 0;
    g.stride_h = g.mask_heads > 1 ? in.stride_h : 0;
    g.stride_row = in.stride_row;
    g.stride_col = in.stride_col;
    g.rows = in.rows;
    g.cols = in.cols;
    g.tile_m = tile_m;
    g.tile_n = tile_n;
    g.tile_rows = (in.rows + tile_m - 1) / tile_m;
    g.tile_cols = (in.cols + tile_n - 1) / tile_n;
    g.words_per_tile = (tile_m / 8) * (tile_n / 8);
    g.tiles = static_cast<int64_t>(g.mask_batch) * g.mask_heads * g.tile_rows * g.tile_cols;
    return g;
}

size_t row_ptr_bytes(const Geometry& g) {
    return static_cast<size_t>(g.mask_batch) * g.mask_heads * (g.tile_rows + 1) * sizeof(int32_t);
}

struct Workspace {
    uint64_t *flags, *offsets, *words;
    void* scan;
    size_t scan_bytes;
};

// Region offsets of the workspace for T tiles; `scan_bytes` from CUB.
size_t workspace_layout(const Geometry& g, size_t scan_bytes, char* base, Workspace* ws) {
    const size_t flags = align_up(static_cast<size_t>(g.tiles + 1) * sizeof(uint64_t));
    const size_t words = align_up(static_cast<size_t>(g.tiles) * g.words_per_tile * sizeof(uint64_t));
    if (ws) {
        ws->flags = reinterpret_cast<uint64_t*>(base);
        ws->offsets = reinterpret_cast<uint64_t*>(base + flags);
        ws->words = reinterpret_cast<uint64_t*>(base + 2 * flags);
        ws->scan = base + 2 * flags + words;
        ws->scan_bytes = scan_bytes;
    }
    return 2 * flags + words + align_up(scan_bytes);
}

cudaError_t scan_bytes(const Geometry& g, size_t* bytes) {
    *bytes = 0;
    return cub::DeviceScan::ExclusiveSum(nullptr, *bytes, static_cast<const uint64_t*>(nullptr),
                                         static_cast<uint64_t*>(nullptr), static_cast<int>(g.tiles + 1));
}

// 8 bytes (byte c = column c) → 8 bits (bit c = byte c != 0).
__device__ __forceinline__ uint32_t nonzero_bytes_to_bits(uint64_t v) {
    v |= v >> 4;
    v |= v >> 2;
    v |= v >> 1;
    v &= 0x0101010101010101ull;
    return static_cast<uint32_t>((v * 0x0102040810204080ull) >> 56);
}

// One CTA per tile (blockIdx.x = tile index t in (pattern, tile row, tile column)
// order), one thread per 8×8 word (threadIdx.x = r8 * (tile_n / 8) + c8).
// Writes flags[t] (and flags[T] = 0) and, for a partial tile, words[t * WPT ..].
// blockDim.x == words_per_tile (1..1024).
__global__ void classify_tiles(Geometry g, uint64_t* __restrict__ flags, uint64_t* __restrict__ words) {
    const int64_t t = blockIdx.x;
    const int64_t per_pattern = static_cast<int64_t>(g.tile_rows) * g.tile_cols;
    const int64_t p = t / per_pattern, rem = t % per_pattern;
    const int32_t tr = static_cast<int32_t>(rem / g.tile_cols), tc = static_cast<int32_t>(rem % g.tile_cols);
    const int32_t wc = g.tile_n / 8, w = threadIdx.x;
    const int32_t i0 = tr * g.tile_m + (w / wc) * 8, j0 = tc * g.tile_n + (w % wc) * 8;
    const uint8_t* base = g.data + (p / g.mask_heads) * g.stride_b + (p % g.mask_heads) * g.stride_h;

    uint64_t word = 0, in_range = 0;
    for (int32_t r = 0; r < 8 && i0 + r < g.rows; ++r) {
        const uint8_t* row = base + static_cast<int64_t>(i0 + r) * g.stride_row;
        uint32_t bits = 0, valid = 0;
        if (g.stride_col == 1 && j0 + 8 <= g.cols && (reinterpret_cast<uintptr_t>(row + j0) & 7) == 0) {
            bits = nonzero_bytes_to_bits(__ldg(reinterpret_cast<const unsigned long long*>(row + j0)));
            valid = 0xff;
        } else {
            for (int32_t c = 0; c < 8 && j0 + c < g.cols; ++c) {
                valid |= 1u << c;
                bits |= (__ldg(row + static_cast<int64_t>(j0 + c) * g.stride_col) != 0 ? 1u : 0u) << c;
            }
        }
        word |= static_cast<uint64_t>(bits) << (8 * r);
        in_range |= static_cast<uint64_t>(valid) << (8 * r);
    }
    const bool nonempty = __syncthreads_or(word != 0) != 0;
    const bool full = __syncthreads_and(word == in_range) != 0;
    const bool partial = nonempty && !full;
    if (partial) words[t * g.words_per_tile + w] = word;
    if (w == 0) {
        flags[t] = static_cast<uint64_t>(nonempty) | static_cast<uint64_t>(partial) << 32;
        if (t == 0) flags[g.tiles] = 0;
    }
}

// One CTA per tile, one thread per word (as classify_tiles). offsets[t] holds
// {non-empty tiles before t, partial tiles before t}; offsets[T] the totals.
__global__ void scatter_tiles(Geometry g, const uint64_t* __restrict__ flags, const uint64_t* __restrict__ offsets,
                              const uint64_t* __restrict__ words, SparseMaskBuffers out) {
    const int64_t t = blockIdx.x;
    const uint64_t f = flags[t], o = offsets[t];
    const bool nonempty = (f & 0xffffffffu) != 0, partial = (f >> 32) != 0;
    const int32_t pos = static_cast<int32_t>(o & 0xffffffffu), ppos = static_cast<int32_t>(o >> 32);
    const int32_t w = threadIdx.x;
    if (partial) out.bitmaps[static_cast<int64_t>(ppos) * g.words_per_tile + w] = words[t * g.words_per_tile + w];
    if (w != 0) return;
    const int64_t per_pattern = static_cast<int64_t>(g.tile_rows) * g.tile_cols;
    const int64_t p = t / per_pattern, rem = t % per_pattern;
    const int32_t tr = static_cast<int32_t>(rem / g.tile_cols), tc = static_cast<int32_t>(rem % g.tile_cols);
    const int64_t rp = p * (g.tile_rows + 1) + tr;
    if (tc == 0) out.row_ptr[rp] = pos;
    if (tr == g.tile_rows - 1 && tc == g.tile_cols - 1) out.row_ptr[rp + 1] = pos + nonempty;
    if (nonempty) {
        out.col_idx[pos] = tc;
        out.bitmap_idx[pos] = partial ? ppos : -1;
    }
    if (t == g.tiles - 1) {
        const uint64_t total = offsets[g.tiles];
        out.counts[0] = static_cast<int32_t>(total & 0xffffffffu);
        out.counts[1] = static_cast<int32_t>(total >> 32);
    }
}

}  // namespace

namespace {

// check_mask_convert_args without the data pointer: what mask_convert_sizes needs.
std::string check_geometry(const DenseMaskInput& in, int32_t tile_m, int32_t tile_n) {
    if (tile_m < 8 || tile_n < 8 || tile_m > 256 || tile_n > 256 || tile_m % 8 != 0 || tile_n % 8 != 0)
        return "tile " + std::to_string(tile_m) + "x" + std::to_string(tile_n) +
               ": each side must be a multiple of 8 in 8..256";
    if (in.batch < 1 || in.heads < 1) return "batch and heads must be >= 1";
    if (in.rows < 0 || in.cols < 0) return "rows and cols must be >= 0";
    if (in.stride_b < 0 || in.stride_h < 0 || in.stride_row < 0 || in.stride_col < 0) return "strides must be >= 0";
    const Geometry g = make_geometry(in, tile_m, tile_n);
    if (g.tiles + 1 > std::numeric_limits<int32_t>::max())
        return std::to_string(g.tiles) + " tiles: at most 2^31 - 2 are supported";
    return "";
}

}  // namespace

std::string check_mask_convert_args(const DenseMaskInput& in, int32_t tile_m, int32_t tile_n) {
    std::string problem = check_geometry(in, tile_m, tile_n);
    if (problem.empty() && make_geometry(in, tile_m, tile_n).tiles > 0 && in.data == nullptr) problem = "data is null";
    return problem;
}

cudaError_t mask_convert_sizes(const DenseMaskInput& in, int32_t tile_m, int32_t tile_n, MaskConvertSizes* sizes) {
    if (sizes == nullptr || !check_geometry(in, tile_m, tile_n).empty()) return cudaErrorInvalidValue;
    const Geometry g = make_geometry(in, tile_m, tile_n);
    MaskConvertSizes s;
    s.mask_batch = g.mask_batch;
    s.mask_heads = g.mask_heads;
    s.tile_rows = g.tile_rows;
    s.tile_cols = g.tile_cols;
    s.words_per_tile = g.words_per_tile;
    s.tiles = g.tiles;
    s.row_ptr_bytes = row_ptr_bytes(g);
    s.col_idx_bytes = static_cast<size_t>(g.tiles) * sizeof(int32_t);
    s.bitmap_idx_bytes = s.col_idx_bytes;
    s.bitmaps_bytes = static_cast<size_t>(g.tiles) * g.words_per_tile * sizeof(uint64_t);
    s.counts_bytes = 2 * sizeof(int32_t);
    size_t scan = 0;
    STOF_CUDA_TRY(scan_bytes(g, &scan));
    s.workspace_bytes = workspace_layout(g, scan, nullptr, nullptr);
    *sizes = s;
    return cudaSuccess;
}

cudaError_t convert_dense_mask(const DenseMaskInput& in, int32_t tile_m, int32_t tile_n, const SparseMaskBuffers& out,
                               void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    if (!check_mask_convert_args(in, tile_m, tile_n).empty()) return cudaErrorInvalidValue;
    if (out.row_ptr == nullptr || out.counts == nullptr) return cudaErrorInvalidValue;
    const Geometry g = make_geometry(in, tile_m, tile_n);
    if (g.tiles == 0) {
        // No tiles (rows or cols is 0): every row_ptr entry and both counts are 0.
        STOF_CUDA_TRY(cudaMemsetAsync(out.row_ptr, 0, row_ptr_bytes(g), stream));
        STOF_CUDA_TRY(cudaMemsetAsync(out.counts, 0, 2 * sizeof(int32_t), stream));
        return cudaSuccess;
    }
    if (out.col_idx == nullptr || out.bitmap_idx == nullptr || out.bitmaps == nullptr || workspace == nullptr ||
        reinterpret_cast<uintptr_t>(workspace) % kAlign != 0)
        return cudaErrorInvalidValue;
    size_t scan = 0;
    STOF_CUDA_TRY(scan_bytes(g, &scan));
    Workspace ws{};
    if (workspace_layout(g, scan, static_cast<char*>(workspace), &ws) > workspace_bytes) return cudaErrorInvalidValue;

    const auto blocks = static_cast<unsigned>(g.tiles), threads = static_cast<unsigned>(g.words_per_tile);
    classify_tiles<<<blocks, threads, 0, stream>>>(g, ws.flags, ws.words);
    STOF_CUDA_TRY(cudaGetLastError());
    STOF_CUDA_TRY(
        cub::DeviceScan::ExclusiveSum(ws.scan, ws.scan_bytes, ws.flags, ws.offsets, static_cast<int>(g.tiles + 1), stream));
    scatter_tiles<<<blocks, threads, 0, stream>>>(g, ws.flags, ws.offsets, ws.words, out);
    STOF_CUDA_TRY(cudaGetLastError());
    return cudaSuccess;
}

SparseMaskView sparse_mask_view(const DenseMaskInput& in, int32_t tile_m, int32_t tile_n, const SparseMaskBuffers& out) {
    SparseMaskView v;
    v.row_ptr = out.row_ptr;
    v.col_idx = out.col_idx;
    v.bitmap_idx = out.bitmap_idx;
    v.bitmaps = out.bitmaps;
    v.rows = in.rows;
    v.cols = in.cols;
    v.tile_m = tile_m;
    v.tile_n = tile_n;
    const Geometry g = make_geometry(in, tile_m, tile_n);
    v.mask_batch = g.mask_batch;
    v.mask_heads = g.mask_heads;
    return v;
}

}  // namespace stof::kernels
