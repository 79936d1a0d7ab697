// The analytical kernel selector (STOF's model): row-wise when
//   rho - tau / log2(seq_k / 16)^2 < 0,
// rho = non-empty 16x16 tiles / all 16x16 tiles of the mask. tau is calibrated on
// the H100 (selector_tau.hpp).
#include "stof/kernels/attention.hpp"
#include "stof/kernels/selector_tau.hpp"

#include <cmath>

namespace stof::kernels {

double attention_selector_tau() { return kAttentionSelectorTau; }

AttentionKernel select_attention_kernel(double rho, int32_t seq_k, double tau) {
    if (seq_k <= 16) return AttentionKernel::row_wise;  // log2(seq_k / 16) <= 0: a single 16-column tile
    const double lg = std::log2(static_cast<double>(seq_k) / 16.0);
    return rho - tau / (lg * lg) < 0 ? AttentionKernel::row_wise : AttentionKernel::block_wise;
}

}  // namespace stof::kernels
