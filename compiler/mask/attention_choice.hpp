// Which sparse attention kernel the analytical selector picks for a mask, and why.
//
//   row-wise   when  rho - tau / log2(N / 16)^2 < 0,   else block-wise
// rho = non-empty 16x16 tiles / all 16x16 tiles (mask_stats().rho), N = seq_k,
// tau = stof::kernels::kAttentionSelectorTau. N <= 16 always picks row-wise (the
// bound is infinite there).
// Host-only mirror of stof::kernels::select_attention_kernel and
// attention_selector_tau (kernels/include/stof/kernels/attention.hpp), which
// own the calibrated tau; this copy lets the compiler report the choice
// without linking the CUDA kernels.
#pragma once

#include <cstdint>
#include <string>

namespace stof {

struct AttentionChoice {
    std::string kernel;   // "row-wise" or "block-wise"
    double rho = 0, tau = 0;
    double bound = 0;     // tau / log2(N / 16)^2 (infinity for N <= 16)
    std::string reason;   // one line: the comparison that decided
};

double attention_tau();
AttentionChoice choose_attention_kernel(double rho, int64_t seq_k);

}  // namespace stof
