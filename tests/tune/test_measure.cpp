// The measuring worker from the outside: a worker that hangs or dies costs one
// candidate (an error, the worker restarted), never the compiler; outputs are
// checked against the reference. On a GPU: the real worker times a plan and keeps
// and checks its outputs.
#include "gpu_tuning.hpp"
#include "gpu_util.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "plan/plan_writer.hpp"
#include "test_util.hpp"
#include "tune/measure.hpp"
#include "tune/output_check.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>

using namespace stof;

namespace {

// The smallest valid plan: one input copied to one output.
plan::Plan copy_plan() {
    plan::Plan p;
    p.tensors = {{"x", DType::f32, {4}, plan::BufferKind::arena, 0, plan::TensorRole::input},
                 {"y", DType::f32, {4}, plan::BufferKind::arena, 256, plan::TensorRole::output}};
    p.arena_bytes = 512;
    p.inputs = {0};
    p.outputs = {1};
    plan::Step s;
    s.kind = plan::StepKind::copy;
    s.copy = {0, 1, 0, 0, 16};
    p.steps = {s};
    return p;
}

}  // namespace

TEST_CASE("measuring: a hanging worker is killed after the timeout, a dying one reported, both restarted", "[cpu][tune]") {
    {
        tune::MeasureOptions o;
        o.worker = {"/bin/sh", "-c", "sleep 60"};
        o.timeout_s = 0.5;
        tune::Measurer m(o);
        const auto t0 = std::chrono::steady_clock::now();
        const tune::Measurement r = m.measure(copy_plan(), 1);
        CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 5);
        CHECK_FALSE(r.ok);
        CHECK(r.error.find("no answer within") != std::string::npos);
        CHECK_FALSE(m.measure(copy_plan(), 1).ok);
        CHECK(m.restarts() == 1);
    }
    {
        tune::MeasureOptions o;
        o.worker = {"/bin/sh", "-c", "read line; kill -SEGV $$"};
        tune::Measurer m(o);
        const tune::Measurement r = m.measure(copy_plan(), 1);
        CHECK_FALSE(r.ok);
        CHECK(r.error.find("signal 11") != std::string::npos);
    }
    {
        tune::MeasureOptions o;
        o.worker = {"/bin/sh", "-c",
                    "while read line; do echo '{\"ok\":true,\"median_us\":5.5,\"spread_us\":0.5,\"reps\":7}'; done"};
        tune::Measurer m(o);
        for (int i = 0; i < 3; ++i) {
            const tune::Measurement r = m.measure(copy_plan(), 1);
            REQUIRE(r.ok);
            CHECK(r.median_us == 5.5);
            CHECK(r.reps == 7);
        }
        CHECK(m.restarts() == 0);
    }
    {
        tune::MeasureOptions o;
        o.worker = {"/nonexistent/stofc", "tune-worker"};
        tune::Measurer m(o);
        const tune::Measurement r = m.measure(copy_plan(), 1);
        CHECK_FALSE(r.ok);
        CHECK(r.error.find("/nonexistent/stofc") != std::string::npos);
        test::require_error([&] { m.device(); }, "tuning needs a GPU");
    }
}

TEST_CASE("measuring: outputs must match the reference within the tolerance of their type", "[cpu][tune]") {
    Tensor ref(DType::f32, {1000});
    for (int64_t i = 0; i < ref.numel(); ++i) ref.set_f64(i, std::sin(0.1 * static_cast<double>(i)));
    Tensor close = ref, far = ref, nan = ref;
    close.set_f64(3, ref.get_f64(3) + 1e-6);
    far.set_f64(3, ref.get_f64(3) + 0.5);
    nan.set_f64(7, std::nan(""));
    CHECK(tune::check_outputs({close}, {ref}).empty());
    CHECK(tune::check_outputs({far}, {ref}).find("relative error") != std::string::npos);
    CHECK(tune::check_outputs({nan}, {ref}).find("element 7") != std::string::npos);
    CHECK(tune::check_outputs({nan}, {nan}).empty());
    CHECK_FALSE(tune::check_outputs({ref, ref}, {ref}).empty());
    const Tensor half_ref = cast(ref, DType::f16), half_far = cast(far, DType::f16);
    Tensor half_close = cast(ref, DType::f16);
    half_close.set_f64(3, ref.get_f64(3) + 1e-3);
    CHECK(tune::check_outputs({half_close}, {half_ref}).empty());
    CHECK_FALSE(tune::check_outputs({half_far}, {half_ref}).empty());
    CHECK_FALSE(tune::check_outputs({cast(ref, DType::f16)}, {ref}).empty());  // dtype mismatch
    // Each type's elements read as that type: bf16, infinities at the same places, and an
    // f16 infinity against a finite value.
    Tensor bf_far = cast(far, DType::bf16), bf_inf = cast(ref, DType::bf16), half_inf = cast(ref, DType::f16);
    bf_inf.set_f64(5, INFINITY);
    half_inf.set_f64(9, -INFINITY);
    CHECK(tune::check_outputs({cast(close, DType::bf16)}, {cast(ref, DType::bf16)}).empty());
    CHECK(tune::check_outputs({bf_far}, {cast(ref, DType::bf16)}).find("relative error") != std::string::npos);
    CHECK(tune::check_outputs({bf_inf}, {bf_inf}).empty());
    CHECK(tune::check_outputs({half_inf}, {half_ref}).find("element 9 is -inf") != std::string::npos);
}

