// Timing plans with placeholder weights (plan::Plan::placeholders): large float
// constants keep their dtype and shape but no contents, through lowering, the plan
// file and back; every runtime but the tuning worker refuses them. On a GPU: the
// worker fills them, the same way for a candidate and its reference.
#include "compile.hpp"
#include "compile_options.hpp"
#include "gpu_tuning.hpp"
#include "gpu_util.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "plan/plan_reader.hpp"
#include "plan/plan_writer.hpp"
#include "stof/c_api.h"
#include "stof/plan_format.hpp"
#include "stof/runtime.hpp"
#include "test_util.hpp"
#include "tool_run.hpp"
#include "tune/measure.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

using namespace stof;

namespace {

// x [64, 1024] · W [1024, 512] + bias [512], then Tanh: W is 2 MiB at fp32, 1 MiB at fp16.
std::string large_weight_model(std::mt19937_64& rng) {
    test::OnnxBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {64, 1024});
    b.initializer("W", test::random_tensor(DType::f32, {1024, 512}, rng));
    b.initializer("bias", test::random_tensor(DType::f32, {512}, rng));
    b.node("MatMul", {"x", "W"}, {"h"});
    b.node("Add", {"h", "bias"}, {"hb"});
    b.node("Tanh", {"hb"}, {"y"});
    b.output("y");
    return b.bytes();
}

plan::Plan compiled(const std::string& model, bool placeholders) {
    ir::Graph g = import_onnx_bytes(model, "", "large");
    CompileOptions opt = test::compile_options(Precision::fp16);
    opt.lower.placeholder_weights = placeholders;
    return compile_model(g, opt);
}

const plan::TensorDesc* tensor_named(const plan::Plan& p, const std::string& name) {
    for (const plan::TensorDesc& t : p.tensors)
        if (t.name == name) return &t;
    return nullptr;
}

}  // namespace

TEST_CASE("placeholder weights: sizes and dtypes kept, contents absent, through the plan file", "[cpu][tune][plan]") {
    std::mt19937_64 rng = test::make_rng();
    const std::string model = large_weight_model(rng);
    const plan::Plan real = compiled(model, false);
    const plan::Plan timing = compiled(model, true);
    CHECK_FALSE(real.has_placeholders());

    // The 1 MiB weight is a placeholder, the 1 KiB bias keeps its contents.
    REQUIRE(timing.placeholders.size() == 1);
    const plan::TensorDesc& w = timing.tensors[static_cast<size_t>(timing.placeholders[0])];
    const plan::TensorDesc* w_real = tensor_named(real, w.name);
    REQUIRE(w_real);
    CHECK(w.dtype == DType::f16);
    CHECK(w.dtype == w_real->dtype);
    CHECK(w.shape == w_real->shape);
    CHECK(w.bytes() == (uint64_t{1} << 20));
    CHECK(real.weights.size() >= w.bytes());
    CHECK(timing.weights.size() < 4096);
    CHECK(w.offset >= timing.weights.size());
    CHECK(timing.weights_bytes() == timing.placeholder_end);
    CHECK(timing.placeholder_end >= w.offset + w.bytes());
    CHECK(timing.steps.size() == real.steps.size());
    CHECK(timing.tensors.size() == real.tensors.size());

    // The file holds the tensor's dtype and shape and the placeholder section, not the 1 MiB.
    const std::string bytes = plan::serialize_plan(timing);
    CHECK(bytes.size() < real.weights.size() / 4);
    CHECK(plan::serialize_plan(real).size() > real.weights.size());
    const plan::Plan back = plan::parse_plan(bytes, "timing.plan");
    CHECK(back.placeholders == timing.placeholders);
    CHECK(back.placeholder_end == timing.placeholder_end);
    CHECK(back.weights == timing.weights);
    const plan::TensorDesc& w_back = back.tensors[static_cast<size_t>(back.placeholders[0])];
    CHECK(w_back.name == w.name);
    CHECK(w_back.dtype == w.dtype);
    CHECK(w_back.shape == w.shape);
    CHECK(w_back.offset == w.offset);
    CHECK(plan::serialize_plan(back) == bytes);
    // A plan without placeholders has no placeholder section.
    CHECK(plan::serialize_plan(real).find(plan::kPlaceholdersSection) == std::string::npos);
}

