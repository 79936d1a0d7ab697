// Plans whose attention runs on a folded mask (stof/mask_fold.hpp) against the reference
// interpreter with the same mask (stofc eval's), outputs poisoned first.
#include "catch.hpp"
#include "compile.hpp"
#include "compile_options.hpp"
#include "gpu_util.hpp"
#include "interp/interpreter.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "pipeline.hpp"
#include "plan/plan_writer.hpp"
#include "stof/compare.hpp"
#include "stof/npy.hpp"
#include "stof/runtime.hpp"
#include "test_util.hpp"

#include <cuda_runtime.h>

#include <filesystem>
#include <limits>
#include <random>

using namespace stof;
namespace fs = std::filesystem;

TEST_CASE("plans with folded masks run like the reference interpreter", "[gpu][plan]") {
    STOF_REQUIRE_GPU();
    cudaDeviceProp prop{};
    CUDA_REQUIRE(cudaGetDeviceProperties(&prop, 0));
    const int64_t S = 512;
    test::OnnxBuilder b;
    for (const char* n : {"q", "k", "v"}) b.input(n, onnx::TensorProto::FLOAT, {2, 2, S, 64});
    test::add_attention(b, 0.125f);
    b.output("o");
    const fs::path dir = fs::path(test::binary_dir()) / "test_tmp" / "folded_plans";
    fs::create_directories(dir);
    std::mt19937_64 rng = test::make_rng();
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (const int p : {8, 16}) {
        INFO("period " << p);
        Tensor keep(DType::boolean, {S, S});
        for (int64_t i = 0; i < S; ++i)
            for (int64_t j = 0; j < S; ++j) keep.set_i64(i * S + j, (i - j) % p == 0 && (p == 8 || j <= i));
        const std::string mask = "file:" + (dir / ("strided" + std::to_string(p) + ".npy")).string();
        write_npy(mask.substr(5), keep);

        ir::Graph g = import_onnx_bytes(b.bytes(), "", "attention");
        CompileOptions opt = test::compile_options(Precision::fp16, "attention.onnx",
                                                   "sm_" + std::to_string(prop.major * 10 + prop.minor));
        opt.pipeline.pass.masks = {mask};
        const plan::Plan plan = compile_model(g, opt);
        int folded = 0;
        for (const plan::Step& s : plan.steps) folded += s.kind == plan::StepKind::attention && s.attention.fold == p;
        REQUIRE(folded == 1);
        const std::string path = (dir / ("strided" + std::to_string(p) + ".plan")).string();
        plan::write_plan(plan, path);

        TensorMap feeds;
        for (const char* n : {"q", "k", "v"}) {
            Tensor t(DType::f32, {2, 2, S, 64});
            for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
            feeds[n] = std::move(t);
        }
        ir::Graph ref = import_onnx_bytes(b.bytes(), "", "attention");
        PipelineOptions ropt;
        ropt.pass.masks = {mask};
        run_pipeline(ref, ropt);
        const Tensor want = interpret(ref, feeds).at("o");

        Runtime rt(path);
        for (const auto& [name, t] : feeds) rt.set_input(name, t);
        CUDA_REQUIRE(cudaMemset(rt.output_address(0), 0xff, want.bytes.size()));
        rt.run();
        const Tensor got = rt.output("o");
        const Comparison cmp = compare(got, want, 2e-2, 2e-2);
        INFO(describe(cmp, want, 2e-2, 2e-2));
        CHECK(cmp.ok);
    }
}
