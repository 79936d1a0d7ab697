// Helpers for [gpu] tests: GPU presence (where no usable GPU is present a test
// prints "STOF-SKIP: <reason>" and returns; CTest reports it as skipped), checked
// CUDA calls and device buffers.
#pragma once

#include "catch.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

// Requires a CUDA runtime call to succeed, naming the call and the error.
#define CUDA_REQUIRE(expr)                                                                          \
    do {                                                                                            \
        const cudaError_t cuda_err_ = (expr);                                                       \
        INFO(#expr << ": " << cudaGetErrorName(cuda_err_) << " " << cudaGetErrorString(cuda_err_)); \
        REQUIRE(cuda_err_ == cudaSuccess);                                                          \
    } while (0)

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

// Device memory owned by the test (at least 16 bytes, so that an empty buffer
// still has an address); freed at scope exit, a failed free reported.
struct DeviceBuffer {
    void* ptr = nullptr;
    size_t bytes = 0;
    explicit DeviceBuffer(size_t n) : bytes(n) { CUDA_REQUIRE(cudaMalloc(&ptr, std::max<size_t>(n, 16))); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() {
        if (ptr == nullptr) return;
        if (const cudaError_t e = cudaFree(ptr); e != cudaSuccess)
            std::fprintf(stderr, "cudaFree failed: %s\n", cudaGetErrorString(e));
    }
    template <class T> T* as() const { return static_cast<T*>(ptr); }
};

// h copied to the start of d.
template <class T> void upload(DeviceBuffer& d, const std::vector<T>& h) {
    REQUIRE(h.size() * sizeof(T) <= d.bytes);
    if (!h.empty()) CUDA_REQUIRE(cudaMemcpy(d.ptr, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
}

// `count` elements from device address src.
template <class T> std::vector<T> download(const void* src, size_t count) {
    std::vector<T> v(count);
    if (count > 0) CUDA_REQUIRE(cudaMemcpy(v.data(), src, count * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
}

}  // namespace stof::test

// First statement of a [gpu] test: skip it where no GPU is present.
#define STOF_REQUIRE_GPU()                                     \
    do {                                                       \
        std::string stof_why_;                                 \
        if (!::stof::test::gpu_available(&stof_why_)) {        \
            std::printf("STOF-SKIP: %s\n", stof_why_.c_str()); \
            std::fflush(stdout);                               \
            return;                                            \
        }                                                      \
    } while (0)
