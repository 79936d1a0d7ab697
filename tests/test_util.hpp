// Helpers shared by the tests.
#pragma once

#include "catch.hpp"
#include "ir/graph.hpp"
#include "stof/error.hpp"
#include "test_rng.hpp"

#include <random>
#include <string>

namespace stof::test {

// Paths baked in by CMake.
inline std::string source_dir() { return STOF_SOURCE_DIR; }
inline std::string binary_dir() { return STOF_BINARY_DIR; }

// Runs f, requires it to throw stof::Error whose message contains `needle`.
template <class F> void require_error(F&& f, const std::string& needle) {
    try {
        f();
    } catch (const stof::Error& e) {
        INFO("message: " << e.what());
        CHECK(std::string(e.what()).find(needle) != std::string::npos);
        return;
    }
    FAIL("expected a stof::Error containing '" << needle << "'");
}

// How often `what` occurs in s (overlapping occurrences counted).
size_t count(const std::string& s, const std::string& what);

// A tensor of standard-normal floats (fresh per call unless seeded).
Tensor random_tensor(DType dt, const Shape& shape, std::mt19937_64& rng);
// f32 weights drawn N(0, 1/fan_in), as a trained layer's are scaled: a layer's outputs stay
// near 1, so 16-bit rounding of its inputs stays small beside them.
Tensor random_weights(const Shape& shape, int64_t fan_in, std::mt19937_64& rng);

}  // namespace stof::test
