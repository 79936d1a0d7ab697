// The tuning cache: measured segment times on disk, so a later compile of the same
// segments on the same GPU and software measures nothing.
//
// One file per identity, <dir>/tune/<identity hash>.json:
//   {"format": 1, "identity": {...}, "records": {KEY: {"us", "spread", "bytes", "kind"}}, "checksum": FNV-1a of records}
// KEY is what was timed: a segment's signature (its ops, attributes, dtypes and shapes)
// and config, or a whole plan's. The identity is everything else a time depends on: the
// GPU (name, SM count, compute capability), the driver, NVRTC and cuBLASLt versions,
// stofc's version, the templates' hash and the prebuilt kernels' digest. A damaged file, or
// one whose identity is not the one asked for, is reported in one line and ignored (and
// replaced on save).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace stof::tune {

struct CacheIdentity {
    std::string gpu;  // "NVIDIA H100 80GB HBM3"
    int sm_count = 0, cc_major = 0, cc_minor = 0;
    int driver = 0;
    std::string nvrtc;
    size_t cublaslt = 0;
    std::string stofc;         // stofc's version
    std::string templates;     // codegen::templates_hash(), 16 hex digits
    std::string kernels;       // kernels_digest(): the fused GEMM's times depend on it
    std::string arch() const;  // "sm_90"
    bool operator==(const CacheIdentity& o) const;
};

// The prebuilt kernels' sources and the CUTLASS they are built with, hashed at build time
// (cmake/kernels_digest.cmake): 16 hex digits.
const char* kernels_digest();

struct CacheRecord {
    double us = 0, spread = 0;
    int64_t bytes = 0;  // what the segment moves (the cost model's fit)
    std::string kind;   // its segment kind ("elementwise", ...; "plan" for a whole plan)
};

class TuneCache {
public:
    // Loads <dir>/tune/<hash of id>.json if present (dir empty: no cache at all).
    TuneCache(std::string dir, CacheIdentity id);
    // Offline: every record of the cache files for `arch` whose software versions match
    // id's (the GPU fields of id are ignored); read only.
    static TuneCache for_arch(const std::string& dir, const CacheIdentity& id, const std::string& arch);

    std::optional<CacheRecord> find(const std::string& key) const;
    void put(const std::string& key, const CacheRecord& r);
    const std::map<std::string, CacheRecord>& records() const { return records_; }
    // Writes the file (atomically) when records were added.
    void save();
    std::string path() const { return path_; }

private:
    TuneCache() = default;
    bool load(const std::string& path, const CacheIdentity* want);  // false: absent or ignored
    std::string path_;
    CacheIdentity id_;
    std::map<std::string, CacheRecord> records_;
    bool dirty_ = false;
};

// The identity's hash, 16 hex digits.
std::string identity_hash(const CacheIdentity& id);

}  // namespace stof::tune
