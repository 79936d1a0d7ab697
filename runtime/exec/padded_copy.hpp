// Copies between a tensor at its actual shape and the same tensor in a shape bucket
// (stof/shape_ranges.hpp): row-major, the actual shape inside the bucket's
// (actual[d] <= bucket[d] for every d), at the same indices.
#pragma once

#include "stof/tensor.hpp"

#include <cuda_runtime.h>

#include <cstddef>

namespace stof::exec {

// dst (bucket shape) = src (actual shape), zeros elsewhere. Enqueued on `stream`;
// either pointer may be device, managed or page-locked host memory.
void pad_into_bucket(void* dst, const Shape& bucket, const void* src, const Shape& actual, size_t elem_bytes,
                     cudaStream_t stream);

// dst (actual shape) = the part of src (bucket shape) at the actual shape's indices.
void cut_from_bucket(void* dst, const Shape& actual, const void* src, const Shape& bucket, size_t elem_bytes,
                     cudaStream_t stream);

}  // namespace stof::exec
