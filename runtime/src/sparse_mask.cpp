#include "stof/sparse_mask.hpp"

#include "stof/error.hpp"

#include <algorithm>
#include <cstdint>

namespace stof {

namespace {

// Index into col_idx of tile column tc in pattern p's tile row tr, or -1.
int64_t find_tile(const SparseMask& m, int32_t p, int32_t tr, int32_t tc) {
    const size_t base = static_cast<size_t>(p) * (m.tile_rows() + 1) + tr;
    const auto first = m.col_idx.begin() + m.row_ptr[base], last = m.col_idx.begin() + m.row_ptr[base + 1];
    const auto it = std::lower_bound(first, last, tc);
    return it != last && *it == tc ? it - m.col_idx.begin() : -1;
}

// True when bitmap b, used by tile (tr, tc), has no bit set outside the matrix.
// O(words per tile): a word's in-range bits are its first rows × first columns.
bool bits_in_range(const SparseMask& m, int32_t b, int32_t tr, int32_t tc) {
    const int32_t ih = std::min(m.tile_m, m.rows - tr * m.tile_m), jw = std::min(m.tile_n, m.cols - tc * m.tile_n);
    if (ih == m.tile_m && jw == m.tile_n) return true;
    const int32_t wc = m.tile_n / 8;
    const uint64_t* words = m.bitmaps.data() + static_cast<size_t>(b) * m.words_per_tile();
    for (int32_t w = 0; w < m.words_per_tile(); ++w) {
        const int32_t nr = std::clamp(ih - (w / wc) * 8, 0, 8), nc = std::clamp(jw - (w % wc) * 8, 0, 8);
        const uint64_t row_bits = nr == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * nr)) - 1;
        const uint64_t col_bits = ((uint64_t{1} << nc) - 1) * 0x0101010101010101ull;
        if ((words[w] & ~(row_bits & col_bits)) != 0) return false;
    }
    return true;
}

// Non-empty 16×16 cells of pattern p (the grid from (0, 0)), for tiles that
// are not multiples of 16, where a cell can straddle outer tiles. One 16-row band
// at a time: memory O(tiles of the tile rows it overlaps), never a byte per cell.
int64_t nonempty_cells16(const SparseMask& m, int32_t p) {
    const int64_t bands = (m.rows + 15) / 16;
    const int32_t trows = m.tile_rows(), wc = m.tile_n / 8;
    int64_t n = 0;
    std::vector<int64_t> cells;  // the band's non-empty cell columns
    for (int64_t a = 0; a < bands; ++a) {
        cells.clear();
        const int64_t r0 = a * 16, r1 = std::min<int64_t>(m.rows, r0 + 16);
        for (int64_t tr = r0 / m.tile_m; tr * m.tile_m < r1 && tr < trows; ++tr) {
            const size_t base = static_cast<size_t>(p) * (trows + 1) + static_cast<size_t>(tr);
            const int64_t i0 = tr * m.tile_m;
            for (int32_t t = m.row_ptr[base]; t < m.row_ptr[base + 1]; ++t) {
                const int32_t tc = m.col_idx[static_cast<size_t>(t)], b = m.bitmap_idx[static_cast<size_t>(t)];
                const int64_t j0 = static_cast<int64_t>(tc) * m.tile_n;
                if (b < 0) {
                    const int64_t j1 = std::min<int64_t>(m.cols, j0 + m.tile_n);
                    for (int64_t c = j0 / 16; c * 16 < j1; ++c) cells.push_back(c);
                    continue;
                }
                // An 8-aligned 8×8 word lies inside one 16×16 cell.
                const uint64_t* words = m.bitmaps.data() + static_cast<size_t>(b) * m.words_per_tile();
                for (int32_t w = 0; w < m.words_per_tile(); ++w) {
                    const int64_t row = i0 + (w / wc) * 8;
                    if (words[w] != 0 && row >= r0 && row < r1) cells.push_back((j0 + (w % wc) * 8) / 16);
                }
            }
        }
        std::sort(cells.begin(), cells.end());
        n += std::unique(cells.begin(), cells.end()) - cells.begin();
    }
    return n;
}

}  // namespace

bool SparseMask::keep(int32_t p, int32_t i, int32_t j) const {
    if (i < 0 || i >= rows || j < 0 || j >= cols) return false;
    const int64_t t = find_tile(*this, p, i / tile_m, j / tile_n);
    if (t < 0) return false;
    const int32_t b = bitmap_idx[static_cast<size_t>(t)];
    if (b < 0) return true;
    const int32_t r = i % tile_m, c = j % tile_n;
    const uint64_t word = bitmaps[static_cast<size_t>(b) * words_per_tile() + (r / 8) * (tile_n / 8) + c / 8];
    return (word >> ((r % 8) * 8 + c % 8)) & 1u;
}

