// libFuzzer target: plan::parse_plan on arbitrary bytes, with checksums checked
// (the path every user file takes) and skipped (to reach every decoder behind
// them). Contract: only stof::Error comes out, and a plan the reader accepts
// writes back (serialize_plan) to bytes it reads again to the same plan.
#include "plan/plan_reader.hpp"
#include "plan/plan_writer.hpp"
#include "stof/error.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void fail(const char* what, const char* detail) {
    std::fprintf(stderr, "fuzz_plan_reader: %s%s%s\n", what, detail[0] ? ": " : "", detail);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    for (const bool checksums : {true, false}) {
        stof::plan::Plan p;
        try {
            p = stof::plan::parse_plan(bytes, "fuzz", checksums);
        } catch (const stof::Error&) {
            continue;
        }
        const std::string written = stof::plan::serialize_plan(p);
        try {
            if (stof::plan::serialize_plan(stof::plan::parse_plan(written, "rewritten")) != written)
                fail("an accepted plan reads back differently after serialize_plan", "");
        } catch (const stof::Error& e) {
            fail("serialize_plan of an accepted plan is rejected", e.what());
        }
    }
    return 0;
}
