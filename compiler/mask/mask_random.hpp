// The seeded generator behind random:B:R:SEED and bigbird's random blocks.
//
// Defined bit for bit here so a mask is identical on every machine and can be
// re-derived outside stofc (tests/mask/check_mask_cli.py does so in Python):
//
//   mix(z)     = z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27; z *= 0x94D049BB133111EB; z ^ (z >> 31)
//   next()     : state += 0x9E3779B97F4A7C15; return mix(state)          (splitmix64)
//   below(n)   = (next() * n) >> 64   (128-bit product; a value in [0, n))
//
// All arithmetic is modulo 2^64. For block row `br`, the generator starts at
// state = mix(SEED ^ mix(br)) and picks R distinct block columns out of
// n = ceil(seq_k / B) with Floyd's algorithm:
//
//   chosen = {}
//   for t in n - R .. n - 1:  v = below(t + 1); chosen += (v in chosen ? t : v)
//
// R >= n keeps every block column.
#pragma once

#include <cstdint>
#include <vector>

namespace stof {

uint64_t splitmix64_mix(uint64_t z);

// The block columns (ascending, distinct) that random:B:R:SEED keeps in block row `block_row`
// when there are `block_cols` block columns.
std::vector<int64_t> random_block_columns(uint64_t seed, int64_t block_row, int64_t block_cols, int64_t count);

}  // namespace stof
