// Block-wise attention instances: f16, head_dim 80 (block_m 64 and 128).
#include "block_wise.cuh"

namespace stof::kernels::attn {
template cudaError_t launch_block_wise<ElemType::f16, 80>(const AttnParams&, int, cudaStream_t);
}  // namespace stof::kernels::attn
