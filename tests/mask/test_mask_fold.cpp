#include "catch.hpp"
#include "stof/mask_fold.hpp"

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

using namespace stof;

namespace {

// [patterns, rows, cols] keep array of f(pattern, i, j).
std::vector<uint8_t> make(int patterns, int rows, int cols, const std::function<bool(int, int, int)>& f) {
    std::vector<uint8_t> k(static_cast<size_t>(patterns) * rows * cols);
    for (int p = 0; p < patterns; ++p)
        for (int i = 0; i < rows; ++i)
            for (int j = 0; j < cols; ++j) k[(static_cast<size_t>(p) * rows + i) * cols + j] = f(p, i, j);
    return k;
}

}  // namespace

TEST_CASE("fold_period finds the period of strided masks and none elsewhere", "[cpu][mask]") {
    const int S = 1024;
    const auto period = [](const std::vector<uint8_t>& k, int patterns, int rows, int cols) {
        return fold_period(from_dense(k.data(), 1, patterns, rows, cols));
    };
    for (const int p : {8, 16}) {
        INFO("period " << p);
        CHECK(period(make(1, S, S, [&](int, int i, int j) { return (i - j) % p == 0; }), 1, S, S) == p);
        // Strided under a causal bound, and a dilated window, over seq_q != seq_k.
        CHECK(period(make(1, S, S, [&](int, int i, int j) { return j <= i && (i - j) % p == 0; }), 1, S, S) == p);
        CHECK(period(make(1, S / 2, S, [&](int, int i, int j) { return std::abs(i - j) < 64 * p && (i - j) % p == 0; }), 1,
                     S / 2, S) == p);
        // Per-head strides fold with the period they share.
        CHECK(period(make(2, S, S, [&](int h, int i, int j) { return (i - j) % (h ? p : 2 * p) == 0; }), 2, S, S) == p);
    }
    // Not foldable: dense, causal, a band, random elements, a strided mask with one element more, a
    // period that does not divide the sizes, a pattern that differs between residues.
    std::mt19937 rng(5);
    CHECK(period(make(1, S, S, [](int, int, int) { return true; }), 1, S, S) == 1);
    CHECK(period(make(1, S, S, [](int, int i, int j) { return j <= i; }), 1, S, S) == 1);
    CHECK(period(make(1, S, S, [](int, int i, int j) { return std::abs(i - j) < 256; }), 1, S, S) == 1);
    CHECK(period(make(1, S, S, [&](int, int i, int j) { return i == j || rng() % 20 == 0; }), 1, S, S) == 1);
    CHECK(period(make(1, S, S, [](int, int i, int j) { return (i - j) % 8 == 0 || (i == 5 && j == 0); }), 1, S, S) == 1);
    CHECK(period(make(1, 1000, 1000, [](int, int i, int j) { return (i - j) % 16 == 0; }), 1, 1000, 1000) == 8);
    CHECK(period(make(1, 1004, 1004, [](int, int i, int j) { return (i - j) % 8 == 0; }), 1, 1004, 1004) == 4);
    CHECK(period(make(1, S, S, [](int, int i, int j) { return (i - j) % 8 == 0 && (i % 8 != 3 || j < 512); }), 1, S, S) == 1);
    // Only the diagonal: folding lists no fewer tiles.
    CHECK(period(make(1, S, S, [](int, int i, int j) { return i == j; }), 1, S, S) == 1);
    // Folding must list fewer tiles: a period-2 stride over 64 x 64 is one tile either way (p times one).
    CHECK(period(make(1, 64, 64, [](int, int i, int j) { return (i - j) % 2 == 0; }), 1, 64, 64) == 1);
}

TEST_CASE("fold_mask: keep(i, j) is i = j (mod p) and the folded mask at (i / p, j / p)", "[cpu][mask]") {
    const int p = 8, rows = 512, cols = 768;
    const auto keep = make(2, rows, cols, [](int h, int i, int j) { return (i - j) % 8 == 0 && (h == 0 || j <= i); });
    const SparseMask m = from_dense(keep.data(), 2, 1, rows, cols, 128, 64);
    REQUIRE(fold_period(m) == p);
    const SparseMask f = fold_mask(m, p);
    f.validate();
    CHECK(f.rows == rows / p);
    CHECK(f.cols == cols / p);
    CHECK(f.tile_m == 128);
    CHECK(f.patterns() == 2);
    int64_t wrong = 0;
    for (int h = 0; h < 2; ++h) {
        const std::vector<uint8_t> d = to_dense(f, h);
        for (int i = 0; i < rows; ++i)
            for (int j = 0; j < cols; ++j) {
                const bool want = keep[(static_cast<size_t>(h) * rows + i) * cols + j] != 0;
                const bool got = i % p == j % p && d[static_cast<size_t>(i / p) * (cols / p) + j / p] != 0;
                wrong += want != got;
            }
    }
    CHECK(wrong == 0);
    CHECK_THROWS_WITH(fold_mask(m, 7), Catch::Matchers::ContainsSubstring("does not divide"));
    CHECK_THROWS_WITH(fold_mask(m, 16), Catch::Matchers::ContainsSubstring("does not fold"));
}
