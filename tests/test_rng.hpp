// The seeded random generator of every randomized test (no compiler headers:
// the kernel tests use it too).
#pragma once

#include "catch.hpp"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>

namespace stof::test {

// A generator seeded from the clock, or from STOF_TEST_SEED when set; the seed is
// printed with the test's failures so that a failure can be replayed.
inline std::mt19937_64 make_rng() {
    uint64_t seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    if (const char* s = std::getenv("STOF_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
    UNSCOPED_INFO("random seed " << seed << " (replay with STOF_TEST_SEED=" << seed << ")");
    return std::mt19937_64(seed);
}

}  // namespace stof::test
