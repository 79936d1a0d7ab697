// The GPU dense → sparse conversion against stof::from_dense.
#include "gpu_util.hpp"
#include "random_keep.hpp"
#include "stof/kernels/mask_convert.hpp"
#include "stof/sparse_mask.hpp"
#include "test_util.hpp"

#include <cuda_runtime.h>

#include <cstdio>

using namespace stof;
using namespace stof::kernels;
using test::DeviceBuffer;
using test::download;

namespace {

struct Case {
    int32_t batch, heads, rows, cols;
    bool share_batch, share_heads;
    int tile_m, tile_n;
    int64_t pitch_extra = 0;  // bytes of junk after each row
    bool transposed = false;  // stored as [cols, rows]: stride_row 1, stride_col = rows
};

// Converts fresh random masks of case c twice (outputs poisoned each time) and
// compares every array with from_dense.
void run_case(const Case& c, std::mt19937_64& rng) {
    INFO("batch " << c.batch << (c.share_batch ? " (shared)" : "") << " heads " << c.heads << (c.share_heads ? " (shared)" : "")
                  << " size " << c.rows << "x" << c.cols << " tile " << c.tile_m << "x" << c.tile_n << " pitch +"
                  << c.pitch_extra << (c.transposed ? " transposed" : ""));
    const int32_t mb = c.share_batch ? 1 : c.batch, mh = c.share_heads ? 1 : c.heads;
    const int64_t inner = c.transposed ? c.rows : c.cols, outer = c.transposed ? c.cols : c.rows;
    const int64_t pitch = inner + c.pitch_extra, plane = outer * pitch;
    DenseMaskInput in;
    in.batch = c.batch;
    in.heads = c.heads;
    in.rows = c.rows;
    in.cols = c.cols;
    in.stride_h = c.share_heads ? 0 : plane;
    in.stride_b = c.share_batch ? 0 : plane * mh;
    in.stride_row = c.transposed ? 1 : pitch;
    in.stride_col = c.transposed ? pitch : 1;

    MaskConvertSizes sz;
    CUDA_REQUIRE(mask_convert_sizes(in, c.tile_m, c.tile_n, &sz));
    CHECK(sz.mask_batch == mb);
    CHECK(sz.mask_heads == mh);
    const int64_t trows = (c.rows + c.tile_m - 1) / c.tile_m, tcols = (c.cols + c.tile_n - 1) / c.tile_n;
    const int64_t tiles = int64_t{mb} * mh * trows * tcols, wpt = (c.tile_m / 8) * (c.tile_n / 8);
    CHECK(sz.tiles == tiles);
    CHECK(sz.row_ptr_bytes == static_cast<size_t>(mb * mh * (trows + 1)) * 4);
    CHECK(sz.bitmaps_bytes == static_cast<size_t>(tiles * wpt) * 8);

    const size_t data_bytes = static_cast<size_t>(mb * mh * plane);
    DeviceBuffer data(data_bytes), row_ptr(sz.row_ptr_bytes), col_idx(sz.col_idx_bytes), bitmap_idx(sz.bitmap_idx_bytes),
        bitmaps(sz.bitmaps_bytes), counts(sz.counts_bytes), workspace(sz.workspace_bytes);
    in.data = data.as<uint8_t>();
    const SparseMaskBuffers out{row_ptr.as<int32_t>(), col_idx.as<int32_t>(), bitmap_idx.as<int32_t>(), bitmaps.as<uint64_t>(),
                                counts.as<int32_t>()};
    cudaStream_t stream = nullptr;
    CUDA_REQUIRE(cudaStreamCreate(&stream));

    for (int run = 0; run < 2; ++run) {
        // Fresh data; junk (nonzero bytes) in the pitch padding must be ignored.
        const auto keep = test::random_keep(rng, mb * mh, c.rows, c.cols, c.tile_m, c.tile_n);
        std::vector<uint8_t> host(data_bytes, 0);
        for (auto& v : host) v = static_cast<uint8_t>(1 + rng() % 255);
        for (int64_t p = 0; p < mb * mh; ++p)
            for (int64_t i = 0; i < c.rows; ++i)
                for (int64_t j = 0; j < c.cols; ++j) {
                    const uint8_t v = keep[static_cast<size_t>((p * c.rows + i) * c.cols + j)]
                                          ? static_cast<uint8_t>(1 + rng() % 255)
                                          : 0;
                    const int64_t at = c.transposed ? j * pitch + i : i * pitch + j;
                    host[static_cast<size_t>(p * plane + at)] = v;
                }
        if (data_bytes > 0) CUDA_REQUIRE(cudaMemcpy(data.ptr, host.data(), data_bytes, cudaMemcpyHostToDevice));
        for (const DeviceBuffer* b : {&row_ptr, &col_idx, &bitmap_idx, &bitmaps, &counts})
            CUDA_REQUIRE(cudaMemset(b->ptr, 0xFF, b->bytes));

        CUDA_REQUIRE(convert_dense_mask(in, c.tile_m, c.tile_n, out, workspace.ptr, workspace.bytes, stream));
        CUDA_REQUIRE(cudaStreamSynchronize(stream));
        CUDA_REQUIRE(cudaGetLastError());

        const SparseMask want = from_dense(keep.data(), mb, mh, c.rows, c.cols, c.tile_m, c.tile_n);
        const auto got_counts = download<int32_t>(counts.ptr, 2);
        REQUIRE(got_counts[0] == static_cast<int32_t>(want.col_idx.size()));
        REQUIRE(got_counts[1] == static_cast<int32_t>(want.bitmaps.size() / static_cast<size_t>(wpt)));
        CHECK(download<int32_t>(row_ptr.ptr, want.row_ptr.size()) == want.row_ptr);
        CHECK(download<int32_t>(col_idx.ptr, want.col_idx.size()) == want.col_idx);
        CHECK(download<int32_t>(bitmap_idx.ptr, want.bitmap_idx.size()) == want.bitmap_idx);
        CHECK(download<uint64_t>(bitmaps.ptr, want.bitmaps.size()) == want.bitmaps);
        // Nothing is written past the used prefixes.
        if (want.col_idx.size() < static_cast<size_t>(tiles)) {
            const auto tail = download<int32_t>(col_idx.as<int32_t>() + want.col_idx.size(), 1);
            CHECK(tail[0] == -1);
        }
        const SparseMaskView view = sparse_mask_view(in, c.tile_m, c.tile_n, out);
        CHECK(view.mask_batch == mb);
        CHECK(view.mask_heads == mh);
        CHECK(view.row_ptr == out.row_ptr);
    }
    CUDA_REQUIRE(cudaStreamDestroy(stream));
}

}  // namespace

