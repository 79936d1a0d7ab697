// A compiled plan run on the GPU against a reference output.
#pragma once

#include "stof/plan.hpp"
#include "stof/tensor.hpp"

#include <map>
#include <string>

namespace stof::test {

// Writes plan to path, runs it through the runtime on `feeds` with output 0's memory poisoned
// first, and checks the output named `output` against `want` (relative and absolute
// `tolerance`), describing the worst elements when it fails.
void check_plan_output(const plan::Plan& plan, const std::string& path, const std::map<std::string, Tensor>& feeds,
                       const std::string& output, const Tensor& want, double tolerance);

}  // namespace stof::test
