// The analytical attention kernel selector (STOF's model), the one copy: the
// kernels' select_attention_kernel, the runtime's C API, `stofc compile` and
// `stofc mask` all decide with it.
//
//   row-wise   when  rho - tau / log2(N / 16)^2 < 0,   else block-wise
// rho = non-empty 16x16 tiles / all 16x16 tiles of the mask (stof::mask_stats().rho),
// N = seq_k. N <= 16 always picks row-wise (a single 16-column tile: the bound is
// infinite there).
// tau is calibrated by tools/bench/calibrate_selector.py: on the H200 the block-wise
// kernel (the Hopper one) was faster at all 132 measured points, element-sparse masks
// and S = 128 included, so tau = 0 (docs/PERF.md, docs/calibration/attention_selector.json).
// Host-only and header-only, no CUDA headers: the compiler reads it without the kernels.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

namespace stof::kernels {

inline constexpr double kAttentionSelectorTau = 0.0;

struct SelectorDecision {
    bool row_wise = false;  // else block-wise
    double rho = 0, tau = 0;
    double bound = 0;    // tau / log2(N / 16)^2 (infinity for N <= 16)
    std::string reason;  // one line: the comparison that decided

    const char* kernel_name() const { return row_wise ? "row-wise" : "block-wise"; }
};

inline SelectorDecision decide_attention_kernel(double rho, int64_t seq_k, double tau = kAttentionSelectorTau) {
    SelectorDecision d;
    d.rho = rho;
    d.tau = tau;
    char text[160];
    if (seq_k <= 16) {
        d.bound = std::numeric_limits<double>::infinity();
        d.row_wise = true;
        std::snprintf(text, sizeof text, "N = %lld <= 16: every row is short", static_cast<long long>(seq_k));
    } else {
        const double l = std::log2(static_cast<double>(seq_k) / 16.0);
        d.bound = tau / (l * l);
        d.row_wise = rho - d.bound < 0;
        std::snprintf(text, sizeof text, "rho - tau/log2(N/16)^2 = %.4f - %g/%.3f^2 = %+.4f %s 0 (N = %lld)", rho, tau, l,
                      rho - d.bound, d.row_wise ? "<" : ">=", static_cast<long long>(seq_k));
    }
    d.reason = text;
    return d;
}

}  // namespace stof::kernels
