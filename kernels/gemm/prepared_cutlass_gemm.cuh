// A CUTLASS GEMM (a cutlass::gemm::device::GemmUniversalAdapter) prepared once for fixed
// arguments, launched by run(): the FusedGemm behind gemm_gelu_sm90.cuh and gemm_swiglu_sm90.cuh.
#pragma once

#include "stof/kernels/fused_gemm.hpp"

#include "cutlass/cutlass.h"

#include <cuda_runtime.h>

#include <memory>
#include <string>

namespace stof::kernels::gemm {

template <class Device> class PreparedCutlassGemm final : public FusedGemm {
public:
    PreparedCutlassGemm() = default;
    PreparedCutlassGemm(const PreparedCutlassGemm&) = delete;
    PreparedCutlassGemm& operator=(const PreparedCutlassGemm&) = delete;
    ~PreparedCutlassGemm() override {
        if (workspace_) cudaFree(workspace_);
    }
    // Empty when prepared, else why not. The workspace CUTLASS asks for (its tile scheduler's
    // state) is this object's own, initialised on `stream`, synchronised before returning.
    std::string prepare(const typename Device::Arguments& args, cudaStream_t stream) {
        if (Device::can_implement(args) != cutlass::Status::kSuccess) return "CUTLASS cannot implement this GEMM";
        if (const size_t bytes = Device::get_workspace_size(args); bytes > 0)
            if (const cudaError_t e = cudaMalloc(&workspace_, bytes); e != cudaSuccess)
                return std::string("allocating the GEMM's workspace failed: ") + cudaGetErrorString(e);
        const cutlass::Status s = op_.initialize(args, workspace_, stream);
        if (s != cutlass::Status::kSuccess)
            return std::string("CUTLASS could not prepare the GEMM: ") + cutlassGetStatusString(s);
        if (const cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess)
            return std::string("preparing the GEMM's workspace failed: ") + cudaGetErrorString(e);
        return "";
    }
    cudaError_t run(cudaStream_t stream) const override {
        // GemmUniversalAdapter::run is not const; it only reads the prepared parameters.
        const cutlass::Status s = const_cast<Device&>(op_).run(stream);
        if (s == cutlass::Status::kSuccess) return cudaSuccess;
        const cudaError_t e = cudaGetLastError();
        return e != cudaSuccess ? e : cudaErrorLaunchFailure;
    }

private:
    Device op_;
    void* workspace_ = nullptr;
};

// The GEMM prepared for `args`; nullptr, with `why` set, where it cannot be.
template <class Device>
std::unique_ptr<FusedGemm> prepare_cutlass_gemm(const typename Device::Arguments& args, cudaStream_t stream, std::string& why) {
    auto p = std::make_unique<PreparedCutlassGemm<Device>>();
    why = p->prepare(args, stream);
    if (!why.empty()) return nullptr;
    return p;
}

}  // namespace stof::kernels::gemm
