// The codegen snapshot: every kernel that stofc generates for the op cases of
// make_op_cases.py --seed 1 (fp32, sm_90), keys and CUDA sources, against the
// golden file tests/codegen/kernels.snapshot. A codegen change shows here, on
// the CPU, as a diff; a commit that changes generated code updates the file and
// says why. STOF_UPDATE_SNAPSHOT=1 rewrites it instead of comparing.
#include "compile.hpp"
#include "onnx/import.hpp"
#include "stof/npy.hpp"
#include "test_util.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace stof;
namespace fs = std::filesystem;

namespace {

// The snapshot text: per case its kernel keys, then each distinct source once.
std::string snapshot(const fs::path& cases) {
    std::ifstream f(cases / "cases.json");
    REQUIRE(f.good());
    const nlohmann::json manifest = nlohmann::json::parse(f);
    std::string index, sources;
    std::map<std::string, size_t> seen;  // source -> its number
    for (const auto& c : manifest.at("cases")) {
        const std::string name = c.at("name");
        INFO("case " << name);
        const fs::path dir = cases / name;
        ir::Graph g = import_onnx_file((dir / "model.onnx").string());
        CompileOptions opt;
        for (const auto& e : fs::directory_iterator(dir / "inputs"))
            if (e.path().extension() == ".npy")
                opt.pipeline.pass.input_shapes[e.path().stem().string()] = read_npy(e.path().string()).shape;
        opt.lower.precision = Precision::fp32;
        opt.lower.arch = "sm_90";
        opt.lower.nvrtc = false;
        std::string keys;
        opt.lower.on_kernel_source = [&](const std::string& key, const std::string& source) {
            auto [it, fresh] = seen.try_emplace(source, seen.size() + 1);
            keys += fmt::format(" {}@s{}", key, it->second);
            if (fresh)
                sources += fmt::format("==== s{} {}\n{}{}", it->second, key, source,
                                       source.empty() || source.back() != '\n' ? "\n" : "");
        };
        compile_model(g, opt);
        index += name + ":" + keys + "\n";
    }
    return "# Generated kernels of the op cases (make_op_cases.py --seed 1; fp32, sm_90): tests/codegen/test_codegen_snapshot.cpp.\n"
           "# case: its kernels as key@sN, N numbering the distinct sources; then each source once, as '==== sN key'.\n" +
           index + sources;
}

}  // namespace

TEST_CASE("generated kernels of the op cases equal the snapshot", "[.][snapshot][cpu][codegen]") {
    const fs::path golden = fs::path(test::source_dir()) / "tests" / "codegen" / "kernels.snapshot";
    const std::string now = snapshot(fs::path(test::binary_dir()) / "op_cases_snapshot");
    const char* update = std::getenv("STOF_UPDATE_SNAPSHOT");
    if (update && std::string(update) == "1") {
        std::ofstream(golden, std::ios::binary) << now;
        WARN("rewrote " << golden.string());
        return;
    }
    std::ifstream in(golden, std::ios::binary);
    REQUIRE(in.good());
    std::stringstream want;
    want << in.rdbuf();
    if (want.str() == now) return;
    const fs::path got = fs::path(test::binary_dir()) / "test_tmp" / "kernels.snapshot";
    fs::create_directories(got.parent_path());
    std::ofstream(got, std::ios::binary) << now;
    const std::string diff = "diff -u " + golden.string() + " " + got.string() + " | head -n 400";
    std::fflush(stdout);
    CHECK(std::system(diff.c_str()) >= 0);
    FAIL("generated kernels differ from " << golden.string() << " (diff above; the new snapshot is " << got.string()
                                          << "; STOF_UPDATE_SNAPSHOT=1 build/bin/stof_tests \"[snapshot]\" accepts it)");
}
