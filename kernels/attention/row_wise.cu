// Row-wise attention instances: f16 and bf16, head_dim 32, 64, 80, 96 and 128.
#include "row_wise.cuh"

namespace stof::kernels::attn {
template cudaError_t launch_row_wise<ElemType::f16, 32>(const AttnParams&, cudaStream_t);
template cudaError_t launch_row_wise<ElemType::f16, 64>(const AttnParams&, cudaStream_t);
template cudaError_t launch_row_wise<ElemType::f16, 80>(const AttnParams&, cudaStream_t);
template cudaError_t launch_row_wise<ElemType::f16, 96>(const AttnParams&, cudaStream_t);
template cudaError_t launch_row_wise<ElemType::f16, 128>(const AttnParams&, cudaStream_t);
template cudaError_t launch_row_wise<ElemType::bf16, 32>(const AttnParams&, cudaStream_t);
template cudaError_t launch_row_wise<ElemType::bf16, 64>(const AttnParams&, cudaStream_t);
template cudaError_t launch_row_wise<ElemType::bf16, 80>(const AttnParams&, cudaStream_t);
template cudaError_t launch_row_wise<ElemType::bf16, 96>(const AttnParams&, cudaStream_t);
template cudaError_t launch_row_wise<ElemType::bf16, 128>(const AttnParams&, cudaStream_t);
}  // namespace stof::kernels::attn
