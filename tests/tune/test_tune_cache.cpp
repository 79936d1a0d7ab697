// The tuning cache: round trip, a version change invalidates, a damaged or foreign
// file is ignored (and replaced), offline lookups by architecture; its times in the
// offline cost model.
#include "codegen/nvrtc.hpp"
#include "fusion/cost_model.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "pipeline.hpp"
#include "test_util.hpp"
#include "tune/tune_cache.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>

#include <unistd.h>

using namespace stof;
namespace fs = std::filesystem;

namespace {

tune::CacheIdentity h100() {
    return {
        "NVIDIA H100 80GB HBM3", 132, 9, 0, 13000, "13.0", 130100, "0.9.0", fmt::format("{:016x}", codegen::templates_hash()),
        "0123456789abcdef"};
}

fs::path fresh_dir(const std::string& name) {
    const fs::path d = fs::temp_directory_path() / ("stof-test-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace

TEST_CASE("tuning cache: records survive a round trip and only for the same identity", "[cpu][tune]") {
    const fs::path dir = fresh_dir("tune-cache");
    {
        tune::TuneCache c(dir.string(), h100());
        CHECK_FALSE(c.find("k1"));
        c.put("k1", {12.5, 0.25, 4096, "elementwise"});
        c.put("plan|x", {900, 3, 0, "plan"});
        c.save();
        CHECK(fs::exists(c.path()));
    }
    tune::TuneCache again(dir.string(), h100());
    REQUIRE(again.find("k1"));
    CHECK(again.find("k1")->us == 12.5);
    CHECK(again.find("k1")->spread == 0.25);
    CHECK(again.find("k1")->bytes == 4096);
    CHECK(again.find("plan|x")->kind == "plan");

    // Any version in the identity changes: a different file, nothing found.
    for (int field = 0; field < 5; ++field) {
        tune::CacheIdentity id = h100();
        if (field == 0) id.driver = 13010;
        if (field == 1) id.stofc = "0.9.1";
        if (field == 2) id.templates = "0000000000000000";
        if (field == 3) id.sm_count = 114;
        if (field == 4) id.kernels = "fedcba9876543210";
        CHECK_FALSE(tune::TuneCache(dir.string(), id).find("k1"));
    }
    // Offline: found by architecture when the software versions match.
    CHECK(tune::TuneCache::for_arch(dir.string(), h100(), "sm_90").find("k1"));
    CHECK_FALSE(tune::TuneCache::for_arch(dir.string(), h100(), "sm_80").find("k1"));
    tune::CacheIdentity newer = h100();
    newer.stofc = "1.0.0";
    CHECK_FALSE(tune::TuneCache::for_arch(dir.string(), newer, "sm_90").find("k1"));
    // Kernels built from other sources (this build's digest is 16 hex digits).
    CHECK(std::string(tune::kernels_digest()).find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(std::string(tune::kernels_digest()).size() == 16);
    tune::CacheIdentity rebuilt = h100();
    rebuilt.kernels = "fedcba9876543210";
    CHECK_FALSE(tune::TuneCache::for_arch(dir.string(), rebuilt, "sm_90").find("k1"));
    fs::remove_all(dir);
}

TEST_CASE("tuning cache: a damaged or foreign file is ignored and replaced on save", "[cpu][tune]") {
    const fs::path dir = fresh_dir("tune-cache-damaged");
    std::string path;
    {
        tune::TuneCache c(dir.string(), h100());
        c.put("k1", {12.5, 0.25, 4096, "elementwise"});
        c.save();
        path = c.path();
    }
    const std::string good = slurp(path);
    const std::vector<std::pair<std::string, std::string>> damages = {
        {"truncated", good.substr(0, good.size() / 2)},
        {"a changed time",
         [&] {
             std::string s = good;
             s.replace(s.find("12.5"), 4, "10.5");
             return s;
         }()},
        {"another GPU's identity",
         [&] {
             std::string s = good;
             s.replace(s.find("H100"), 4, "A100");
             return s;
         }()},
        {"a file written before the kernels' digest",
         [&] {
             std::string s = good;
             const std::string entry = "\"kernels\": \"0123456789abcdef\",";
             REQUIRE(s.find(entry) != std::string::npos);
             s.erase(s.find(entry), entry.size());
             return s;
         }()},
        {"not JSON", std::string("\x7f"
                                 "ELF\x02\x01",
                                 6)},
    };
    for (const auto& [what, bytes] : damages) {
        INFO(what);
        { std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes; }
        tune::TuneCache c(dir.string(), h100());
        CHECK_FALSE(c.find("k1"));
        c.put("k2", {3, 0.1, 64, "rownorm"});
        c.save();
        tune::TuneCache again(dir.string(), h100());
        CHECK(again.find("k2"));
        CHECK_FALSE(again.find("k1"));
    }
    fs::remove_all(dir);
}

TEST_CASE("offline cost model: a tuning cache's times win and its efficiencies are fitted to them", "[cpu][tune]") {
    std::mt19937_64 rng = test::make_rng();
    test::OnnxBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {4096, 1024});
    b.initializer("scale", test::random_tensor(DType::f32, {1024}, rng));
    b.node("Relu", {"x"}, {"r"});
    b.node("Mul", {"r", "scale"}, {"y"});
    b.node("LayerNormalization", {"y", "scale"}, {"z"});
    b.output("z");
    ir::Graph g = import_onnx_bytes(b.bytes(), "", "m");
    run_pipeline(g, {});
    const fusion::FusionPlan p = fusion::initial_scheme(g);
    const fusion::Segment* ew = nullptr;
    for (const fusion::Segment& s : p.segments)
        if (s.kind == fusion::SegmentKind::elementwise) ew = &s;
    REQUIRE(ew);
    fusion::CostModel model(Precision::fp16);
    const double estimate = model.segment(g, p, *ew).us;
    CHECK(model.source_of(g, *ew) == "model");
    const int64_t bytes = model.bytes(g, *ew);
    // A measured time for this segment: it wins.
    model.use_measurements({{fusion::segment_key(g, *ew, Precision::fp16), {estimate * 3, bytes, "elementwise"}}});
    CHECK(model.segment(g, p, *ew).us == estimate * 3);
    CHECK(model.source_of(g, *ew) == "cache");
    // Another segment measured at half the default efficiency: the model is fitted to it.
    fusion::CostModel fitted(Precision::fp16);
    const double e = fitted.device().vector_efficiency / 2;
    fitted.use_measurements(
        {{"fp16|another#default",
          {fitted.device().launch_us + 1e-3 * static_cast<double>(bytes) / (fitted.device().bandwidth_gbs * e), bytes,
           "elementwise"}}});
    CHECK(std::abs(fitted.device().vector_efficiency - e) < 1e-9);
    CHECK(fitted.segment(g, p, *ew).us > estimate);
    CHECK(fitted.source_of(g, *ew) == "model");
}
