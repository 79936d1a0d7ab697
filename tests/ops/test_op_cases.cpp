// Every op case written by tests/ops/make_op_cases.py (fresh random data each
// run, onnxruntime outputs) evaluated by the importer, pipeline and interpreter.
#include "interp/interpreter.hpp"
#include "onnx/import.hpp"
#include "pipeline.hpp"
#include "stof/compare.hpp"
#include "stof/npy.hpp"
#include "test_util.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace stof;
namespace fs = std::filesystem;

namespace {

TensorMap read_dir(const fs::path& dir) {
    TensorMap out;
    if (!fs::exists(dir)) return out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".npy") out[e.path().stem().string()] = read_npy(e.path().string());
    return out;
}

}  // namespace

TEST_CASE("every op case matches onnxruntime", "[cpu][ops]") {
    const fs::path root = fs::path(test::binary_dir()) / "op_cases";
    std::ifstream f(root / "cases.json");
    REQUIRE(f.good());
    const nlohmann::json manifest = nlohmann::json::parse(f);
    UNSCOPED_INFO("op cases seed " << manifest.at("seed") << " (replay: make_op_cases.py --seed)");
    size_t checked = 0;
    for (const auto& c : manifest.at("cases")) {
        const std::string name = c.at("name");
        const double rtol = c.at("rtol"), atol = c.at("atol");
        INFO("case " << name);
        const fs::path dir = root / name;
        try {
            ir::Graph g = import_onnx_file((dir / "model.onnx").string());
            const TensorMap feeds = read_dir(dir / "inputs");
            PipelineOptions opt;
            for (const auto& [input, t] : feeds) opt.pass.input_shapes[input] = t.shape;
            opt.after_pass = [](const PassInfo&, const ir::Graph& cur) { cur.verify(); };
            run_pipeline(g, opt);
            const TensorMap got = interpret(g, feeds);
            const TensorMap expected = read_dir(dir / "expected");
            REQUIRE(!expected.empty());
            for (const auto& [out, want] : expected) {
                INFO("output " << out);
                REQUIRE(got.count(out));
                const Comparison cmp = compare(got.at(out), want, rtol, atol);
                INFO(describe(cmp, want, rtol, atol));
                CHECK(got.at(out).dtype == want.dtype);
                CHECK(cmp.ok);
            }
        } catch (const stof::Error& e) {
            FAIL_CHECK("stof::Error: " << e.what());
        }
        ++checked;
    }
    CHECK(checked == manifest.at("cases").size());
    CHECK(checked > 200);
}

TEST_CASE("every op of the op table has an op case", "[cpu][ops]") {
    // An op that the importer maps is seen in an imported case; an op that only a
    // pass creates (RMSNorm, SparseAttention) after the pipeline of a Chain_ case.
    const fs::path root = fs::path(test::binary_dir()) / "op_cases";
    std::ifstream f(root / "cases.json");
    REQUIRE(f.good());
    const nlohmann::json manifest = nlohmann::json::parse(f);
    std::vector<char> seen(ir::kOpCount, 0);
    auto note = [&](const ir::Graph& g) {
        for (const ir::Node& n : g.nodes) seen[static_cast<size_t>(n.op)] = 1;
    };
    for (const auto& c : manifest.at("cases")) {
        const fs::path dir = root / std::string(c.at("name"));
        ir::Graph g = import_onnx_file((dir / "model.onnx").string());
        note(g);
        PipelineOptions opt;
        for (const auto& [input, t] : read_dir(dir / "inputs")) opt.pass.input_shapes[input] = t.shape;
        opt.after_pass = [&](const PassInfo&, const ir::Graph& cur) { note(cur); };
        run_pipeline(g, opt);
    }
    std::string missing;
    for (size_t op = 0; op < ir::kOpCount; ++op)
        if (!seen[op]) missing += fmt::format(" {}", ir::op_name(static_cast<ir::Op>(op)));
    INFO("ops without a case in tests/ops/make_op_cases.py:" << missing);
    CHECK(missing.empty());
}
