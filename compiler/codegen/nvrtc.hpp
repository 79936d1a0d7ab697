// NVRTC compilation of generated kernels, with an on-disk cache.
//
// Each kernel's source is written to <cache>/kernels/<key>-<hash>.cu (the
// exact text compiled; the templates it includes are written under
// <cache>/templates/), next to the cubin and PTX that NVRTC produced for it,
// so a re-compile of the same source for the same arch and NVRTC is a lookup.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stof::codegen {

struct CompiledKernel {
    std::vector<uint8_t> cubin;  // for `arch`
    std::string ptx;             // for compute_<arch>, loadable on newer GPUs
    bool cached = false;
};

std::string nvrtc_version();  // "13.0"

// 64-bit FNV-1a of s, continuing from h: cache keys and file checksums.
constexpr uint64_t kFnvBasis = 1469598103934665603ull;
uint64_t fnv1a(const std::string& s, uint64_t h = kFnvBasis);
// FNV-1a over every embedded template's name and source: their version.
uint64_t templates_hash();
// Checks that NVRTC can target `arch` ("sm_90"); a stof::Error lists the supported ones otherwise.
void check_arch(const std::string& arch);
// Default cache directory: $STOF_CACHE_DIR, else $XDG_CACHE_HOME/stofc, else ~/.cache/stofc.
std::string default_cache_dir();

// Compiles `source` (whose kernel is `entry`) for `arch`. On failure, a
// stof::Error carries the NVRTC log, the source path and a command that
// reproduces the failure with nvcc.
CompiledKernel compile_kernel(const std::string& key, const std::string& source, const std::string& arch,
                              const std::string& cache_dir);

}  // namespace stof::codegen
