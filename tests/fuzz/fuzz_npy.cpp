// libFuzzer target: parse_npy on arbitrary bytes, under a 256 MB memory limit.
// Contract: only stof::Error comes out (no allocation from a header's promise
// alone: the size is checked against the bytes first), and an accepted array
// writes back (serialize_npy) to bytes that read to the same array.
#include "stof/error.hpp"
#include "stof/memory_limit.hpp"
#include "stof/npy.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    stof::set_memory_limit(uint64_t{256} << 20);
    stof::Tensor t;
    try {
        t = stof::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    } catch (const stof::Error&) {
        return 0;
    }
    try {
        const stof::Tensor again = stof::parse_npy(stof::serialize_npy(t), "fuzz (written back)");
        if (again.dtype != t.dtype || again.shape != t.shape || again.bytes != t.bytes) {
            std::fprintf(stderr, "fuzz_npy: an accepted array does not write back to itself\n");
            std::abort();
        }
    } catch (const stof::Error& e) {
        std::fprintf(stderr, "fuzz_npy: an accepted array does not write back: %s\n", e.what());
        std::abort();
    }
    return 0;
}
