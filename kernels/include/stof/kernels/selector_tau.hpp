// tau of the attention kernel selector (row-wise when rho - tau / log2(N/16)^2 < 0),
// calibrated on the H100 by tools/bench/calibrate_selector.py: the block-wise kernel
// was faster at 72 of 73 measured points, so tau = 0 (docs/PERF.md,
// docs/calibration/attention_selector.json). Host-only: the compiler reads it too.
#pragma once

namespace stof::kernels {

inline constexpr double kAttentionSelectorTau = 0.0;

}  // namespace stof::kernels
