// The fused GEMM + bias + exact GELU (kernels/gemm) in the fusion search: where its seize site
// exists (target, shapes, the chain), how a taken move lowers (plan::Epilogue::bias_gelu_erf,
// its tile configurations as stage 2's space), and that the offline cost model never picks it
// without a measurement.
#include "compile.hpp"
#include "compile_options.hpp"
#include "fusion/cost_model.hpp"
#include "gpu_util.hpp"
#include "interp/interpreter.hpp"
#include "fusion/search.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "oracle.hpp"
#include "pipeline.hpp"
#include "plan/plan_reader.hpp"
#include "plan/plan_writer.hpp"
#include "plan_check.hpp"
#include "test_util.hpp"

#include <cuda_runtime.h>

#include <cmath>
#include <filesystem>
#include <functional>

using namespace stof;
using fusion::Segment;
using fusion::SegmentKind;
using test::cheap_fused;
using test::Oracle;

namespace {

struct Ffn {
    int64_t k = 64, n = 256;
    bool bias = true;
    std::string approximate = "none";
    int64_t seq = 16;
};

// x [2, seq, K] · W [K, N] (+ b [N]) → Gelu → · W2 [N, 64]: a BERT feed-forward block.
std::string ffn(std::mt19937_64& rng, const Ffn& f) {
    test::OnnxBuilder b(20);
    b.input("x", onnx::TensorProto::FLOAT, {2, f.seq, f.k});
    b.initializer("w", test::random_weights({f.k, f.n}, f.k, rng));
    b.initializer("b", test::random_tensor(DType::f32, {f.n}, rng));
    b.initializer("w2", test::random_weights({f.n, 64}, f.n, rng));
    b.node("MatMul", {"x", "w"}, {"h"}, "up");
    std::string act_in = "h";
    if (f.bias) {
        b.node("Add", {"h", "b"}, {"hb"}, "up_bias");
        act_in = "hb";
    }
    test::set_attr(b.node("Gelu", {act_in}, {"a"}, "gelu"), "approximate", f.approximate);
    b.node("MatMul", {"a", "w2"}, {"y"}, "down");
    b.output("y");
    return b.bytes();
}

ir::Graph pipelined(const std::string& bytes) {
    ir::Graph g = import_onnx_bytes(bytes, "", "ffn");
    run_pipeline(g, {});
    return g;
}

int gelu_sites(const ir::Graph& g, bool target) {
    int n = 0;
    for (const fusion::Site& s : fusion::find_sites(g, {target})) n += s.field == fusion::Site::gelu_in_gemm;
    return n;
}

}  // namespace

TEST_CASE("fused GEMM: the exact Gelu after a bias is a seize site on targets that run the kernel", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    const ir::Graph g = pipelined(ffn(rng, {}));
    CHECK(gelu_sites(g, true) == 1);
    CHECK(gelu_sites(g, false) == 0);
    // Not: the tanh form (cuBLASLt's own epilogue), no bias, K or N not multiples of 8.
    CHECK(gelu_sites(pipelined(ffn(rng, {64, 256, true, "tanh"})), true) == 0);
    CHECK(gelu_sites(pipelined(ffn(rng, {64, 256, false})), true) == 0);
    CHECK(gelu_sites(pipelined(ffn(rng, {60, 256})), true) == 0);
    CHECK(gelu_sites(pipelined(ffn(rng, {64, 252})), true) == 0);
    // The targets: sm_90 at 16-bit precisions.
    CHECK(fusion::fused_gemm_target("sm_90", Precision::fp16));
    CHECK(fusion::fused_gemm_target("sm_90", Precision::bf16));
    CHECK_FALSE(fusion::fused_gemm_target("sm_90", Precision::fp32));
    CHECK_FALSE(fusion::fused_gemm_target("sm_80", Precision::fp16));
}

TEST_CASE("fused GEMM: a GEMM whose bias feeds two readers folds neither", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    test::OnnxBuilder b(20);
    b.input("x", onnx::TensorProto::FLOAT, {32, 64});
    b.initializer("w", test::random_tensor(DType::f32, {64, 128}, rng));
    b.initializer("b", test::random_tensor(DType::f32, {128}, rng));
    b.node("MatMul", {"x", "w"}, {"h"});
    b.node("Add", {"h", "b"}, {"hb"});
    b.node("Gelu", {"hb"}, {"a"});
    b.node("Add", {"a", "hb"}, {"y"});  // the pre-activation value read again
    b.output("y");
    CHECK(gelu_sites(pipelined(b.bytes()), true) == 0);
}

TEST_CASE("fused GEMM: the search takes it when it measures faster and tunes its configs", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    test::check_fused_gemm_search(pipelined(ffn(rng, {})), plan::Epilogue::bias_gelu_erf);
}

