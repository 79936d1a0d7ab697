// libFuzzer target: the whole compiler on a fuzzed model: import, the passes, the
// fusion search, lowering and offline code generation (NVRTC through a kernel cache under
// $STOF_FUZZ_CACHE or /tmp, so a source is compiled once), every symbolic dimension bound
// to 2, under a 512 MB memory limit. Inputs of even size compile for sm_80 in fp32, odd ones
// for sm_90 in fp16 (the fused GEMMs' sites then exist). Contract: only stof::Error comes
// out, and a compiled plan writes (serialize_plan) to bytes the runtime's reader accepts.
#include "compile.hpp"
#include "onnx/import.hpp"
#include "plan/plan_reader.hpp"
#include "plan/plan_writer.hpp"
#include "stof/error.hpp"
#include "stof/memory_limit.hpp"

#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    spdlog::set_level(spdlog::level::off);
    stof::set_memory_limit(uint64_t{512} << 20);
    stof::plan::Plan plan;
    try {
        stof::ir::Graph g = stof::import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size), "", "fuzz");
        stof::CompileOptions opt;
        for (stof::ir::ValueId id : g.inputs)
            for (const std::string& d : g.value(id).dim_names)
                if (!d.empty()) opt.pipeline.pass.input_shapes[d] = {2};
        opt.lower.arch = size % 2 ? "sm_90" : "sm_80";
        opt.lower.precision = size % 2 ? stof::Precision::fp16 : stof::Precision::fp32;
        const char* cache = std::getenv("STOF_FUZZ_CACHE");
        opt.lower.cache_dir = cache && *cache ? cache : "/tmp/stof-fuzz-compile-cache";
        opt.lower.jobs = 1;
        opt.lower.model = "fuzz.onnx";
        plan = stof::compile_model(g, opt);
    } catch (const stof::Error&) {
        return 0;
    }
    try {
        (void)stof::plan::parse_plan(stof::plan::serialize_plan(plan), "fuzz plan");
    } catch (const stof::Error& e) {
        std::fprintf(stderr, "fuzz_compile: a compiled plan is not accepted by the reader: %s\n", e.what());
        std::abort();
    }
    return 0;
}
