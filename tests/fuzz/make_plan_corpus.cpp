// make_plan_corpus DIR: writes the seed corpus of fuzz_plan_reader into DIR
// (sample.plan, minimal.plan and ranged.plan from tests/runtime/sample_plan.hpp).
#include "plan/plan_writer.hpp"
#include "runtime/sample_plan.hpp"
#include "stof/error.hpp"

#include <cstdio>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_plan_corpus DIR\n");
        return 2;
    }
    try {
        const std::string dir = argv[1];
        std::filesystem::create_directories(dir);
        stof::plan::write_plan(stof::test::sample_plan(1), dir + "/sample.plan");
        stof::plan::write_plan(stof::test::minimal_plan(), dir + "/minimal.plan");
        stof::plan::write_plan(stof::test::ranged_plan(), dir + "/ranged.plan");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_plan_corpus: %s\n", e.what());
        return 1;
    }
    return 0;
}
