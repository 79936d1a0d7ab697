#include "random_keep.hpp"
#include "stof/sparse_mask.hpp"
#include "test_util.hpp"

#include <cstdlib>

using namespace stof;

namespace {

// mask_stats computed straight from the dense array.
SparseMaskStats dense_stats(const std::vector<uint8_t>& k, int64_t patterns, int64_t rows, int64_t cols, int tm, int tn) {
    SparseMaskStats s;
    int64_t nonempty16 = 0;
    auto count = [&](int64_t p, int64_t i0, int64_t j0, int64_t h, int64_t w) {
        int64_t n = 0, area = 0;
        for (int64_t i = i0; i < std::min(rows, i0 + h); ++i)
            for (int64_t j = j0; j < std::min(cols, j0 + w); ++j) {
                n += k[static_cast<size_t>((p * rows + i) * cols + j)] != 0;
                ++area;
            }
        return std::pair<int64_t, int64_t>{n, area};
    };
    for (int64_t p = 0; p < patterns; ++p) {
        for (int64_t i0 = 0; i0 < rows; i0 += tm)
            for (int64_t j0 = 0; j0 < cols; j0 += tn) {
                const auto [n, area] = count(p, i0, j0, tm, tn);
                s.nnz += n;
                (n == 0 ? s.empty_tiles : n == area ? s.full_tiles : s.partial_tiles) += 1;
            }
        for (int64_t i0 = 0; i0 < rows; i0 += 16)
            for (int64_t j0 = 0; j0 < cols; j0 += 16) nonempty16 += count(p, i0, j0, 16, 16).first > 0;
    }
    const double cells16 = static_cast<double>(patterns) * static_cast<double>((rows + 15) / 16) *
                           static_cast<double>((cols + 15) / 16);
    s.rho = cells16 > 0 ? static_cast<double>(nonempty16) / cells16 : 0.0;
    const double cells = static_cast<double>(patterns * rows * cols);
    s.density = cells > 0 ? static_cast<double>(s.nnz) / cells : 0.0;
    return s;
}

}  // namespace

TEST_CASE("sparse format round trips random masks to dense", "[cpu][mask]") {
    auto rng = test::make_rng();
    const int tiles[][2] = {{64, 64}, {128, 64}, {8, 8}, {24, 40}, {16, 256}};
    const int64_t sizes[][2] = {{1, 1}, {63, 65}, {130, 77}, {257, 300}};
    for (const auto& t : tiles)
        for (const auto& sz : sizes)
            for (const int64_t patterns : {1, 3}) {
                INFO("tile " << t[0] << "x" << t[1] << " size " << sz[0] << "x" << sz[1] << " patterns " << patterns);
                const auto k = test::random_keep(rng, patterns, sz[0], sz[1], t[0], t[1]);
                const SparseMask m = from_dense(k.data(), 1, static_cast<int32_t>(patterns), static_cast<int32_t>(sz[0]),
                                                static_cast<int32_t>(sz[1]), t[0], t[1]);
                m.validate();
                for (int32_t p = 0; p < patterns; ++p) {
                    const auto d = to_dense(m, p);
                    CHECK(std::equal(d.begin(), d.end(), k.begin() + p * sz[0] * sz[1]));
                    for (int n = 0; n < 50; ++n) {
                        const auto i = static_cast<int32_t>(rng() % static_cast<uint64_t>(sz[0]));
                        const auto j = static_cast<int32_t>(rng() % static_cast<uint64_t>(sz[1]));
                        CHECK(m.keep(p, i, j) == (k[static_cast<size_t>((p * sz[0] + i) * sz[1] + j)] != 0));
                    }
                }
                CHECK_FALSE(m.keep(0, -1, 0));
                CHECK_FALSE(m.keep(0, 0, static_cast<int32_t>(sz[1])));
                const SparseMaskStats got = mask_stats(m), want = dense_stats(k, patterns, sz[0], sz[1], t[0], t[1]);
                CHECK(got.nnz == want.nnz);
                CHECK(got.empty_tiles == want.empty_tiles);
                CHECK(got.full_tiles == want.full_tiles);
                CHECK(got.partial_tiles == want.partial_tiles);
                CHECK(got.rho == Catch::Approx(want.rho));
                CHECK(got.density == Catch::Approx(want.density));
            }
}

TEST_CASE("sparse format validation names the inconsistency", "[cpu][mask]") {
    std::vector<uint8_t> k(100 * 90);
    for (size_t i = 0; i < k.size(); ++i) k[i] = (i * 7) % 5 == 0;
    const SparseMask good = from_dense(k.data(), 1, 1, 100, 90, 64, 64);
    good.validate();
    REQUIRE(!good.bitmaps.empty());
    auto broken = [&](auto edit, const char* needle) {
        SparseMask m = good;
        edit(m);
        test::require_error([&] { m.validate(); }, needle);
    };
    broken([](SparseMask& m) { m.tile_m = 12; }, "not a multiple of 8");
    broken([](SparseMask& m) { m.row_ptr.pop_back(); }, "row_ptr has");
    broken(
        [](SparseMask& m) {
            m.row_ptr[1] = 0;
            m.row_ptr[0] = 1;
        },
        "row_ptr of pattern 0 row 0");
    broken([](SparseMask& m) { m.col_idx[0] = 5; }, "tile column 5 out of range");
    broken(
        [](SparseMask& m) {
            std::swap(m.col_idx[0], m.col_idx[1]);
            std::swap(m.bitmap_idx[0], m.bitmap_idx[1]);
        },
        "not ascending");
    broken([](SparseMask& m) { m.bitmap_idx[0] = 99; }, "bitmap index 99 out of range");
    broken([](SparseMask& m) { m.bitmap_idx.pop_back(); }, "bitmap_idx has");
    broken([](SparseMask& m) { m.bitmaps.pop_back(); }, "not whole tiles");
    broken([](SparseMask& m) { m.bitmaps.back() |= uint64_t{1} << 63; }, "outside the 100x90 matrix");
}

