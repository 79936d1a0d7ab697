// The CUDA driver entry points the executor uses, resolved through the CUDA
// runtime (cudaGetDriverEntryPointByVersion) instead of linking libcuda: a
// binary built with the runtime starts on a machine without a driver and
// reports "no CUDA device: ..." instead of failing in the dynamic loader.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

namespace stof::exec {

struct DriverApi {
    PFN_cuModuleLoadData_v2000 cuModuleLoadData = nullptr;
    PFN_cuModuleUnload_v2000 cuModuleUnload = nullptr;
    PFN_cuModuleGetFunction_v2000 cuModuleGetFunction = nullptr;
    PFN_cuFuncSetAttribute_v9000 cuFuncSetAttribute = nullptr;
    PFN_cuLaunchKernel_v4000 cuLaunchKernel = nullptr;
};

// Resolved on first use; the CUDA runtime must be initialised on a device
// (cudaSetDevice + cudaFree(0)). Throws stof::Error naming a missing symbol.
const DriverApi& driver();

}  // namespace stof::exec
