#include "mask/attention_choice.hpp"

#include "stof/kernels/selector_tau.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace stof {

double attention_tau() { return kernels::kAttentionSelectorTau; }

AttentionChoice choose_attention_kernel(double rho, int64_t seq_k) {
    AttentionChoice a;
    a.rho = rho;
    a.tau = attention_tau();
    if (seq_k <= 16) {
        a.bound = std::numeric_limits<double>::infinity();
        a.kernel = "row-wise";
        a.reason = fmt::format("N = {} <= 16: every row is short", seq_k);
        return a;
    }
    const double l = std::log2(static_cast<double>(seq_k) / 16.0);
    a.bound = a.tau / (l * l);
    const bool row_wise = rho - a.bound < 0;
    a.kernel = row_wise ? "row-wise" : "block-wise";
    a.reason = fmt::format("rho - tau/log2(N/16)^2 = {:.4f} - {}/{:.3f}^2 = {:+.4f} {} 0 (N = {})", rho, a.tau, l, rho - a.bound,
                           row_wise ? "<" : ">=", seq_k);
    return a;
}

}  // namespace stof