TEST_CASE("grouped_row_fill: how alike the lists of consecutive tile rows are", "[cpu][mask]") {
    // 8 x 8 tiles of 8 x 8 entries; keep(i, j) decides per tile.
    auto build = [](auto keep_tile) {
        std::vector<uint8_t> k(64 * 64);
        for (int i = 0; i < 64; ++i)
            for (int j = 0; j < 64; ++j) k[static_cast<size_t>(i * 64 + j)] = keep_tile(i / 8, j / 8) ? 1 : 0;
        return from_dense(k.data(), 1, 1, 64, 64, 8, 8);
    };
    CHECK(grouped_row_fill(build([](int, int) { return true; }), 3) == Catch::Approx(1.0));
    CHECK(grouped_row_fill(build([](int, int) { return false; }), 3) == 0.0);
    // Causal: groups {0,1,2} list 1+2+3 of 3, {3,4,5} 4+5+6 of 6, {6,7} 7+8 of 8.
    CHECK(grouped_row_fill(build([](int r, int c) { return c <= r; }), 3) == Catch::Approx(36.0 / (9 + 18 + 16)));
    // Each row alone on its own column: a group's rows share nothing.
    CHECK(grouped_row_fill(build([](int r, int c) { return c == r; }), 3) == Catch::Approx(8.0 / (9 + 9 + 4)));
    CHECK(grouped_row_fill(build([](int r, int c) { return c == r; }), 1) == Catch::Approx(1.0));
    // Two patterns are grouped separately: a dense pattern and a diagonal one.
    std::vector<uint8_t> k(2 * 64 * 64, 0);
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 64; ++j)
            k[static_cast<size_t>(i * 64 + j)] = 1, k[static_cast<size_t>(4096 + i * 64 + j)] = i / 8 == j / 8;
    CHECK(grouped_row_fill(from_dense(k.data(), 1, 2, 64, 64, 8, 8), 3) == Catch::Approx((64.0 + 8) / (64 + 22)));
    // A run-time mask's plan entry: its shape and tiles, no arrays.
    SparseMask shape_only;
    shape_only.rows = shape_only.cols = 200;
    CHECK(grouped_row_fill(shape_only, 3) == 0.0);
}

TEST_CASE("tile_row_lengths: the longest tile row and the mean over every pattern's rows", "[cpu][mask]") {
    // Two patterns of 100 x 100 in 8 x 8 tiles (13 tile rows and columns): a band with a global
    // first row, and causal.
    std::vector<uint8_t> k(2 * 100 * 100, 0);
    int64_t listed = 0;
    for (int i = 0; i < 100; ++i)
        for (int j = 0; j < 100; ++j) {
            k[static_cast<size_t>(i * 100 + j)] = i < 8 || std::abs(i - j) <= 2;
            k[static_cast<size_t>(10000 + i * 100 + j)] = j <= i;
        }
    for (int tr = 0; tr < 13; ++tr) listed += (tr == 0 ? 13 : tr == 12 ? 2 : 3) + (tr + 1);
    const TileRowLengths r = tile_row_lengths(from_dense(k.data(), 1, 2, 100, 100, 8, 8));
    CHECK(r.longest == 13);
    CHECK(r.mean == Catch::Approx(static_cast<double>(listed) / 26));
    CHECK(r.long_rows[0] == -1);  // 13 tiles: fewer than 16
    // 200 x 200 in 8 x 8 tiles (25 tile rows): a band, tile row 5 global (25 tiles) and tile row 2
    // over the first 160 columns (20 tiles): the long rows, longest first.
    std::vector<uint8_t> g(200 * 200, 0);
    for (int i = 0; i < 200; ++i)
        for (int j = 0; j < 200; ++j)
            g[static_cast<size_t>(i * 200 + j)] = i / 8 == 5 || (i / 8 == 2 && j < 160) || std::abs(i - j) <= 2;
    const TileRowLengths two = tile_row_lengths(from_dense(g.data(), 1, 1, 200, 200, 8, 8));
    CHECK(two.longest == 25);
    CHECK(two.long_rows == std::array<int32_t, kLongRows>{5, 2, -1, -1});
    SparseMask shape_only;
    shape_only.rows = shape_only.cols = 200;
    CHECK(tile_row_lengths(shape_only).longest == 0);
    CHECK(tile_row_lengths(shape_only).mean == 0.0);
}
