// CompileOptions of the tests that compile plans: NVRTC's kernels come from and go to
// the build's test kernel cache, so that a kernel is compiled once per build.
#pragma once

#include "compile.hpp"

#include <string>

namespace stof::test {

// The build's test kernel cache, test_tmp/plan_cache.
std::string kernel_cache_dir();

// Plans at precision p for arch, their kernels in kernel_cache_dir(), recording
// `model` as the plan's model.
CompileOptions compile_options(Precision p, const std::string& model = "", const std::string& arch = "sm_90");

}  // namespace stof::test
