#include "mask/mask_random.hpp"

#include <algorithm>

namespace stof {

uint64_t splitmix64_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::vector<int64_t> random_block_columns(uint64_t seed, int64_t block_row, int64_t block_cols, int64_t count) {
    std::vector<int64_t> chosen;
    if (block_cols <= 0 || count <= 0) return chosen;
    if (count >= block_cols) {
        chosen.resize(static_cast<size_t>(block_cols));
        for (int64_t c = 0; c < block_cols; ++c) chosen[static_cast<size_t>(c)] = c;
        return chosen;
    }
    uint64_t state = splitmix64_mix(seed ^ splitmix64_mix(static_cast<uint64_t>(block_row)));
    auto below = [&state](int64_t n) {
        state += 0x9E3779B97F4A7C15ull;
        const uint64_t x = splitmix64_mix(state);
        return static_cast<int64_t>((static_cast<unsigned __int128>(x) * static_cast<uint64_t>(n)) >> 64);
    };
    if (count <= 64) {
        // Few picks: a sorted list; t is larger than every earlier pick, so appending keeps it sorted.
        chosen.reserve(static_cast<size_t>(count));
        for (int64_t t = block_cols - count; t < block_cols; ++t) {
            const int64_t v = below(t + 1);
            const auto it = std::lower_bound(chosen.begin(), chosen.end(), v);
            if (it != chosen.end() && *it == v) chosen.push_back(t);
            else chosen.insert(it, v);
        }
        return chosen;
    }
    std::vector<uint8_t> taken(static_cast<size_t>(block_cols), 0);
    for (int64_t t = block_cols - count; t < block_cols; ++t) {
        const int64_t v = below(t + 1);
        taken[static_cast<size_t>(taken[static_cast<size_t>(v)] ? t : v)] = 1;
    }
    chosen.reserve(static_cast<size_t>(count));
    for (int64_t c = 0; c < block_cols; ++c)
        if (taken[static_cast<size_t>(c)]) chosen.push_back(c);
    return chosen;
}

}  // namespace stof