void SparseMask::validate() const {
    STOF_CHECK(rows >= 0 && cols >= 0, "sparse mask: negative size {}x{}", rows, cols);
    STOF_CHECK(tile_m >= 8 && tile_n >= 8 && tile_m % 8 == 0 && tile_n % 8 == 0 && tile_m <= 256 && tile_n <= 256,
               "sparse mask: tile {}x{} is not a multiple of 8 in 8..256", tile_m, tile_n);
    STOF_CHECK(rows <= INT32_MAX - tile_m && cols <= INT32_MAX - tile_n, "sparse mask: size {}x{} is too large", rows, cols);
    STOF_CHECK(mask_batch >= 1 && mask_heads >= 1 && static_cast<int64_t>(mask_batch) * mask_heads <= (1 << 20),
               "sparse mask: invalid pattern count {}x{}", mask_batch, mask_heads);
    const size_t trows = static_cast<size_t>(tile_rows());
    STOF_CHECK(row_ptr.size() == static_cast<size_t>(patterns()) * (trows + 1),
               "sparse mask: row_ptr has {} entries, expected {}", row_ptr.size(),
               static_cast<size_t>(patterns()) * (trows + 1));
    STOF_CHECK(bitmap_idx.size() == col_idx.size(), "sparse mask: bitmap_idx has {} entries, col_idx {}", bitmap_idx.size(),
               col_idx.size());
    STOF_CHECK(bitmaps.size() % static_cast<size_t>(words_per_tile()) == 0, "sparse mask: bitmaps size {} is not whole tiles",
               bitmaps.size());
    const auto npartial = static_cast<int64_t>(bitmaps.size() / static_cast<size_t>(words_per_tile()));
    int32_t prev_end = 0;
    for (int32_t p = 0; p < patterns(); ++p) {
        for (size_t r = 0; r <= trows; ++r) {
            const int32_t v = row_ptr[static_cast<size_t>(p) * (trows + 1) + r];
            STOF_CHECK((r == 0 ? v == prev_end : v >= prev_end) && static_cast<size_t>(v) <= col_idx.size(),
                       "sparse mask: row_ptr of pattern {} row {} is {} (out of order or past {} tiles)", p, r, v,
                       col_idx.size());
            if (r > 0) {
                const int32_t start = row_ptr[static_cast<size_t>(p) * (trows + 1) + r - 1];
                for (int32_t t = start; t < v; ++t) {
                    const int32_t c = col_idx[static_cast<size_t>(t)];
                    STOF_CHECK(c >= 0 && c < tile_cols(), "sparse mask: tile column {} out of range", c);
                    STOF_CHECK(t == start || col_idx[static_cast<size_t>(t - 1)] < c,
                               "sparse mask: tile columns of pattern {} row {} are not ascending", p, r - 1);
                    const int32_t b = bitmap_idx[static_cast<size_t>(t)];
                    STOF_CHECK(b >= -1 && b < npartial, "sparse mask: bitmap index {} out of range", b);
                    if (b >= 0)
                        STOF_CHECK(bits_in_range(*this, b, static_cast<int32_t>(r - 1), c),
                                   "sparse mask: bitmap {} (pattern {}, tile {}, {}) keeps entries outside the {}x{} matrix", b,
                                   p, r - 1, c, rows, cols);
                }
            }
            prev_end = v;
        }
    }
    STOF_CHECK(static_cast<size_t>(prev_end) == col_idx.size(), "sparse mask: {} tiles listed, {} stored", prev_end,
               col_idx.size());
}

