// Whether a candidate's outputs match the unfused segment's (the reference) closely
// enough for the candidate to be used: per output, same dtype and shape, the same
// non-finite values at the same places, and ‖candidate − reference‖₂ ≤ tol · ‖reference‖₂
// over the finite ones, tol = 1e-4 for fp32 outputs and 1e-2 for 16-bit ones.
#pragma once

#include "stof/tensor.hpp"

#include <string>
#include <vector>

namespace stof::tune {

// Empty when they match; else why not ("output 1: relative error 3.2e-2 > 1e-2").
std::string check_outputs(const std::vector<Tensor>& candidate, const std::vector<Tensor>& reference);

double output_tolerance(DType t);

}  // namespace stof::tune
