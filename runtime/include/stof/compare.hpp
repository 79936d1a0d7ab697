// Output comparison used by `stofc eval --expect` and `stof-run --expect`.
#pragma once

#include "stof/tensor.hpp"

#include <string>

namespace stof {

struct Comparison {
    bool ok = false;
    double max_abs = 0;      // worst |actual - expected|
    double max_rel = 0;      // worst |actual - expected| / |expected| over elements with expected != 0
    int64_t mismatches = 0;  // elements outside atol + rtol * |expected|
    int64_t worst = -1;      // flat index of the element farthest outside the tolerance
    std::string reason;      // set when the shapes or kinds differ
};

// A stof::Error unless rtol and atol are finite and >= 0 (a NaN tolerance would let
// every comparison pass). compare() checks them; the CLIs check them before running.
void check_tolerances(double rtol, double atol);

// numpy.allclose semantics per element: |a - e| <= atol + rtol * |e|; NaN
// matches only NaN. Any float dtypes compare in double; integer and bool
// tensors compare by value. Shapes must be equal.
Comparison compare(const Tensor& actual, const Tensor& expected, double rtol, double atol);

// "max abs 1.2e-05, max rel 3.4e-04, 0 of 1024 outside rtol=1e-3 atol=1e-4"
std::string describe(const Comparison& c, const Tensor& expected, double rtol, double atol);

}  // namespace stof
