// Random dense masks for the mask tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace stof::test {

// keep[p, i, j] of shape [patterns, rows, cols], 0/1: per tm×tn tile either
// empty, full or partial at a random density, so every tile class occurs.
// At least one entry is kept when the array is not empty.
inline std::vector<uint8_t> random_keep(std::mt19937_64& rng, int64_t patterns, int64_t rows, int64_t cols, int tm, int tn) {
    std::vector<uint8_t> k(static_cast<size_t>(patterns * rows * cols));
    std::uniform_real_distribution<double> u(0, 1);
    for (int64_t p = 0; p < patterns; ++p)
        for (int64_t tr = 0; tr * tm < rows; ++tr)
            for (int64_t tc = 0; tc * tn < cols; ++tc) {
                const double kind = u(rng), density = kind < 0.3 ? 0.0 : kind < 0.5 ? 1.0 : u(rng) * u(rng);
                for (int64_t i = tr * tm; i < std::min<int64_t>(rows, (tr + 1) * tm); ++i)
                    for (int64_t j = tc * tn; j < std::min<int64_t>(cols, (tc + 1) * tn); ++j)
                        k[static_cast<size_t>((p * rows + i) * cols + j)] = u(rng) < density;
            }
    if (!k.empty()) k[static_cast<size_t>(rng() % k.size())] = 1;
    return k;
}

}  // namespace stof::test
