// Shape ranges of a plan (plan::ShapeRanges): which bucket runs a given shape, and the
// actual shapes of its inputs and outputs.
//
// stofc compiles a variable of range [min, max] for the bucket sizes bucket_sizes
// gives: by default every power of two p with min <= p < max, then max (128..1024:
// 128, 256, 512, 1024; 100..1000: 128, 256, 512, 1000; 1..8: 1, 2, 4, 8). A plan
// holds the product of its variables' bucket sizes, at most kMaxBuckets, and records
// each bucket's sizes: a variable's bucket sizes are the sizes its buckets take
// (var_buckets). A shape runs on the bucket whose sizes are, per variable, the
// smallest bucket size >= the actual size.
#pragma once

#include "stof/plan.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace stof::plan {

constexpr size_t kMaxBuckets = 32;

// The bucket sizes of a variable of range [min, max] (1 <= min <= max) with
// `per_doubling` sizes between consecutive powers of two (1..16): p * (1 + k / n)
// rounded up, k = 0..n-1 (n = 4: 128, 160, 192, 224, 256, 320, ...), those in [min,
// max), then max.
constexpr int kMaxBucketsPerDoubling = 16;
std::vector<int64_t> bucket_sizes(int64_t min, int64_t max, int per_doubling = 1);

// The sizes variable v takes in r's buckets, ascending.
std::vector<int64_t> var_buckets(const ShapeRanges& r, size_t v);

// The shape `bucket_shape` (of a bucket's input or output) with each dimension that
// follows a variable (dims[d] >= 0) set to that variable's value.
Shape bound_shape(const Shape& bucket_shape, const std::vector<int32_t>& dims, const std::vector<int64_t>& values);

// Sets the variables that input `index` (called `name` in messages) follows from
// its actual shape; checks the rank, the fixed dimensions (equal to `bucket_shape`'s)
// and each variable's range. Throws stof::Error naming the input and the range.
void bind_input_shape(const ShapeRanges& r, size_t index, const std::string& name, const Shape& bucket_shape,
                      const Shape& actual, std::vector<int64_t>& values);

// The bucket that runs variables of sizes `values` (each inside its range).
size_t pick_bucket(const ShapeRanges& r, const std::vector<int64_t>& values);

// How a run binds a bucket's inputs and outputs at their actual shapes: a tensor whose
// actual shape equals its shape in the bucket is bound in place (the run reads or writes
// the bucket's own buffer, as a plan compiled for exactly that shape does: no copy); the
// others are padded into the bucket's buffer (inputs) or cut back out of it (outputs).
struct BucketBinding {
    std::vector<bool> input_in_place, output_in_place;  // per input / output of the bucket
    bool all_in_place() const;
};
// `inputs` and `outputs`: the actual shapes, one per input / output of `bucket`.
BucketBinding bind_bucket(const Plan& bucket, const std::vector<Shape>& inputs, const std::vector<Shape>& outputs);

// "seq=128..1024 (buckets 128, 256, 512, 1024)" per variable, "; "-separated.
std::string describe_ranges(const ShapeRanges& r);
// "batch=2, seq=256": the variables' sizes in bucket b.
std::string describe_bucket(const ShapeRanges& r, size_t b);

}  // namespace stof::plan
