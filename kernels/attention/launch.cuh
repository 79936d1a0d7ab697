// Launch helpers shared by the attention kernels' launchers.
#pragma once

#include <cuda_runtime.h>

namespace stof::kernels::attn {

// Gives `Kernel` `smem_bytes` of dynamic shared memory and the largest shared-memory
// carveout, once per device (the first 64 devices; others every call). `dev`: the
// current device.
template <auto Kernel> cudaError_t configure_shared_memory(int smem_bytes, int& dev) {
    static bool configured[64] = {};
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    const bool cached = dev >= 0 && dev < 64;
    if (cached && configured[dev]) return cudaSuccess;
    e = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
    if (e != cudaSuccess) return e;
    e = cudaFuncSetAttribute(Kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
    if (e != cudaSuccess) return e;
    if (cached) configured[dev] = true;
    return cudaSuccess;
}

}  // namespace stof::kernels::attn
