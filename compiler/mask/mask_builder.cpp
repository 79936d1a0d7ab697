#include "mask/mask_builder.hpp"

#include "mask/mask_file.hpp"
#include "mask/mask_random.hpp"
#include "stof/error.hpp"

#include <algorithm>
#include <limits>

namespace stof {

namespace {

using Kind = MaskSpec::Kind;

enum class TileClass : uint8_t { empty, full, partial };

// The in-range part of one outer tile: rows [i0, i1), columns [j0, j1).
struct Tile {
    int64_t i0, i1, j0, j1;
    int64_t tc;  // tile column
};

struct Ctx {
    int64_t seq_q, seq_k, tile_m, tile_n;
    int64_t row_words;     // words per row of a tile's row bits: ceil(tile_n / 64)
    int64_t b = 0, h = 0;  // the pattern being built
};

// A spec node plus what building needs per tile row and per tile.
struct Node {
    const MaskSpec* spec = nullptr;
    std::vector<Node> children;
    TileClass cls = TileClass::empty;  // class of the current tile (set by classify)
    std::vector<uint64_t> scratch;     // any/all: a child's row bits
    // random, for the current tile row:
    int64_t block_row0 = 0;                            // first block row overlapping it
    std::vector<std::vector<int64_t>> chosen;          // chosen block columns of block rows block_row0, block_row0 + 1, ...
    std::vector<std::pair<int64_t, int64_t>> covered;  // (tile column, kept entries), ascending, nonzero only
};

// Sorted, disjoint half-open ranges [lo, hi) of tile columns.
using Ranges = std::vector<std::pair<int64_t, int64_t>>;

Node make_node(const MaskSpec& s, const Ctx& c) {
    Node n;
    n.spec = &s;
    for (const MaskSpec& child : s.children) n.children.push_back(make_node(child, c));
    if (s.kind == Kind::any || s.kind == Kind::all) n.scratch.resize(static_cast<size_t>(c.tile_m * c.row_words));
    return n;
}

// Row bits: bit c of row r of a tile is word r * row_words + c / 64, bit c % 64.
void set_range(uint64_t* row, int64_t a, int64_t b, int64_t width) {
    a = std::max<int64_t>(a, 0);
    b = std::min(b, width);
    for (int64_t c = a; c < b;) {
        const int64_t w = c / 64, lo = c % 64, hi = std::min<int64_t>(64, lo + (b - c));
        const uint64_t bits = hi - lo == 64 ? ~uint64_t{0} : ((uint64_t{1} << (hi - lo)) - 1) << lo;
        row[w] |= bits;
        c += hi - lo;
    }
}

// Sets up per-tile-row state for rows [i0, i1).
void begin_tile_row(Node& n, const Ctx& c, int64_t i0, int64_t i1) {
    for (Node& child : n.children) begin_tile_row(child, c, i0, i1);
    if (n.spec->kind != Kind::random) return;
    const MaskSpec& s = *n.spec;
    const int64_t block_cols = (c.seq_k + s.block - 1) / s.block;
    const int64_t br0 = i0 / s.block, br1 = (i1 - 1) / s.block;
    std::vector<std::vector<int64_t>> chosen(static_cast<size_t>(br1 - br0 + 1));
    for (int64_t br = br0; br <= br1; ++br) {
        const int64_t old = br - n.block_row0;
        if (old >= 0 && old < static_cast<int64_t>(n.chosen.size()))
            chosen[static_cast<size_t>(br - br0)] = std::move(n.chosen[static_cast<size_t>(old)]);
        else chosen[static_cast<size_t>(br - br0)] = random_block_columns(s.seed, br, block_cols, s.count);
    }
    n.chosen = std::move(chosen);
    n.block_row0 = br0;
    n.covered.clear();
    for (int64_t br = br0; br <= br1; ++br) {
        const int64_t rows = std::min(i1, (br + 1) * s.block) - std::max(i0, br * s.block);
        for (int64_t col : n.chosen[static_cast<size_t>(br - br0)]) {
            const int64_t a = col * s.block, e = std::min((col + 1) * s.block, c.seq_k);
            for (int64_t tc = a / c.tile_n; tc * c.tile_n < e; ++tc)
                n.covered.emplace_back(tc, rows * (std::min(e, (tc + 1) * c.tile_n) - std::max(a, tc * c.tile_n)));
        }
    }
    std::sort(n.covered.begin(), n.covered.end());
    size_t out = 0;
    for (size_t k = 0; k < n.covered.size(); ++k) {
        if (out > 0 && n.covered[out - 1].first == n.covered[k].first) n.covered[out - 1].second += n.covered[k].second;
        else n.covered[out++] = n.covered[k];
    }
    n.covered.resize(out);
}

Ranges unite(const Ranges& a, const Ranges& b) {
    Ranges all(a);
    all.insert(all.end(), b.begin(), b.end());
    std::sort(all.begin(), all.end());
    Ranges out;
    for (const auto& r : all) {
        if (!out.empty() && r.first <= out.back().second) out.back().second = std::max(out.back().second, r.second);
        else out.push_back(r);
    }
    return out;
}

Ranges intersect(const Ranges& a, const Ranges& b) {
    Ranges out;
    for (size_t x = 0, y = 0; x < a.size() && y < b.size();) {
        const int64_t lo = std::max(a[x].first, b[y].first), hi = std::min(a[x].second, b[y].second);
        if (lo < hi) out.emplace_back(lo, hi);
        if (a[x].second < b[y].second) ++x;
        else ++y;
    }
    return out;
}

// The tile columns that can hold kept entries of rows [i0, i1): a superset of the
// non-empty tiles, so a tile row costs its kept tiles, not every tile (begin_tile_row ran).
Ranges candidate_tiles(const Node& n, const Ctx& c, int64_t i0, int64_t i1) {
    const MaskSpec& s = *n.spec;
    auto columns = [&](int64_t j0, int64_t j1) {  // key columns [j0, j1), clipped
        j0 = std::max<int64_t>(j0, 0);
        j1 = std::min(j1, c.seq_k);
        return j0 < j1 ? Ranges{{j0 / c.tile_n, (j1 - 1) / c.tile_n + 1}} : Ranges{};
    };
    switch (s.kind) {
        case Kind::dense:
        case Kind::strided:
        case Kind::file: return columns(0, c.seq_k);
        case Kind::causal: return columns(0, i1);
        case Kind::sliding: return columns(i0 - s.window, i1 + s.window);
        case Kind::global: return i0 < s.global ? columns(0, c.seq_k) : columns(0, s.global);
        case Kind::block_band: {
            const int64_t b0 = i0 / s.block, b1 = (i1 - 1) / s.block;
            const int64_t hi = std::min(b1 + s.window + 1, (c.seq_k + s.block - 1) / s.block);
            return columns(std::max<int64_t>(b0 - s.window, 0) * s.block, hi * s.block);
        }
        case Kind::random: {
            Ranges out;
            for (const auto& [tc, kept] : n.covered) {
                if (!out.empty() && out.back().second == tc) ++out.back().second;
                else out.emplace_back(tc, tc + 1);
            }
            return out;
        }
        case Kind::any: {
            Ranges out;
            for (const Node& child : n.children) out = unite(out, candidate_tiles(child, c, i0, i1));
            return out;
        }
        case Kind::all: {
            Ranges out = columns(0, c.seq_k);
            for (const Node& child : n.children) out = intersect(out, candidate_tiles(child, c, i0, i1));
            return out;
        }
    }
    return columns(0, c.seq_k);
}

// Smallest and largest |x - y| over x in [x0, x1], y in [y0, y1] (closed).
int64_t min_distance(int64_t x0, int64_t x1, int64_t y0, int64_t y1) {
    if (y0 > x1) return y0 - x1;
    if (x0 > y1) return x0 - y1;
    return 0;
}
int64_t max_distance(int64_t x0, int64_t x1, int64_t y0, int64_t y1) {
    return std::max(x1 - y0 < 0 ? y0 - x1 : x1 - y0, y1 - x0 < 0 ? x0 - y1 : y1 - x0);
}

TileClass band_class(int64_t x0, int64_t x1, int64_t y0, int64_t y1, int64_t window) {
    if (min_distance(x0, x1, y0, y1) > window) return TileClass::empty;
    if (max_distance(x0, x1, y0, y1) <= window) return TileClass::full;
    return TileClass::partial;
}

// The class of tile t; `partial` means "not decided here": the row bits decide.
// Sets n.cls (and the children's) for row_bits.
TileClass classify(Node& n, const Ctx& c, const Tile& t) {
    const MaskSpec& s = *n.spec;
    TileClass k = TileClass::partial;
    switch (s.kind) {
        case Kind::dense: k = TileClass::full; break;
        case Kind::causal:
            k = t.j0 > t.i1 - 1 ? TileClass::empty : t.j1 - 1 <= t.i0 ? TileClass::full : TileClass::partial;
            break;
        case Kind::sliding: k = band_class(t.i0, t.i1 - 1, t.j0, t.j1 - 1, s.window); break;
        case Kind::global:
            k = (t.i1 - 1 < s.global || t.j1 - 1 < s.global) ? TileClass::full
                : (t.i0 >= s.global && t.j0 >= s.global)     ? TileClass::empty
                                                             : TileClass::partial;
            break;
        case Kind::block_band:
            k = band_class(t.i0 / s.block, (t.i1 - 1) / s.block, t.j0 / s.block, (t.j1 - 1) / s.block, s.window);
            break;
        case Kind::random: {
            const auto it = std::lower_bound(n.covered.begin(), n.covered.end(), std::pair<int64_t, int64_t>{t.tc, 0});
            const int64_t kept = it != n.covered.end() && it->first == t.tc ? it->second : 0;
            k = kept == 0 ? TileClass::empty : kept == (t.i1 - t.i0) * (t.j1 - t.j0) ? TileClass::full : TileClass::partial;
            break;
        }
        case Kind::strided: k = s.stride == 1 ? TileClass::full : TileClass::partial; break;
        case Kind::file: k = TileClass::partial; break;
        case Kind::any: {
            bool all_empty = true;
            for (Node& child : n.children) {
                const TileClass ck = classify(child, c, t);
                if (ck == TileClass::full) return n.cls = TileClass::full;
                all_empty = all_empty && ck == TileClass::empty;
            }
            k = all_empty ? TileClass::empty : TileClass::partial;
            break;
        }
        case Kind::all: {
            bool all_full = true;
            for (Node& child : n.children) {
                const TileClass ck = classify(child, c, t);
                if (ck == TileClass::empty) return n.cls = TileClass::empty;
                all_full = all_full && ck == TileClass::full;
            }
            k = all_full ? TileClass::full : TileClass::partial;
            break;
        }
    }
    return n.cls = k;
}

// Exact row bits of tile t into out[(i1 - i0) * row_words] (overwritten). classify(n, t) ran first.
void row_bits(Node& n, const Ctx& c, const Tile& t, uint64_t* out) {
    const MaskSpec& s = *n.spec;
    const int64_t rows = t.i1 - t.i0, width = t.j1 - t.j0, rw = c.row_words;
    std::fill(out, out + rows * rw, 0);
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = t.i0 + r;
        uint64_t* row = out + r * rw;
        switch (s.kind) {
            case Kind::dense: set_range(row, 0, width, width); break;
            case Kind::causal: set_range(row, 0, i - t.j0 + 1, width); break;
            case Kind::sliding: set_range(row, i - s.window - t.j0, i + s.window + 1 - t.j0, width); break;
            case Kind::global: set_range(row, 0, i < s.global ? width : s.global - t.j0, width); break;
            case Kind::block_band: {
                const int64_t bi = i / s.block;
                set_range(row, std::max<int64_t>(bi - s.window, 0) * s.block - t.j0, (bi + s.window + 1) * s.block - t.j0,
                          width);
                break;
            }
            case Kind::random: {
                const auto& cols = n.chosen[static_cast<size_t>(i / s.block - n.block_row0)];
                for (auto it = std::lower_bound(cols.begin(), cols.end(), t.j0 / s.block);
                     it != cols.end() && *it * s.block < t.j1; ++it)
                    set_range(row, *it * s.block - t.j0, (*it + 1) * s.block - t.j0, width);
                break;
            }
            case Kind::strided:  // columns j = i (mod stride)
                for (int64_t j = ((i - t.j0) % s.stride + s.stride) % s.stride; j < width; j += s.stride)
                    row[j / 64] |= uint64_t{1} << (j % 64);
                break;
            case Kind::file:
                for (int64_t j = 0; j < width; ++j)
                    if (s.file->at(c.b, c.h, i, t.j0 + j)) row[j / 64] |= uint64_t{1} << (j % 64);
                break;
            case Kind::any:
            case Kind::all: break;
        }
    }
    if (s.kind == Kind::any) {
        for (Node& child : n.children) {
            if (child.cls == TileClass::empty) continue;  // no child is full: classify would have answered full
            row_bits(child, c, t, n.scratch.data());
            for (int64_t w = 0; w < rows * rw; ++w) out[w] |= n.scratch[static_cast<size_t>(w)];
        }
    } else if (s.kind == Kind::all) {
        for (int64_t r = 0; r < rows; ++r) set_range(out + r * rw, 0, width, width);
        for (Node& child : n.children) {
            if (child.cls == TileClass::full) continue;
            row_bits(child, c, t, n.scratch.data());
            for (int64_t w = 0; w < rows * rw; ++w) out[w] &= n.scratch[static_cast<size_t>(w)];
        }
    }
}

}  // namespace