SparseMaskStats mask_stats(const SparseMask& m) {
    SparseMaskStats s;
    const int32_t trows = m.tile_rows(), tcols = m.tile_cols();
    const int64_t r16 = (m.rows + 15) / 16, c16 = (m.cols + 15) / 16;
    int64_t nonempty16 = 0;
    for (int32_t p = 0; p < m.patterns(); ++p) {
        for (int32_t tr = 0; tr < trows; ++tr) {
            const size_t base = static_cast<size_t>(p) * (trows + 1) + tr;
            for (int32_t t = m.row_ptr[base]; t < m.row_ptr[base + 1]; ++t) {
                const int32_t tc = m.col_idx[static_cast<size_t>(t)], b = m.bitmap_idx[static_cast<size_t>(t)];
                const int32_t i0 = tr * m.tile_m, j0 = tc * m.tile_n;
                const int32_t ih = std::min(m.tile_m, m.rows - i0), jw = std::min(m.tile_n, m.cols - j0);
                if (b < 0) {
                    ++s.full_tiles;
                    s.nnz += static_cast<int64_t>(ih) * jw;
                    nonempty16 += static_cast<int64_t>((ih + 15) / 16) * ((jw + 15) / 16);
                    continue;
                }
                ++s.partial_tiles;
                const uint64_t* words = m.bitmaps.data() + static_cast<size_t>(b) * m.words_per_tile();
                const int32_t wc = m.tile_n / 8;
                for (int32_t w = 0; w < m.words_per_tile(); ++w) s.nnz += __builtin_popcountll(words[w]);
                for (int32_t a = 0; a < (ih + 15) / 16; ++a)
                    for (int32_t c = 0; c < (jw + 15) / 16; ++c) {
                        uint64_t any = 0;
                        for (int32_t dr = 0; dr < 2 && 2 * a + dr < m.tile_m / 8; ++dr)
                            for (int32_t dc = 0; dc < 2 && 2 * c + dc < wc; ++dc) any |= words[(2 * a + dr) * wc + 2 * c + dc];
                        nonempty16 += any != 0;
                    }
            }
        }
    }
    if (m.tile_m % 16 != 0 || m.tile_n % 16 != 0) {
        nonempty16 = 0;
        for (int32_t p = 0; p < m.patterns(); ++p) nonempty16 += nonempty_cells16(m, p);
    }
    const int64_t all_tiles = static_cast<int64_t>(m.patterns()) * trows * tcols;
    s.empty_tiles = all_tiles - s.full_tiles - s.partial_tiles;
    const double cells = static_cast<double>(m.patterns()) * m.rows * m.cols;
    s.density = cells > 0 ? static_cast<double>(s.nnz) / cells : 0.0;
    const double all16 = static_cast<double>(m.patterns()) * r16 * c16;
    s.rho = all16 > 0 ? static_cast<double>(nonempty16) / all16 : 0.0;
    return s;
}

double grouped_row_fill(const SparseMask& m, int32_t group) {
    if (m.row_ptr.empty()) return 0.0;  // a run-time mask's shape only (plan::MaskEntry::runtime)
    const int32_t trows = m.tile_rows();
    std::vector<int64_t> seen(static_cast<size_t>(m.tile_cols()), -1);  // the last group that listed the column
    int64_t listed = 0, area = 0, gid = 0;
    for (int32_t p = 0; p < m.patterns(); ++p)
        for (int32_t r0 = 0; r0 < trows; r0 += group, ++gid) {
            const int32_t r1 = std::min(trows, r0 + group);
            int64_t unioned = 0;
            for (int32_t tr = r0; tr < r1; ++tr) {
                const size_t base = static_cast<size_t>(p) * (trows + 1) + tr;
                for (int32_t t = m.row_ptr[base]; t < m.row_ptr[base + 1]; ++t) {
                    int64_t& s = seen[static_cast<size_t>(m.col_idx[static_cast<size_t>(t)])];
                    unioned += s != gid;
                    s = gid;
                    ++listed;
                }
            }
            area += (r1 - r0) * unioned;
        }
    return area > 0 ? static_cast<double>(listed) / static_cast<double>(area) : 0.0;
}

TileRowLengths tile_row_lengths(const SparseMask& m) {
    TileRowLengths r;
    if (m.row_ptr.size() < 2) return r;
    const int32_t trows = m.tile_rows();
    int64_t listed = 0;
    std::vector<int32_t> most(static_cast<size_t>(trows), 0);  // per tile row, over the patterns
    for (int32_t p = 0; p < m.patterns(); ++p)
        for (int32_t tr = 0; tr < trows; ++tr) {
            const size_t base = static_cast<size_t>(p) * (trows + 1) + tr;
            const int32_t n = m.row_ptr[base + 1] - m.row_ptr[base];
            most[static_cast<size_t>(tr)] = std::max(most[static_cast<size_t>(tr)], n);
            listed += n;
        }
    r.longest = *std::max_element(most.begin(), most.end());
    r.mean = static_cast<double>(listed) / (static_cast<double>(m.patterns()) * trows);
    std::vector<int32_t> rows;
    for (int32_t tr = 0; tr < trows; ++tr)
        if (most[static_cast<size_t>(tr)] >= 16 && most[static_cast<size_t>(tr)] >= 4 * r.mean) rows.push_back(tr);
    std::stable_sort(rows.begin(), rows.end(),
                     [&](int32_t x, int32_t y) { return most[static_cast<size_t>(x)] > most[static_cast<size_t>(y)]; });
    for (size_t k = 0; k < rows.size() && k < r.long_rows.size(); ++k) r.long_rows[k] = rows[k];
    return r;
}

