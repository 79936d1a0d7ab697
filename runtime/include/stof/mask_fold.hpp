// Residue folding of an attention mask.
//
// A keep mask that keeps (i, j) only where i ≡ j (mod p), with the same pattern for every
// residue r (keep(i'p + r, j'p + r) = keep(i'p, j'p)), is p independent attentions of
// rows / p queries and cols / p keys: queries i'p + r attend keys j'p + r under the folded
// mask F(i', j') = keep(i'p, j'p). Strided masks ((i - j) % p == 0, with or without a
// causal or window bound) fold; their tiles are all partial unfolded, and dense or banded
// folded. kernels::launch_folded_attention runs the folded problem.
#pragma once

#include <cstdint>
#include <vector>

namespace stof {

// The largest period p in 2..64 that divides rows and cols, for which keep
// ([mask_batch, mask_heads, rows, cols], nonzero = keep) folds and the folded masks of
// all patterns list fewer tile_m × tile_n tiles times p than the unfolded ones; 1 when there
// is none.
int32_t fold_period(const uint8_t* keep, int32_t mask_batch, int32_t mask_heads, int32_t rows, int32_t cols,
                    int32_t tile_m = 64, int32_t tile_n = 64);

// The folded keep array [mask_batch, mask_heads, rows / p, cols / p] of a keep array that
// folds with period p.
std::vector<uint8_t> fold_keep(const uint8_t* keep, int32_t mask_batch, int32_t mask_heads, int32_t rows, int32_t cols,
                               int32_t p);

}  // namespace stof
