// The kernels' selector entry points over the one selector (stof/kernels/selector.hpp).
#include "stof/kernels/attention.hpp"
#include "stof/kernels/selector.hpp"

namespace stof::kernels {

double attention_selector_tau() { return kAttentionSelectorTau; }

AttentionKernel select_attention_kernel(double rho, int32_t seq_k, double tau) {
    return decide_attention_kernel(rho, seq_k, tau).row_wise ? AttentionKernel::row_wise : AttentionKernel::block_wise;
}

}  // namespace stof::kernels