TEST_CASE("mask conversion arguments are checked", "[cpu][mask]") {
    DenseMaskInput in;
    in.rows = 10;
    in.cols = 10;
    in.stride_row = 10;
    CHECK(check_mask_convert_args(in, 64, 64) == "data is null");
    in.data = reinterpret_cast<const uint8_t*>(uintptr_t{256});
    CHECK(check_mask_convert_args(in, 64, 64).empty());
    CHECK(check_mask_convert_args(in, 12, 64).find("multiple of 8") != std::string::npos);
    CHECK(check_mask_convert_args(in, 64, 512).find("multiple of 8") != std::string::npos);
    in.heads = 0;
    CHECK(check_mask_convert_args(in, 64, 64).find("heads") != std::string::npos);
    in.heads = 1;
    in.stride_row = -1;
    CHECK(check_mask_convert_args(in, 64, 64).find("strides") != std::string::npos);
    in.stride_row = 10;
    in.rows = in.cols = 1 << 30;
    CHECK(check_mask_convert_args(in, 8, 8).find("tiles") != std::string::npos);
}

TEST_CASE("GPU mask conversion equals from_dense", "[gpu][mask]") {
    STOF_REQUIRE_GPU();
    auto rng = test::make_rng();
    const Case cases[] = {
        {1, 1, 1, 1, false, false, 64, 64},          {1, 1, 63, 65, false, false, 64, 64},
        {1, 1, 777, 1000, false, false, 64, 64},     {1, 1, 1000, 777, false, false, 128, 64},
        {1, 1, 513, 515, false, false, 16, 32, 3},   {1, 1, 300, 301, false, false, 8, 8},
        {1, 1, 600, 520, false, false, 256, 256, 5}, {1, 1, 200, 136, false, false, 64, 64, 0, true},
        {2, 3, 130, 200, false, false, 64, 64},      {2, 3, 130, 200, true, false, 64, 64, 1},
        {2, 3, 130, 200, false, true, 128, 64},      {2, 3, 130, 200, true, true, 64, 64},
        {4, 8, 257, 255, false, false, 64, 64, 7},
    };
    for (const Case& c : cases) run_case(c, rng);
}

