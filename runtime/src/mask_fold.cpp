// find_fold, fold_mask: see stof/mask_fold.hpp.
#include "stof/mask_fold.hpp"

#include "stof/error.hpp"
#include "stof/memory_limit.hpp"

#include <cstdlib>
#include <numeric>
#include <utility>
#include <vector>

namespace stof {

namespace {

// Calls f(pattern, i, j) for every kept entry of m, tile by tile, while f returns true.
template <class F> void for_each_kept(const SparseMask& m, F&& f) {
    const int32_t trows = m.tile_rows(), wc = m.tile_n / 8;
    for (int32_t p = 0; p < m.patterns(); ++p)
        for (int32_t tr = 0; tr < trows; ++tr) {
            const size_t base = static_cast<size_t>(p) * (trows + 1) + tr;
            for (int32_t t = m.row_ptr[base]; t < m.row_ptr[base + 1]; ++t) {
                const int32_t tc = m.col_idx[static_cast<size_t>(t)], b = m.bitmap_idx[static_cast<size_t>(t)];
                for (int32_t r = 0; r < m.tile_m && tr * m.tile_m + r < m.rows; ++r)
                    for (int32_t c = 0; c < m.tile_n && tc * m.tile_n + c < m.cols; ++c) {
                        if (b >= 0) {
                            const uint64_t w = m.bitmaps[static_cast<size_t>(b) * m.words_per_tile() + (r / 8) * wc + c / 8];
                            if (!((w >> ((r % 8) * 8 + c % 8)) & 1u)) continue;
                        }
                        if (!f(p, tr * m.tile_m + r, tc * m.tile_n + c)) return;
                    }
            }
        }
}

// The folded keep array [patterns, rows / p, cols / p] of m when m folds with period p, else empty.
std::vector<uint8_t> folded_keep(const SparseMask& m, int32_t p) {
    const int64_t fr = m.rows / p, fc = m.cols / p;
    check_memory(static_cast<uint64_t>(m.patterns() * fr * fc), fmt::format("the mask folded by {}", p));
    std::vector<uint8_t> f(static_cast<size_t>(m.patterns() * fr * fc), 0);
    int64_t reps = 0, kept = 0;
    for_each_kept(m, [&](int32_t pat, int32_t i, int32_t j) {
        if (i % p == 0 && j % p == 0) {
            f[static_cast<size_t>((pat * fr + i / p) * fc + j / p)] = 1;
            ++reps;
        }
        return true;
    });
    // Every kept entry is a translate (i'p + r, j'p + r) of a kept representative, and each
    // representative has all p of its translates kept.
    bool ok = true;
    for_each_kept(m, [&](int32_t pat, int32_t i, int32_t j) {
        ++kept;
        ok = i % p == j % p && f[static_cast<size_t>((pat * fr + i / p) * fc + j / p)];
        return ok;
    });
    if (!ok || kept != p * reps) f.clear();
    return f;
}

}  // namespace

MaskFold find_fold(const SparseMask& m) {
    // Every kept (i, j) has i ≡ j modulo a period that folds: the gcd of their distances bounds it.
    int64_t g = 0;
    for_each_kept(m, [&](int32_t, int32_t i, int32_t j) {
        if (i != j) g = std::gcd(g, static_cast<int64_t>(std::abs(i - j)));
        return g != 1;
    });
    if (g < 2) return {};  // dense-like distances, or only the diagonal (no tile to save)
    const int64_t unfolded = static_cast<int64_t>(m.col_idx.size());
    for (int32_t p = 64; p >= 2; --p) {
        if (g % p != 0 || m.rows % p != 0 || m.cols % p != 0) continue;
        const std::vector<uint8_t> f = folded_keep(m, p);
        if (f.empty()) continue;
        SparseMask fm = from_dense(f.data(), m.mask_batch, m.mask_heads, m.rows / p, m.cols / p, m.tile_m, m.tile_n);
        if (p * static_cast<int64_t>(fm.col_idx.size()) < unfolded) return {p, std::move(fm)};
    }
    return {};
}

SparseMask fold_mask(const SparseMask& m, int32_t p) {
    STOF_CHECK(p >= 1 && m.rows % p == 0 && m.cols % p == 0, "fold_mask: period {} does not divide {}x{}", p, m.rows, m.cols);
    const std::vector<uint8_t> f = folded_keep(m, p);
    STOF_CHECK(!f.empty() || m.rows == 0 || m.cols == 0, "fold_mask: the mask does not fold with period {}", p);
    return from_dense(f.data(), m.mask_batch, m.mask_heads, m.rows / p, m.cols / p, m.tile_m, m.tile_n);
}

}  // namespace stof
