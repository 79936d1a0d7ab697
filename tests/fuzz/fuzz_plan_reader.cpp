// libFuzzer target: plan::parse_plan on arbitrary bytes, with checksums checked
// (the path every user file takes) and skipped (to reach every decoder behind
// them). Only stof::Error may come out.
#include "plan/plan_reader.hpp"
#include "stof/error.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    for (const bool checksums : {true, false}) {
        try {
            stof::plan::parse_plan(bytes, "fuzz", checksums);
        } catch (const stof::Error&) {
        }
    }
    return 0;
}
