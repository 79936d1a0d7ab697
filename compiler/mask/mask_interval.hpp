// Interval bounds of the elementwise ops an attention mask is built from
// (passes/mask_tiles.hpp): for argument sets a[0..k), a set that holds the op's
// result (rounded to its dtype) for every choice of arguments from them.
#pragma once

#include "ir/op.hpp"
#include "stof/dtype.hpp"

#include <cstddef>
#include <limits>

namespace stof::interval {

// A set of numbers: the range [lo, hi] (empty when lo > hi), and NaN when `nan`.
struct Iv {
    double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
    bool nan = false;
};

Iv point(double x);
Iv top();  // every number and NaN
bool empty(const Iv& a);
bool single(const Iv& a);
bool exact(const Iv& a);    // one value: a number or NaN
double value(const Iv& a);  // the value of an exact set
Iv boolean(bool can_false, bool can_true);
Iv hull(const Iv& a, const Iv& b);

// Whether `op` has interval bounds here; view ops (Identity, Expand, Reshape, Unsqueeze,
// Squeeze) only move a value to another rank or broadcast it, and read argument 0 alone.
bool interval_op(ir::Op op);
bool view_op(ir::Op op);
// The result of `op` (an interval_op) with result dtype `dtype` over arguments a[0..k).
Iv apply(ir::Op op, DType dtype, const Iv* a, size_t k);

}  // namespace stof::interval