TEST_CASE("placeholder weights: inconsistent placeholder lists fail validation", "[cpu][tune][plan]") {
    std::mt19937_64 rng = test::make_rng();
    const plan::Plan timing = compiled(large_weight_model(rng), true);
    REQUIRE(timing.placeholders.size() == 1);
    const int32_t w = timing.placeholders[0];
    int32_t bias = -1, input = timing.inputs[0];
    for (size_t i = 0; i < timing.tensors.size(); ++i)
        if (timing.tensors[i].role == plan::TensorRole::weight && static_cast<int32_t>(i) != w) bias = static_cast<int32_t>(i);
    REQUIRE(bias >= 0);
    struct Damage {
        const char* what;
        std::function<void(plan::Plan&)> edit;
        std::string message;
    };
    const std::vector<Damage> cases = {
        {"index", [](plan::Plan& p) { p.placeholders.push_back(99); }, "placeholders: tensor index 99 is out of range"},
        {"twice", [&](plan::Plan& p) { p.placeholders.push_back(w); }, "is listed twice"},
        {"not a weight", [&](plan::Plan& p) { p.placeholders.push_back(input); }, "is not a float weight past"},
        {"among the contents", [&](plan::Plan& p) { p.placeholders.push_back(bias); }, "is not a float weight past"},
        {"end before the tensor", [](plan::Plan& p) { p.placeholder_end -= 512; }, "lie outside the weights buffer"},
        {"end before the contents", [](plan::Plan& p) { p.placeholder_end = 0; }, "placeholder_end 0 is not between"},
        {"end without tensors", [](plan::Plan& p) { p.placeholders.clear(); }, "without placeholder tensors"},
    };
    for (const Damage& d : cases) {
        INFO(d.what);
        plan::Plan p = timing;
        d.edit(p);
        test::require_error([&] { plan::validate(p); }, d.message);
    }
}

TEST_CASE("placeholder weights: stof-run, the runtime and the C API refuse the plan", "[cpu][tune][plan]") {
    std::mt19937_64 rng = test::make_rng();
    const plan::Plan timing = compiled(large_weight_model(rng), true);
    const std::string dir = test::fresh_dir("placeholder_weights");
    const std::string path = dir + "/timing.plan";
    plan::write_plan(timing, path);
    // Refused before any device is touched: the same on a machine with or without a GPU.
    const test::ToolResult r = test::run_stof_run({path});
    CHECK(r.rc != 0);
    CHECK(r.rc < 124);
    CHECK(r.err.find(plan::kPlaceholderRefusal) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    test::require_error([&] { Runtime rt(path, {}); }, plan::kPlaceholderRefusal);
    stof_plan* handle = nullptr;
    CHECK(stof_plan_open(path.c_str(), 0, &handle) != STOF_OK);
    CHECK(handle == nullptr);
    CHECK(std::string(stof_last_error()).find(plan::kPlaceholderRefusal) != std::string::npos);
    // stofc inspect reads it (it is a valid plan file).
    CHECK(test::run_stofc({"inspect", path}).rc == 0);
}

TEST_CASE("placeholder weights on the GPU: the worker fills them, candidates match their references", "[gpu][tune]") {
    STOF_REQUIRE_GPU();
    std::mt19937_64 rng = test::make_rng();
    const std::string model = large_weight_model(rng);
    {
        const plan::Plan timing = compiled(model, true);
        REQUIRE(timing.has_placeholders());
        tune::Measurer m(test::worker_options());
        const tune::Measurement a = m.measure(timing, 3, {tune::OutputUse::keep, "a"});
        REQUIRE(a.ok);
        CHECK(a.median_us > 0);
        // The same seed, the same weights and inputs.
        const tune::Measurement same = m.measure(timing, 3, {tune::OutputUse::check, "a"});
        REQUIRE(same.ok);
        CHECK(same.checked);
        CHECK(same.mismatch.empty());
        // y = tanh(x·W + bias): other inputs give other outputs only when W is not zero; a
        // relative error (not a non-finite element) says every element is finite.
        const tune::Measurement other = m.measure(timing, 4, {tune::OutputUse::check, "a"});
        REQUIRE(other.ok);
        CHECK(other.checked);
        CHECK_THAT(other.mismatch, Catch::Matchers::ContainsSubstring("relative error"));
    }
    // The search: every candidate checked against its unfused reference, both with placeholders.
    const test::ScratchDir cache("placeholder");
    ir::Graph g = import_onnx_bytes(model, "", "large");
    test::GpuTuning tuning(cache.path());
    const plan::Plan p = tuning.compile(g);
    CHECK_FALSE(p.has_placeholders());  // the compiled plan carries the real weights
    CHECK(tuning.evaluator.stats().measured > 0);
    CHECK(tuning.evaluator.stats().rejected == 0);
    CHECK(tuning.evaluator.stats().failed == 0);
}
