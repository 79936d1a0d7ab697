// Residue folding of an attention mask.
//
// A mask that keeps (i, j) only where i ≡ j (mod p), with the same pattern for every
// residue r (keep(i'p + r, j'p + r) = keep(i'p, j'p)), is p independent attentions of
// rows / p queries and cols / p keys: queries i'p + r attend keys j'p + r under the folded
// mask F(i', j') = keep(i'p, j'p). Strided masks ((i - j) % p == 0, with or without a
// causal or window bound) fold; their tiles are all partial unfolded, and dense or banded
// folded. kernels::launch_folded_attention runs the folded problem.
#pragma once

#include "stof/sparse_mask.hpp"

#include <cstdint>

namespace stof {

struct MaskFold {
    int32_t period = 1;  // 1: m does not fold
    SparseMask mask;     // the folded mask when period > 1
};

// The largest period p in 2..64 that divides rows and cols, for which every pattern of m
// folds and the folded mask lists fewer tiles times p than m does, with that folded mask;
// period 1 when there is none. Costs a pass over m's kept entries (and stops early where a
// distance of 1 is kept).
MaskFold find_fold(const SparseMask& m);
inline int32_t fold_period(const SparseMask& m) { return find_fold(m).period; }

// The folded mask ([rows / p, cols / p], m's tiling and patterns) of a mask that folds
// with period p.
SparseMask fold_mask(const SparseMask& m, int32_t p);

}  // namespace stof