TEST_CASE("measuring: outputs compared piece by piece get the verdict of the whole", "[cpu][tune]") {
    std::mt19937_64 rng = test::make_rng();
    const int64_t n = 3 * tune::kCompareBlock + 123;
    for (DType t : {DType::f32, DType::f16, DType::bf16, DType::i32}) {
        INFO(dtype_name(t));
        const Tensor ref = test::random_tensor(t, {n}, rng);
        Tensor far = ref, bad = ref;
        for (int64_t i = 0; i < n; i += 7) far.set_f64(i, far.get_f64(i) + (t == DType::i32 ? 5 : 0.5));
        const bool floats = is_float(t);
        if (floats) bad.set_f64(2 * tune::kCompareBlock + 5, std::nan(""));
        for (const Tensor* cand : {&ref, static_cast<const Tensor*>(&far), static_cast<const Tensor*>(&bad)}) {
            const std::string whole = tune::check_outputs({*cand}, {ref});
            for (int64_t piece : {tune::kCompareBlock, 2 * tune::kCompareBlock}) {
                tune::OutputComparison c(ref);
                for (int64_t at = 0; at < n; at += piece)
                    c.add(cand->bytes.data() + at * static_cast<int64_t>(dtype_size(t)), std::min(piece, n - at));
                CHECK(c.verdict(0) == whole);
            }
        }
        CHECK(tune::check_outputs({ref}, {ref}).empty());
        CHECK_THAT(tune::check_outputs({far}, {ref}), Catch::Matchers::ContainsSubstring("relative error"));
        if (floats)
            CHECK_THAT(tune::check_outputs({bad}, {ref}),
                       Catch::Matchers::ContainsSubstring(fmt::format("element {} is nan", 2 * tune::kCompareBlock + 5)));
    }
    // Pieces that are not whole blocks, or elements past the end, are refused; a verdict
    // before every element has arrived too.
    const Tensor ref = test::random_tensor(DType::f32, {2 * tune::kCompareBlock}, rng);
    tune::OutputComparison c(ref);
    test::require_error([&] { c.add(ref.bytes.data(), 100); }, "multiples of 65536");
    c.add(ref.bytes.data(), tune::kCompareBlock);
    test::require_error([&] { (void)c.verdict(0); }, "65536 of 131072 elements arrived");
    test::require_error([&] { c.add(ref.bytes.data(), 2 * tune::kCompareBlock); }, "multiples of 65536");
    c.add(ref.bytes.data() + 4 * tune::kCompareBlock, tune::kCompareBlock);
    CHECK(c.verdict(0).empty());
    CHECK(tune::layout_mismatch(1, DType::f16, {2 * tune::kCompareBlock}, ref) == "output 1: f16[131072] against f32[131072]");
}

TEST_CASE("measuring on the GPU: the worker times plans, the evaluator checks and caches segments", "[gpu][tune]") {
    STOF_REQUIRE_GPU();
    {
        tune::Measurer m(test::worker_options());
        CHECK(m.device().sm_count > 0);
        const tune::Measurement r = m.measure(copy_plan(), 7, {tune::OutputUse::keep, "copy"});
        REQUIRE(r.ok);
        CHECK(r.median_us > 0);
        CHECK_FALSE(r.checked);
        // The same seed, the same inputs: the outputs match the kept ones.
        const tune::Measurement same = m.measure(copy_plan(), 7, {tune::OutputUse::check, "copy"});
        REQUIRE(same.ok);
        CHECK(same.checked);
        CHECK(same.mismatch.empty());
        const tune::Measurement other = m.measure(copy_plan(), 8, {tune::OutputUse::check, "copy"});
        REQUIRE(other.ok);
        CHECK(other.checked);
        CHECK_THAT(other.mismatch, Catch::Matchers::ContainsSubstring("relative error"));
        const tune::Measurement absent = m.measure(copy_plan(), 7, {tune::OutputUse::check, "absent"});
        REQUIRE(absent.ok);
        CHECK_FALSE(absent.checked);
    }
    // A small layer: x·W + r, LayerNorm, GELU; searched on the GPU at fp16.
    std::mt19937_64 rng = test::make_rng();
    test::OnnxBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {256, 256});
    b.input("r", onnx::TensorProto::FLOAT, {256, 256});
    b.initializer("w", test::random_tensor(DType::f32, {256, 256}, rng));
    b.initializer("scale", test::random_tensor(DType::f32, {256}, rng));
    b.node("MatMul", {"x", "w"}, {"h"});
    b.node("Add", {"h", "r"}, {"s"});
    b.node("LayerNormalization", {"s", "scale"}, {"n"});
    b.node("Tanh", {"n"}, {"y"});
    b.output("y");
    const test::ScratchDir cache("tune");
    ::setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
    std::vector<std::string> plans;
    for (int pass = 0; pass < 3; ++pass) {
        ir::Graph g = import_onnx_bytes(b.bytes(), "", "layer");
        test::GpuTuning tuning(cache.path());
        const plan::Plan p = tuning.compile(g);
        CHECK_FALSE(p.steps.empty());
        plans.push_back(plan::serialize_plan(p));
        tuning.evaluator.save_cache();
        const tune::EvaluatorStats& stats = tuning.evaluator.stats();
        INFO("pass " << pass);
        if (pass == 0) {
            CHECK(stats.measured > 0);
            CHECK(stats.rejected == 0);
            CHECK(stats.failed == 0);
        } else {
            CHECK(stats.measured == 0);  // everything from the tuning cache
            CHECK(stats.from_cache > 0);
        }
    }
    // With the same tuning cache, the same plan, byte for byte.
    CHECK(plans[1] == plans[2]);
    ::unsetenv("SOURCE_DATE_EPOCH");
}
