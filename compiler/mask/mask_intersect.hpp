// The intersection of two masks in the sparse format, tile by tile: a tile
// is kept only where both list it, full where both are full, else the AND of
// the bitmaps (a tile whose AND keeps nothing is dropped, one that keeps every
// in-range entry becomes full). O(listed tiles + partial tiles x words).
#pragma once

#include "stof/sparse_mask.hpp"

namespace stof {

// a and b: the same rows, cols and tiles; patterns [Ba, Ha] and [Bb, Hb] that
// broadcast (each 1 or equal). The result has the broadcast patterns.
SparseMask intersect_masks(const SparseMask& a, const SparseMask& b);

}  // namespace stof
