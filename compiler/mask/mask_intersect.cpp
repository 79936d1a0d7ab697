#include "mask/mask_intersect.hpp"

#include "stof/error.hpp"

#include <algorithm>

namespace stof {

namespace {

// The words of a full tile: every in-range entry of tile (tr, tc) set.
void full_words(const SparseMask& m, int32_t tr, int32_t tc, uint64_t* w) {
    const int32_t wc = m.tile_n / 8;
    std::fill(w, w + m.words_per_tile(), 0);
    for (int32_t r = 0; r < m.tile_m && tr * m.tile_m + r < m.rows; ++r)
        for (int32_t c = 0; c < m.tile_n && tc * m.tile_n + c < m.cols; ++c)
            w[(r / 8) * wc + c / 8] |= uint64_t{1} << ((r % 8) * 8 + c % 8);
}

}  // namespace

SparseMask intersect_masks(const SparseMask& a, const SparseMask& b) {
    STOF_CHECK(a.rows == b.rows && a.cols == b.cols && a.tile_m == b.tile_m && a.tile_n == b.tile_n,
               "internal: intersecting masks of {}x{} (tiles {}x{}) and {}x{} (tiles {}x{})", a.rows, a.cols, a.tile_m,
               a.tile_n, b.rows, b.cols, b.tile_m, b.tile_n);
    auto dim = [](int32_t x, int32_t y, const char* what) {
        STOF_CHECK(x == 1 || y == 1 || x == y, "internal: intersecting masks of {} {} and {}", x, what, y);
        return std::max(x, y);
    };
    SparseMask r;
    r.rows = a.rows;
    r.cols = a.cols;
    r.tile_m = a.tile_m;
    r.tile_n = a.tile_n;
    r.mask_batch = dim(a.mask_batch, b.mask_batch, "batch patterns");
    r.mask_heads = dim(a.mask_heads, b.mask_heads, "head patterns");
    const int32_t rows = r.tile_rows(), words = r.words_per_tile();
    std::vector<uint64_t> full(static_cast<size_t>(words)), both(static_cast<size_t>(words));
    for (int32_t x = 0; x < r.mask_batch; ++x)
        for (int32_t y = 0; y < r.mask_heads; ++y) {
            const int32_t pa = a.pattern_of(x, y), pb = b.pattern_of(x, y);
            r.row_ptr.push_back(static_cast<int32_t>(r.col_idx.size()));
            for (int32_t tr = 0; tr < rows; ++tr) {
                int32_t ka = a.row_ptr[static_cast<size_t>(pa * (rows + 1) + tr)];
                const int32_t ea = a.row_ptr[static_cast<size_t>(pa * (rows + 1) + tr + 1)];
                int32_t kb = b.row_ptr[static_cast<size_t>(pb * (rows + 1) + tr)];
                const int32_t eb = b.row_ptr[static_cast<size_t>(pb * (rows + 1) + tr + 1)];
                while (ka < ea && kb < eb) {
                    const int32_t ca = a.col_idx[static_cast<size_t>(ka)], cb = b.col_idx[static_cast<size_t>(kb)];
                    if (ca != cb) {
                        (ca < cb ? ka : kb)++;
                        continue;
                    }
                    const int32_t ba = a.bitmap_idx[static_cast<size_t>(ka++)], bb = b.bitmap_idx[static_cast<size_t>(kb++)];
                    if (ba < 0 && bb < 0) {
                        r.col_idx.push_back(ca);
                        r.bitmap_idx.push_back(-1);
                        continue;
                    }
                    full_words(r, tr, ca, full.data());
                    bool any = false, all = true;
                    for (int32_t w = 0; w < words; ++w) {
                        const uint64_t wa = ba < 0 ? full[static_cast<size_t>(w)]
                                                   : a.bitmaps[static_cast<size_t>(ba) * words + w];
                        const uint64_t wb = bb < 0 ? full[static_cast<size_t>(w)]
                                                   : b.bitmaps[static_cast<size_t>(bb) * words + w];
                        both[static_cast<size_t>(w)] = wa & wb;
                        any = any || both[static_cast<size_t>(w)] != 0;
                        all = all && both[static_cast<size_t>(w)] == full[static_cast<size_t>(w)];
                    }
                    if (!any) continue;
                    r.col_idx.push_back(ca);
                    if (all) {
                        r.bitmap_idx.push_back(-1);
                        continue;
                    }
                    r.bitmap_idx.push_back(static_cast<int32_t>(r.bitmaps.size() / static_cast<size_t>(words)));
                    r.bitmaps.insert(r.bitmaps.end(), both.begin(), both.end());
                }
                r.row_ptr.push_back(static_cast<int32_t>(r.col_idx.size()));
            }
        }
    return r;
}

}  // namespace stof
