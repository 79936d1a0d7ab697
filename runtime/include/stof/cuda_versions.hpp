// The CUDA runtime and driver versions in use, for `--version` (header-only: needs cudart).
#pragma once

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <string>

namespace stof {

// "CUDA runtime 13.0, driver 13.0" ("driver none" when no driver is installed).
inline std::string cuda_runtime_versions() {
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    const bool has_driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0;
    cudaGetLastError();
    return fmt::format("CUDA runtime {}.{}, driver {}", runtime / 1000, runtime % 1000 / 10,
                       has_driver ? fmt::format("{}.{}", driver / 1000, driver % 1000 / 10) : std::string("none"));
}

}  // namespace stof
