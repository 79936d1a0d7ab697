// A graph output that only reshapes a row normalisation's output (GPT-2's last LayerNorm
// and its view to [B, S, hidden]): the normalisation writes the output's tensor, in the
// output's type, and the reshape is no step; read by anything else, the reshape stays a step.
#include "catch.hpp"
#include "compile.hpp"
#include "compile_options.hpp"
#include "gpu_util.hpp"
#include "interp/interpreter.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "pipeline.hpp"
#include "plan/plan_reader.hpp"
#include "plan/plan_writer.hpp"
#include "plan_check.hpp"
#include "test_util.hpp"

#include <cuda_runtime.h>

#include <filesystem>
#include <random>

using namespace stof;
namespace fs = std::filesystem;

namespace {

// x [2, 64, 96] -> LayerNorm(x + r) -> Reshape [2, 64, 2, 48] -> y; with `also_add`, the
// LayerNorm's output is also added to x into a second output z.
std::string norm_then_view(bool also_add) {
    std::mt19937_64 rng = test::make_rng();
    test::OnnxBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {2, 64, 96});
    b.input("r", onnx::TensorProto::FLOAT, {2, 64, 96});
    b.initializer("scale", test::random_tensor(DType::f32, {96}, rng));
    b.initializer("bias", test::random_tensor(DType::f32, {96}, rng));
    b.initializer("shape", test::ints({2, 64, 2, 48}));
    b.node("Add", {"x", "r"}, {"h"}, "residual");
    b.node("LayerNormalization", {"h", "scale", "bias"}, {"n"}, "ln");
    b.node("Reshape", {"n", "shape"}, {"y"}, "view");
    b.output("y");
    if (also_add) {
        b.node("Add", {"n", "x"}, {"z"}, "again");
        b.output("z");
    }
    return b.bytes();
}

plan::Plan compile(const std::string& bytes, Precision p, const std::string& arch = "sm_90") {
    ir::Graph g = import_onnx_bytes(bytes, "", "norm_view");
    return compile_model(g, test::compile_options(p, "norm_view.onnx", arch));
}

const plan::TensorDesc& tensor_named(const plan::Plan& p, const std::string& name) {
    for (const plan::TensorDesc& t : p.tensors)
        if (t.name == name) return t;
    FAIL("no tensor " << name);
    return p.tensors.front();
}

}  // namespace

TEST_CASE("a row normalisation reshaped into a graph output writes that output", "[cpu][plan]") {
    for (const Precision prec : {Precision::fp32, Precision::fp16, Precision::bf16}) {
        INFO(precision_name(prec));
        const plan::Plan p = compile(norm_then_view(false), prec);
        REQUIRE(p.steps.size() == 1);
        CHECK(plan::step_label(p.steps[0]) == "reduction");
        CHECK(plan::step_kernel_name(p, p.steps[0]).rfind("rownorm_f32_ln_add_", 0) == 0);
        const plan::TensorDesc &n = tensor_named(p, "n"), &y = p.tensors[static_cast<size_t>(p.outputs[0])];
        CHECK(y.name == "y");
        CHECK(y.dtype == DType::f32);
        CHECK(n.dtype == DType::f32);
        CHECK((n.buffer == y.buffer && n.offset == y.offset && n.bytes() == y.bytes()));
        CHECK(n.shape == Shape{2, 64, 96});
        CHECK(plan::parse_plan(plan::serialize_plan(p), "norm_view").steps.size() == 1);  // the reader's checks
    }
    // Read by an Add too, the LayerNorm's output is its own tensor and the reshape a step.
    const plan::Plan q = compile(norm_then_view(true), Precision::fp16);
    CHECK(q.steps.size() >= 2);
    const plan::TensorDesc &qn = tensor_named(q, "n"), &qy = tensor_named(q, "y");
    CHECK(qn.dtype == DType::f16);
    CHECK(qy.dtype == DType::f32);
    CHECK((qn.buffer != qy.buffer || qn.offset != qy.offset));
    int rownorms = 0;
    for (const plan::Step& s : q.steps) rownorms += plan::step_kernel_name(q, s).rfind("rownorm_f16_ln_add_", 0) == 0;
    CHECK(rownorms == 1);
}

TEST_CASE("a row normalisation reshaped into a graph output runs like the reference interpreter", "[gpu][plan]") {
    STOF_REQUIRE_GPU();
    cudaDeviceProp prop{};
    CUDA_REQUIRE(cudaGetDeviceProperties(&prop, 0));
    const std::string arch = "sm_" + std::to_string(prop.major * 10 + prop.minor);
    const fs::path dir = fs::path(test::binary_dir()) / "test_tmp" / "output_view";
    fs::create_directories(dir);
    std::mt19937_64 rng = test::make_rng();
    const std::string bytes = norm_then_view(false);
    TensorMap feeds;
    for (const char* n : {"x", "r"}) feeds[n] = test::random_tensor(DType::f32, {2, 64, 96}, rng);
    ir::Graph ref = import_onnx_bytes(bytes, "", "norm_view");
    run_pipeline(ref, {});
    const Tensor want = interpret(ref, feeds).at("y");
    for (const Precision prec : {Precision::fp32, Precision::fp16, Precision::bf16}) {
        INFO(precision_name(prec));
        const plan::Plan p = compile(bytes, prec, arch);
        REQUIRE(p.steps.size() == 1);
        test::check_plan_output(p, (dir / fmt::format("{}.plan", precision_name(prec))).string(), feeds, "y", want,
                                prec == Precision::fp32 ? 1e-4 : 2e-2);
    }
}
