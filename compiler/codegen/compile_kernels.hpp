// NVRTC compilation of a lowered plan's generated kernels.
#pragma once

#include "codegen/lower.hpp"
#include "codegen/lower_state.hpp"

namespace stof::codegen {

// Gives each distinct source among st.jobs one plan kernel (renaming entry points
// whose keys collide), compiles them in parallel (opt.jobs threads; the kernel
// cache in opt.cache_dir) and points the launch steps at them.
void compile_kernels(LowerState& st, const LowerOptions& opt);

}  // namespace stof::codegen
