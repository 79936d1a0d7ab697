// libFuzzer target: import_onnx_bytes on arbitrary bytes (a model read from
// memory: external data is rejected, never read). Contract: only stof::Error
// comes out, and an accepted model is a graph that passes verify() and prints.
#include "ir/graph.hpp"
#include "onnx/import.hpp"
#include "stof/error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    stof::ir::Graph g;
    try {
        g = stof::import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size), "", "fuzz");
    } catch (const stof::Error&) {
        return 0;
    }
    try {
        g.verify();
    } catch (const stof::Error& e) {
        std::fprintf(stderr, "fuzz_onnx_import: an accepted model fails verify(): %s\n", e.what());
        std::abort();
    }
    (void)stof::ir::to_text(g);
    return 0;
}
