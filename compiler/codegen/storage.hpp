// How values are stored in a plan of a given precision ("fp32", "fp16", "bf16").
// Float tensors are stored in the plan precision (kernels compute in fp32);
// integer and bool tensors keep their type.
#pragma once

#include "stof/tensor.hpp"

#include <string>

namespace stof::codegen {

DType float_storage(const std::string& precision);
DType storage_dtype(DType t, const std::string& precision);
// t converted to its storage dtype. Finite values beyond the fp16 range are
// clamped to ±65504 (exporters write -3.4e38 for "minus infinity" in masks).
Tensor storage_tensor(const Tensor& t, const std::string& precision);

}  // namespace stof::codegen
