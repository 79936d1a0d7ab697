// Small hand-built plans that use every part of the plan format, for the plan
// file tests (tests/runtime/test_plan.cpp) and the fuzzer's seed corpus
// (tests/fuzz/make_plan_corpus.cpp). Host-only: needs nothing but stof_core.
#pragma once

#include "stof/plan.hpp"

#include <cstdint>

namespace stof::test {

// One transformer-layer-like plan over x: f16 [2, 16, 32] with a [2, 16] padding mask:
// a gemm with a bias epilogue (QKV projection), a key_valid step, a masked attention
// step over 2 heads of 16, two kernel launches (one kernel with cubin and PTX, one
// with PTX only; pointer, i32, i64 and f32 arguments) and a copy to a second output.
// Two masks (one pattern, 8×8 tiles; two per-head patterns with 16×8 tiles on a
// 24×20 matrix) and `seed`-random cubin and weight bytes. Passes plan::validate.
plan::Plan sample_plan(uint64_t seed);

// The smallest valid plan: one input copied to one output, no kernels, masks or weights.
plan::Plan minimal_plan();
// The same copy over `in` f32 [n] (minimal_plan: n = 4).
plan::Plan copy_plan(int64_t n);
// A plan for the shape range n = 3..8: the copy plans of its buckets 4 and 8.
plan::Plan ranged_plan();

}  // namespace stof::test
