// Check macros for the CUDA runtime, the CUDA driver and cuBLASLt: a failing
// call throws stof::Error naming the call and the library's error string.
#pragma once

#include "stof/error.hpp"

#include <cublasLt.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <string>

namespace stof {

// "CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)"; works before and
// without a driver (then it says the code only).
std::string driver_error_string(CUresult r);

}  // namespace stof

// STOF_CUDA_CHECK(cudaMalloc(&p, n));
#define STOF_CUDA_CHECK(call)                                                                               \
    do {                                                                                                    \
        const cudaError_t stof_e_ = (call);                                                                 \
        if (stof_e_ != cudaSuccess)                                                                         \
            STOF_FAIL("{} failed: {} ({})", #call, cudaGetErrorString(stof_e_), cudaGetErrorName(stof_e_)); \
    } while (0)

// STOF_CU_CHECK(driver().cuModuleLoadData(&m, image));
#define STOF_CU_CHECK(call)                                                                                   \
    do {                                                                                                      \
        const CUresult stof_r_ = (call);                                                                      \
        if (stof_r_ != CUDA_SUCCESS) STOF_FAIL("{} failed: {}", #call, ::stof::driver_error_string(stof_r_)); \
    } while (0)

// STOF_CUBLAS_CHECK(cublasLtMatmul(...));
#define STOF_CUBLAS_CHECK(call)                                                                                       \
    do {                                                                                                              \
        const cublasStatus_t stof_s_ = (call);                                                                        \
        if (stof_s_ != CUBLAS_STATUS_SUCCESS)                                                                         \
            STOF_FAIL("{} failed: {} ({})", #call, cublasLtGetStatusString(stof_s_), cublasLtGetStatusName(stof_s_)); \
    } while (0)