TEST_CASE("GPU mask conversion of empty sizes writes zero offsets", "[gpu][mask]") {
    STOF_REQUIRE_GPU();
    for (const auto& [rows, cols] : {std::pair<int32_t, int32_t>{0, 100}, {100, 0}, {0, 0}}) {
        INFO(rows << "x" << cols);
        DenseMaskInput in;
        in.heads = 2;
        in.stride_h = 1;
        in.rows = rows;
        in.cols = cols;
        in.stride_row = cols;
        MaskConvertSizes sz;
        CUDA_REQUIRE(mask_convert_sizes(in, 64, 64, &sz));
        DeviceBuffer row_ptr(sz.row_ptr_bytes), counts(sz.counts_bytes);
        CUDA_REQUIRE(cudaMemset(row_ptr.ptr, 0xFF, row_ptr.bytes));
        CUDA_REQUIRE(cudaMemset(counts.ptr, 0xFF, counts.bytes));
        const SparseMaskBuffers out{row_ptr.as<int32_t>(), nullptr, nullptr, nullptr, counts.as<int32_t>()};
        CUDA_REQUIRE(convert_dense_mask(in, 64, 64, out, nullptr, 0, nullptr));
        CUDA_REQUIRE(cudaDeviceSynchronize());
        const SparseMask want = from_dense(nullptr, 1, 2, rows, cols, 64, 64);
        CHECK(download<int32_t>(row_ptr.ptr, want.row_ptr.size()) == want.row_ptr);
        CHECK(download<int32_t>(counts.ptr, 2) == std::vector<int32_t>{0, 0});
    }
}

TEST_CASE("GPU mask conversion rejects a short workspace", "[gpu][mask]") {
    STOF_REQUIRE_GPU();
    DenseMaskInput in;
    in.rows = in.cols = in.stride_row = 128;
    MaskConvertSizes sz;
    CUDA_REQUIRE(mask_convert_sizes(in, 64, 64, &sz));
    DeviceBuffer data(128 * 128), row_ptr(sz.row_ptr_bytes), col_idx(sz.col_idx_bytes), bitmap_idx(sz.bitmap_idx_bytes),
        bitmaps(sz.bitmaps_bytes), counts(sz.counts_bytes), workspace(sz.workspace_bytes);
    in.data = data.as<uint8_t>();
    const SparseMaskBuffers out{row_ptr.as<int32_t>(), col_idx.as<int32_t>(), bitmap_idx.as<int32_t>(), bitmaps.as<uint64_t>(),
                                counts.as<int32_t>()};
    CHECK(convert_dense_mask(in, 64, 64, out, workspace.ptr, sz.workspace_bytes - 1, nullptr) == cudaErrorInvalidValue);
    CHECK(convert_dense_mask(in, 64, 64, out, nullptr, sz.workspace_bytes, nullptr) == cudaErrorInvalidValue);
    CHECK(convert_dense_mask(in, 12, 64, out, workspace.ptr, sz.workspace_bytes, nullptr) == cudaErrorInvalidValue);
}

TEST_CASE("GPU mask conversion of 16 causal heads of 4096x4096", "[gpu][mask]") {
    STOF_REQUIRE_GPU();
    DenseMaskInput in;
    in.heads = 16;
    in.rows = in.cols = 4096;
    in.stride_row = 4096;
    in.stride_h = int64_t{4096} * 4096;
    MaskConvertSizes sz;
    CUDA_REQUIRE(mask_convert_sizes(in, 64, 64, &sz));
    const size_t data_bytes = static_cast<size_t>(in.stride_h) * in.heads;
    DeviceBuffer data(data_bytes), row_ptr(sz.row_ptr_bytes), col_idx(sz.col_idx_bytes), bitmap_idx(sz.bitmap_idx_bytes),
        bitmaps(sz.bitmaps_bytes), counts(sz.counts_bytes), workspace(sz.workspace_bytes);
    in.data = data.as<uint8_t>();
    // A causal pattern in every head.
    std::vector<uint8_t> causal(static_cast<size_t>(in.stride_h));
    for (int64_t i = 0; i < 4096; ++i)
        for (int64_t j = 0; j <= i; ++j) causal[static_cast<size_t>(i * 4096 + j)] = 1;
    for (int h = 0; h < in.heads; ++h)
        CUDA_REQUIRE(cudaMemcpy(data.as<uint8_t>() + h * in.stride_h, causal.data(), causal.size(), cudaMemcpyHostToDevice));
    const SparseMaskBuffers out{row_ptr.as<int32_t>(), col_idx.as<int32_t>(), bitmap_idx.as<int32_t>(), bitmaps.as<uint64_t>(),
                                counts.as<int32_t>()};
    CUDA_REQUIRE(convert_dense_mask(in, 64, 64, out, workspace.ptr, workspace.bytes, nullptr));
    const auto got = download<int32_t>(counts.ptr, 2);
    CHECK(got[0] == 16 * 64 * 65 / 2);
    CHECK(got[1] == 16 * 64);
}
