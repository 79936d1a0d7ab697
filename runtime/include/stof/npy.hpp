// NumPy .npy files (format versions 1–3): little-endian, C order, dtypes
// float32, float16, float64, int64, int32, int8, uint8 and bool.
// Anything else (Fortran order, big-endian, object arrays, structured dtypes)
// is rejected with a stof::Error naming the file and the reason.
#pragma once

#include "stof/tensor.hpp"

#include <string>

namespace stof {

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);

// In-memory variants (used by tests and the fuzzers).
Tensor parse_npy(const std::string& bytes, const std::string& what);
std::string serialize_npy(const Tensor& t);

}  // namespace stof
