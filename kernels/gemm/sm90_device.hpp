// The device check in front of the sm_90a GEMM kernels (gemm_gelu.cu, gemm_swiglu.cu).
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace stof::kernels::gemm {

// "" when the current device is of compute capability 9.0, else why the kernels cannot run.
inline std::string sm90_device_refusal() {
    int dev = 0, major = 0, minor = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (e != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(e);
    if (major != 9 || minor != 0)
        return "the device is of compute capability " + std::to_string(major) + "." + std::to_string(minor) +
               ", the kernel runs on 9.0 alone";
    return "";
}

}  // namespace stof::kernels::gemm
