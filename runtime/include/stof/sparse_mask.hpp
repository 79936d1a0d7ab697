// The two-level sparse attention mask format (BSR over outer tiles + 8×8 bitmaps).
//
// A mask says which (query row i, key column j) pairs attend: keep(i, j).
// The rows × cols score matrix is cut into outer tiles of tile_m × tile_n
// (default 64 × 64; tile_m and tile_n are multiples of 8). Each tile is
//   empty   — no kept entry in range: not listed, never loaded by a kernel;
//   full    — every in-range entry kept: computed with no masking;
//   partial — anything else: computed, then masked with its bitmap.
// A tile at the matrix edge is classified by its in-range entries only;
// kernels mask columns >= cols and ignore rows >= rows themselves.
//
// Several patterns can be stored (per head, per batch): the pattern used by
// (batch b, head h) is  p = (mask_batch == 1 ? 0 : b) * mask_heads + (mask_heads == 1 ? 0 : h).
//
// Arrays (all patterns concatenated):
//   row_ptr    int32 [patterns * (tile_rows + 1)]  per pattern, per tile row: offsets into
//              col_idx (absolute, so pattern p's tile row r lists
//              col_idx[row_ptr[p*(tile_rows+1)+r] .. row_ptr[p*(tile_rows+1)+r+1]) )
//   col_idx    int32 [nnz_tiles]  tile column of each non-empty tile, ascending within a row
//   bitmap_idx int32 [nnz_tiles]  -1 for a full tile; for a partial tile, k such that its
//              bitmap is bitmaps[k*words_per_tile .. (k+1)*words_per_tile)
//   bitmaps    uint64 [partial_tiles * words_per_tile]  word (r8, c8) of a tile at
//              index r8 * (tile_n/8) + c8 covers rows 8*r8..8*r8+7 and columns 8*c8..8*c8+7
//              of the tile; bit r*8 + c is (row r, column c) of that 8×8 block; 1 = keep.
//              Bits of out-of-range entries are 0.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <span>
#include <vector>

namespace stof {

struct SparseMask {
    int32_t rows = 0, cols = 0;
    int32_t tile_m = 64, tile_n = 64;
    int32_t mask_batch = 1, mask_heads = 1;
    std::vector<int32_t> row_ptr;
    std::vector<int32_t> col_idx;
    std::vector<int32_t> bitmap_idx;
    std::vector<uint64_t> bitmaps;

    int32_t tile_rows() const { return (rows + tile_m - 1) / tile_m; }
    int32_t tile_cols() const { return (cols + tile_n - 1) / tile_n; }
    int32_t words_per_tile() const { return (tile_m / 8) * (tile_n / 8); }
    int32_t patterns() const { return mask_batch * mask_heads; }
    int32_t pattern_of(int32_t b, int32_t h) const {
        return (mask_batch == 1 ? 0 : b) * mask_heads + (mask_heads == 1 ? 0 : h);
    }

    // Appends a non-empty tile at tile column `col` to the tile row being built: full
    // (bitmap index -1) when `partial_words` is empty, else partial with these
    // words_per_tile() bitmap words.
    void append_tile(int32_t col, std::span<const uint64_t> partial_words);

    // keep(i, j) of pattern p, read from the format (slow; for tests and tools).
    bool keep(int32_t p, int32_t i, int32_t j) const;

    // Checks every size, offset and index; throws stof::Error naming the first
    // inconsistency. Used on masks read from plan files and built by tools.
    void validate() const;
};

// Counts that describe a mask (per all patterns together).
struct SparseMaskStats {
    int64_t nnz = 0;     // kept entries
    double density = 0;  // nnz / (patterns * rows * cols)
    int64_t empty_tiles = 0, full_tiles = 0, partial_tiles = 0;
    double rho = 0;  // non-empty 16×16 tiles / all 16×16 tiles
};

SparseMaskStats mask_stats(const SparseMask& m);

// How alike the lists of `group` consecutive tile rows are (rows 0..group-1, group..2group-1,
// ... of every pattern): tiles listed / the sum over groups of (rows in the group x tiles in
// the union of its lists); 1 when the rows of each group list the same tiles, 0 for a mask
// that lists none or has no arrays (a run-time mask's shape).
double grouped_row_fill(const SparseMask& m, int32_t group);

// The most tiles one tile row lists, and the mean over the tile rows of every pattern; zeros
// for a mask that has no arrays (a run-time mask's shape). long_rows: the tile rows, up to
// kLongRows of them, longest first, that list at least 16 tiles (the Hopper attention kernel's
// SPLIT_MIN, which shares such rows) and 4 times the mean in some pattern; -1 past them.
inline constexpr int kLongRows = 4;
struct TileRowLengths {
    int32_t longest = 0;
    double mean = 0;
    std::array<int32_t, kLongRows> long_rows{-1, -1, -1, -1};
};
TileRowLengths tile_row_lengths(const SparseMask& m);

// The dense reference: keep(i, j) for pattern p as a rows × cols row-major byte array.
std::vector<uint8_t> to_dense(const SparseMask& m, int32_t p);

// The format of a dense keep array (nonzero = keep) of shape
// [mask_batch, mask_heads, rows, cols], row-major.
SparseMask from_dense(const uint8_t* keep, int32_t mask_batch, int32_t mask_heads, int32_t rows, int32_t cols,
                      int32_t tile_m = 64, int32_t tile_n = 64);

}  // namespace stof