SparseMask build_mask(const MaskSpec& spec_in, int64_t seq_q, int64_t seq_k, int tile_m, int tile_n, int64_t heads,
                      int64_t batch) {
    constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
    STOF_CHECK(seq_q >= 0 && seq_k >= 0 && seq_q <= kMax && seq_k <= kMax, "mask size {}x{} is out of range [0, {}]", seq_q,
               seq_k, kMax);
    STOF_CHECK(tile_m >= 8 && tile_n >= 8 && tile_m <= 256 && tile_n <= 256 && tile_m % 8 == 0 && tile_n % 8 == 0,
               "mask tile {}x{}: each side must be a multiple of 8 in 8..256", tile_m, tile_n);
    MaskSpec spec = spec_in;
    if (has_file_atom(spec)) load_mask_files(spec, seq_q, seq_k, heads, batch);
    const auto [mask_batch, mask_heads] = mask_pattern_dims(spec);

    SparseMask m;
    m.rows = static_cast<int32_t>(seq_q);
    m.cols = static_cast<int32_t>(seq_k);
    m.tile_m = tile_m;
    m.tile_n = tile_n;
    m.mask_batch = static_cast<int32_t>(mask_batch);
    m.mask_heads = static_cast<int32_t>(mask_heads);
    const int64_t trows = m.tile_rows(), wc = tile_n / 8;
    Ctx c{seq_q, seq_k, tile_m, tile_n, (tile_n + 63) / 64};
    std::vector<uint64_t> bits(static_cast<size_t>(tile_m * c.row_words));
    std::vector<uint64_t> words(static_cast<size_t>(m.words_per_tile()));

    for (int64_t p = 0; p < mask_batch * mask_heads; ++p) {
        c.b = p / mask_heads;
        c.h = p % mask_heads;
        Node root = make_node(spec, c);
        for (int64_t tr = 0; tr < trows; ++tr) {
            m.row_ptr.push_back(static_cast<int32_t>(m.col_idx.size()));
            const int64_t i0 = tr * tile_m, i1 = std::min(seq_q, i0 + tile_m);
            begin_tile_row(root, c, i0, i1);
            for (const auto& [tc_lo, tc_hi] : candidate_tiles(root, c, i0, i1)) {
                for (int64_t tc = tc_lo; tc < tc_hi; ++tc) {
                    const Tile t{i0, i1, tc * tile_n, std::min(seq_k, (tc + 1) * tile_n), tc};
                    TileClass k = classify(root, c, t);
                    if (k == TileClass::partial) {
                        row_bits(root, c, t, bits.data());
                        const int64_t rows = t.i1 - t.i0, width = t.j1 - t.j0;
                        int64_t kept = 0;
                        for (int64_t w = 0; w < rows * c.row_words; ++w)
                            kept += __builtin_popcountll(bits[static_cast<size_t>(w)]);
                        k = kept == 0 ? TileClass::empty : kept == rows * width ? TileClass::full : TileClass::partial;
                        if (k == TileClass::partial) {
                            std::fill(words.begin(), words.end(), 0);
                            for (int64_t r = 0; r < rows; ++r)
                                for (int64_t c8 = 0; c8 < (width + 7) / 8; ++c8) {
                                    const uint64_t byte =
                                        (bits[static_cast<size_t>(r * c.row_words + c8 / 8)] >> (c8 % 8 * 8)) & 0xff;
                                    words[static_cast<size_t>(r / 8 * wc + c8)] |= byte << (r % 8 * 8);
                                }
                        }
                    }
                    if (k == TileClass::empty) continue;
                    STOF_CHECK(m.col_idx.size() < static_cast<size_t>(kMax), "mask has more than {} non-empty tiles", kMax);
                    m.append_tile(static_cast<int32_t>(tc),
                                  k == TileClass::full ? std::span<const uint64_t>() : std::span(words));
                }
            }
        }
        m.row_ptr.push_back(static_cast<int32_t>(m.col_idx.size()));
    }
    return m;
}

}  // namespace stof
