// GPU presence for [gpu] tests. Where no usable GPU is present a test prints
// "STOF-SKIP: <reason>" and returns; CTest reports it as skipped.
#pragma once

#include "catch.hpp"

#include <cuda_runtime.h>

#include <cstdio>
#include <string>

namespace stof::test {

// True when the CUDA runtime sees at least one device; else `why` (when not
// null) says what is missing.
inline bool gpu_available(std::string* why) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess && count > 0) return true;
    if (why) *why = e == cudaSuccess ? "no CUDA device" : std::string("no CUDA device: ") + cudaGetErrorString(e);
    return false;
}

}  // namespace stof::test

// First statement of a [gpu] test: skip it where no GPU is present.
#define STOF_REQUIRE_GPU()                                                  \
    do {                                                                    \
        std::string stof_why_;                                              \
        if (!::stof::test::gpu_available(&stof_why_)) {                     \
            std::printf("STOF-SKIP: %s\n", stof_why_.c_str());              \
            std::fflush(stdout);                                            \
            return;                                                         \
        }                                                                   \
    } while (0)
