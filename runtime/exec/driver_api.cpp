#include "exec/driver_api.hpp"

#include "stof/cuda_check.hpp"

#include <fmt/format.h>

namespace stof {

namespace {

// A driver symbol through the runtime, or nullptr.
void* lookup(const char* symbol) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &status) != cudaSuccess ||
        status != cudaDriverEntryPointSuccess)
        return nullptr;
    return fn;
}

}  // namespace

std::string driver_error_string(CUresult r) {
    static const auto name_fn = reinterpret_cast<PFN_cuGetErrorName_v6000>(lookup("cuGetErrorName"));
    static const auto string_fn = reinterpret_cast<PFN_cuGetErrorString_v6000>(lookup("cuGetErrorString"));
    const char* name = nullptr;
    const char* text = nullptr;
    if (name_fn) name_fn(r, &name);
    if (string_fn) string_fn(r, &text);
    if (name && text) return fmt::format("{} ({})", name, text);
    return fmt::format("CUresult {}", static_cast<int>(r));
}

namespace exec {

const DriverApi& driver() {
    static const DriverApi api = [] {
        DriverApi a;
        const auto get = [](auto& fn, const char* symbol) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(lookup(symbol));
            STOF_CHECK(fn != nullptr, "the CUDA driver does not provide {} (driver too old?)", symbol);
        };
        get(a.cuModuleLoadData, "cuModuleLoadData");
        get(a.cuModuleUnload, "cuModuleUnload");
        get(a.cuModuleGetFunction, "cuModuleGetFunction");
        get(a.cuFuncSetAttribute, "cuFuncSetAttribute");
        get(a.cuLaunchKernel, "cuLaunchKernel");
        return a;
    }();
    return api;
}

}  // namespace exec
}  // namespace stof
