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

// A tensor of standard-normal floats (fresh per call unless seeded).
Tensor random_tensor(DType dt, const Shape& shape, std::mt19937_64& rng);

}  // namespace stof::test
