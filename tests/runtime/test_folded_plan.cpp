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
#include "plan_check.hpp"
#include "stof/npy.hpp"
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
        test::check_plan_output(plan, (dir / ("strided" + std::to_string(p) + ".plan")).string(), feeds, "o",
                                interpret(ref, feeds).at("o"), 2e-2);
    }
}

// BERT: padding; T5: padding and its relative position bias, both then in their folded layouts.
TEST_CASE("plans with a folded mask, padding and a bias run like the reference interpreter", "[gpu][plan]") {
    STOF_REQUIRE_GPU();
    cudaDeviceProp prop{};
    CUDA_REQUIRE(cudaGetDeviceProperties(&prop, 0));
    const fs::path dir = fs::path(test::binary_dir()) / "test_tmp" / "folded_plans";
    fs::create_directories(dir);
    for (const char* name : {"bert-torchscript", "t5-torchscript"}) {
        INFO(name);
        const fs::path model = fs::path(test::source_dir()) / "models" / name;
        TensorMap feeds;
        for (const auto& f : fs::directory_iterator(model / "inputs"))
            feeds[f.path().stem().string()] = read_npy(f.path().string());
        Tensor& pad = feeds.at("attention_mask");
        const int64_t S = pad.shape[1];
        for (int64_t j = S - 9; j < S; ++j) pad.set_i64(j, 0);  // batch 0's last 9 keys are padding
        Tensor keep(DType::boolean, {S, S});
        for (int64_t i = 0; i < S; ++i)
            for (int64_t j = 0; j < S; ++j) keep.set_i64(i * S + j, (i - j) % 2 == 0);
        const std::string mask = "file:" + (dir / "strided2.npy").string();
        write_npy(mask.substr(5), keep);

        CompileOptions opt = test::compile_options(Precision::fp16, "model.onnx",
                                                   "sm_" + std::to_string(prop.major * 10 + prop.minor));
        PipelineOptions ropt;
        for (const auto& [input, t] : feeds) opt.pipeline.pass.input_shapes[input] = ropt.pass.input_shapes[input] = t.shape;
        opt.pipeline.pass.masks = ropt.pass.masks = {mask};
        ir::Graph g = import_onnx_file((model / "model.onnx").string());
        const plan::Plan plan = compile_model(g, opt);
        int folded = 0, biased = 0;
        for (const plan::Step& s : plan.steps) {
            folded += s.kind == plan::StepKind::key_valid && s.key_valid.fold == 2;
            biased += s.kind == plan::StepKind::attention && s.attention.fold == 2 && s.attention.bias >= 0;
        }
        REQUIRE(folded == 1);
        CHECK((biased > 0) == (std::string(name) == "t5-torchscript"));
        ir::Graph ref = import_onnx_file((model / "model.onnx").string());
        run_pipeline(ref, ropt);
        test::check_plan_output(plan, (dir / (std::string(name) + "_strided2.plan")).string(), feeds, "last_hidden_state",
                                interpret(ref, feeds).at("last_hidden_state"), 3e-2);
    }
}