TEST_CASE("fused GEMM: the offline cost model never picks it unmeasured, a measured time it uses", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    const ir::Graph g = pipelined(ffn(rng, {}));
    fusion::SearchOptions opt;
    opt.sites.fused_gemm = true;
    fusion::CostModel model(Precision::fp16);
    fusion::SearchResult r = fusion::search(g, model, opt);
    for (const Segment& s : r.plan.segments) CHECK_FALSE(fusion::fused_gelu_gemm(g, s));
    // With the fused segment's measured time (a tuning cache record), the model takes it.
    fusion::Choices c;
    for (const fusion::Site& s : fusion::find_sites(g, opt.sites))
        if (s.field == fusion::Site::gelu_in_gemm) c = fusion::with(c, {&s});
    const fusion::FusionPlan fp = fusion::build_scheme(g, c);
    std::map<std::string, fusion::MeasuredTime> measured;
    for (const Segment& s : fp.segments)
        if (fusion::fused_gelu_gemm(g, s)) measured[fusion::segment_key(g, s, Precision::fp16)] = {0.5, 0, "gemm"};
    REQUIRE(measured.size() == 1);
    CHECK(!std::isfinite(model.segment(g, fp, fp.segments.front()).us));
    model.use_measurements(measured);
    r = fusion::search(g, model, opt);
    int fused = 0;
    for (const Segment& s : r.plan.segments) fused += fusion::fused_gelu_gemm(g, s);
    CHECK(fused == 1);
}

TEST_CASE("fused GEMM: a taken move lowers to one bias_gelu_erf step that survives the plan file", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    for (const Precision p : {Precision::fp16, Precision::bf16, Precision::fp32}) {
        INFO(precision_name(p));
        ir::Graph g = import_onnx_bytes(ffn(rng, {}), "", "ffn");
        CompileOptions opt = test::compile_options(p, "ffn.onnx");
        Oracle fast(cheap_fused);
        opt.evaluator = &fast;
        const plan::Plan plan = compile_model(g, opt);
        int fused = 0, gelu_kernels = 0;
        for (const plan::Step& s : plan.steps) {
            if (s.kind == plan::StepKind::gemm && s.gemm.epilogue == plan::Epilogue::bias_gelu_erf) {
                ++fused;
                CHECK(s.gemm.bias >= 0);
                CHECK(s.gemm.algo < plan::kGemmGeluConfigs);
                CHECK(s.gemm.m == 32);
                CHECK(s.gemm.k == 64);
                CHECK(s.gemm.n == 256);
            }
            gelu_kernels += s.kind == plan::StepKind::launch && s.nodes.find("gelu") != std::string::npos;
        }
        // fp32 plans keep the exact GELU in a kernel of its own: the fused kernel is 16-bit.
        CHECK(fused == (p == Precision::fp32 ? 0 : 1));
        CHECK(gelu_kernels == (p == Precision::fp32 ? 1 : 0));
        const plan::Plan back = plan::parse_plan(plan::serialize_plan(plan), "ffn.plan");
        REQUIRE(back.steps.size() == plan.steps.size());
        for (size_t i = 0; i < plan.steps.size(); ++i)
            if (plan.steps[i].kind == plan::StepKind::gemm) CHECK(back.steps[i].gemm.epilogue == plan.steps[i].gemm.epilogue);
    }
}

TEST_CASE("fused GEMM: a plan with the exact GELU in the GEMM runs like the reference interpreter", "[gpu][plan]") {
    STOF_REQUIRE_GPU();
    cudaDeviceProp prop{};
    CUDA_REQUIRE(cudaGetDeviceProperties(&prop, 0));
    std::mt19937_64 rng = test::make_rng();
    // BERT-base's feed-forward widths over 2 x 200 tokens (m = 400: no multiple of a tile).
    const std::string model = ffn(rng, {768, 3072, true, "none", 200});
    const std::filesystem::path dir = std::filesystem::path(test::binary_dir()) / "test_tmp" / "gemm_gelu";
    std::filesystem::create_directories(dir);
    for (const Precision p : {Precision::fp16, Precision::bf16}) {
        INFO(precision_name(p));
        ir::Graph g = import_onnx_bytes(model, "", "ffn");
        CompileOptions opt = test::compile_options(p, "ffn.onnx", "sm_" + std::to_string(prop.major * 10 + prop.minor));
        Oracle fast(cheap_fused);
        opt.evaluator = &fast;
        const plan::Plan plan = compile_model(g, opt);
        int fused = 0;
        for (const plan::Step& s : plan.steps) fused += s.kind == plan::StepKind::gemm && plan::fused_epilogue(s.gemm.epilogue);
        // Elsewhere than sm_90 the site does not exist; the plan then runs cuBLASLt and a GELU kernel.
        CHECK(fused == (prop.major == 9 && prop.minor == 0 ? 1 : 0));
        const std::string path = (dir / (std::string(precision_name(p)) + ".plan")).string();

        TensorMap feeds;
        Tensor x(DType::f32, {2, 200, 768});
        std::uniform_real_distribution<float> u(-1.f, 1.f);
        for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
        feeds["x"] = x;
        ir::Graph ref = import_onnx_bytes(model, "", "ffn");
        run_pipeline(ref, {});
        const Tensor want = interpret(ref, feeds).at("y");
        test::check_plan_output(plan, path, feeds, "y", want, p == Precision::bf16 ? 5e-2 : 2e-2);
    }
}