std::vector<uint8_t> to_dense(const SparseMask& m, int32_t p) {
    std::vector<uint8_t> d(static_cast<size_t>(m.rows) * m.cols, 0);
    const int32_t trows = m.tile_rows(), wc = m.tile_n / 8;
    for (int32_t tr = 0; tr < trows; ++tr) {
        const size_t base = static_cast<size_t>(p) * (trows + 1) + tr;
        for (int32_t t = m.row_ptr[base]; t < m.row_ptr[base + 1]; ++t) {
            const int32_t tc = m.col_idx[static_cast<size_t>(t)], b = m.bitmap_idx[static_cast<size_t>(t)];
            for (int32_t r = 0; r < m.tile_m && tr * m.tile_m + r < m.rows; ++r)
                for (int32_t c = 0; c < m.tile_n && tc * m.tile_n + c < m.cols; ++c) {
                    bool k = true;
                    if (b >= 0) {
                        const uint64_t w = m.bitmaps[static_cast<size_t>(b) * m.words_per_tile() + (r / 8) * wc + c / 8];
                        k = (w >> ((r % 8) * 8 + c % 8)) & 1u;
                    }
                    d[static_cast<size_t>(tr * m.tile_m + r) * m.cols + tc * m.tile_n + c] = k;
                }
        }
    }
    return d;
}

void SparseMask::append_tile(int32_t col, std::span<const uint64_t> partial_words) {
    col_idx.push_back(col);
    if (partial_words.empty()) {
        bitmap_idx.push_back(-1);
        return;
    }
    STOF_CHECK(partial_words.size() == static_cast<size_t>(words_per_tile()), "a partial tile takes {} bitmap words, not {}",
               words_per_tile(), partial_words.size());
    bitmap_idx.push_back(static_cast<int32_t>(bitmaps.size() / partial_words.size()));
    bitmaps.insert(bitmaps.end(), partial_words.begin(), partial_words.end());
}

SparseMask from_dense(const uint8_t* keep, int32_t mask_batch, int32_t mask_heads, int32_t rows, int32_t cols, int32_t tile_m,
                      int32_t tile_n) {
    SparseMask m;
    m.rows = rows;
    m.cols = cols;
    m.tile_m = tile_m;
    m.tile_n = tile_n;
    m.mask_batch = mask_batch;
    m.mask_heads = mask_heads;
    STOF_CHECK(rows >= 0 && cols >= 0 && tile_m % 8 == 0 && tile_n % 8 == 0 && tile_m > 0 && tile_n > 0,
               "from_dense: invalid sizes {}x{} with tile {}x{}", rows, cols, tile_m, tile_n);
    const int32_t trows = m.tile_rows(), tcols = m.tile_cols(), wc = tile_n / 8;
    std::vector<uint64_t> words(static_cast<size_t>(m.words_per_tile()));
    for (int32_t p = 0; p < m.patterns(); ++p) {
        const uint8_t* base = keep + static_cast<size_t>(p) * rows * cols;
        for (int32_t tr = 0; tr < trows; ++tr) {
            m.row_ptr.push_back(static_cast<int32_t>(m.col_idx.size()));
            for (int32_t tc = 0; tc < tcols; ++tc) {
                std::fill(words.begin(), words.end(), 0);
                int64_t kept = 0, in_range = 0;
                for (int32_t r = 0; r < tile_m && tr * tile_m + r < rows; ++r)
                    for (int32_t c = 0; c < tile_n && tc * tile_n + c < cols; ++c) {
                        ++in_range;
                        if (base[static_cast<size_t>(tr * tile_m + r) * cols + tc * tile_n + c]) {
                            ++kept;
                            words[static_cast<size_t>((r / 8) * wc + c / 8)] |= uint64_t{1} << ((r % 8) * 8 + c % 8);
                        }
                    }
                if (kept != 0) m.append_tile(tc, kept == in_range ? std::span<const uint64_t>() : std::span(words));
            }
        }
        m.row_ptr.push_back(static_cast<int32_t>(m.col_idx.size()));
    }
    return m;
}

}  // namespace stof
