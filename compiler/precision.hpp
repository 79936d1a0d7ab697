// The precision of a plan: the type its float tensors are stored in (kernels
// compute in fp32 and round once when they store). Integer and bool tensors
// keep their type.
#pragma once

#include "stof/tensor.hpp"

#include <string_view>

namespace stof {

enum class Precision : uint8_t { fp32, fp16, bf16 };

// "fp32" | "fp16" | "bf16"; a stof::Error names the accepted spellings otherwise.
Precision parse_precision(std::string_view name);
const char* precision_name(Precision p);

// The float type of a plan of precision p.
DType float_dtype(Precision p);
// The type a tensor of type t is stored in.
DType plan_dtype(DType t, Precision p);
// t converted to plan_dtype. Finite values beyond the fp16 range are clamped to
// ±65504 (exporters write -3.4e38 for "minus infinity" in masks); *clamped (when given)
// gets how many.
Tensor to_plan_precision(const Tensor& t, Precision p, int64_t* clamped = nullptr);

}  // namespace stof
