// fold_period, fold_keep: see stof/mask_fold.hpp.
#include "stof/mask_fold.hpp"

#include "stof/error.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>

namespace stof {

namespace {

// Non-empty tile_m × tile_n tiles of the rows × cols keep arrays of every pattern.
int64_t nonempty_tiles(const uint8_t* keep, int64_t patterns, int32_t rows, int32_t cols, int32_t tile_m, int32_t tile_n) {
    const int32_t tcols = (cols + tile_n - 1) / tile_n;
    int64_t n = 0;
    std::vector<char> seen(static_cast<size_t>(tcols));
    for (int64_t pat = 0; pat < patterns; ++pat)
        for (int32_t i0 = 0; i0 < rows; i0 += tile_m) {
            std::fill(seen.begin(), seen.end(), 0);
            for (int32_t i = i0; i < std::min(rows, i0 + tile_m); ++i) {
                const uint8_t* row = keep + (pat * rows + i) * static_cast<int64_t>(cols);
                for (int32_t j = 0; j < cols; ++j)
                    if (row[j]) seen[static_cast<size_t>(j / tile_n)] = 1;
            }
            for (char s : seen) n += s;
        }
    return n;
}

// Every pattern keeps (i, j) only where i ≡ j (mod p), and keep(i'p + r, j'p + r) = keep(i'p, j'p).
bool folds(const uint8_t* keep, int64_t patterns, int32_t rows, int32_t cols, int32_t p) {
    for (int64_t pat = 0; pat < patterns; ++pat)
        for (int32_t i = 0; i < rows; ++i) {
            const uint8_t* row = keep + (pat * rows + i) * static_cast<int64_t>(cols);
            const uint8_t* first = keep + (pat * rows + i - i % p) * static_cast<int64_t>(cols);
            for (int32_t j = 0; j < cols; ++j) {
                const bool k = row[j] != 0;
                if (j % p != i % p) {
                    if (k) return false;
                } else if (k != (first[j - j % p] != 0)) {
                    return false;
                }
            }
        }
    return true;
}

}  // namespace

int32_t fold_period(const uint8_t* keep, int32_t mask_batch, int32_t mask_heads, int32_t rows, int32_t cols, int32_t tile_m,
                    int32_t tile_n) {
    STOF_CHECK(mask_batch >= 1 && mask_heads >= 1 && rows >= 0 && cols >= 0 && tile_m >= 1 && tile_n >= 1,
               "fold_period: invalid sizes");
    const int64_t patterns = static_cast<int64_t>(mask_batch) * mask_heads;
    // Every kept (i, j) has i ≡ j modulo any period that folds: the gcd of their distances bounds it.
    int64_t g = 0;
    for (int64_t pat = 0; pat < patterns && g != 1; ++pat)
        for (int32_t i = 0; i < rows && g != 1; ++i) {
            const uint8_t* row = keep + (pat * rows + i) * static_cast<int64_t>(cols);
            for (int32_t j = 0; j < cols; ++j)
                if (row[j] && j != i) {
                    g = std::gcd(g, static_cast<int64_t>(std::abs(i - j)));
                    if (g == 1) break;
                }
        }
    if (g < 2) return 1;  // dense-like distances, or only the diagonal (no tile to save)
    int64_t unfolded = -1;
    for (int32_t p = 64; p >= 2; --p) {
        if (g % p != 0 || rows % p != 0 || cols % p != 0 || !folds(keep, patterns, rows, cols, p)) continue;
        if (unfolded < 0) unfolded = nonempty_tiles(keep, patterns, rows, cols, tile_m, tile_n);
        const std::vector<uint8_t> f = fold_keep(keep, mask_batch, mask_heads, rows, cols, p);
        if (p * nonempty_tiles(f.data(), patterns, rows / p, cols / p, tile_m, tile_n) < unfolded) return p;
    }
    return 1;
}

std::vector<uint8_t> fold_keep(const uint8_t* keep, int32_t mask_batch, int32_t mask_heads, int32_t rows, int32_t cols,
                               int32_t p) {
    STOF_CHECK(p >= 1 && rows % p == 0 && cols % p == 0, "fold_keep: period {} does not divide {}x{}", p, rows, cols);
    const int64_t patterns = static_cast<int64_t>(mask_batch) * mask_heads;
    const int32_t fr = rows / p, fc = cols / p;
    std::vector<uint8_t> f(static_cast<size_t>(patterns * fr * fc));
    for (int64_t pat = 0; pat < patterns; ++pat)
        for (int32_t i = 0; i < fr; ++i)
            for (int32_t j = 0; j < fc; ++j)
                f[static_cast<size_t>((pat * fr + i) * fc + j)] =
                    keep[(pat * rows + static_cast<int64_t>(i) * p) * cols + static_cast<int64_t>(j) * p] != 0;
    return f;
}

}  // namespace stof
