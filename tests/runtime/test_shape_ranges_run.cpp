// Plans for shape ranges on the GPU: a range plan run at shapes inside its range
// against the reference interpreter at exactly those shapes (stofc eval's), and
// against a plan compiled for exactly that shape; outputs poisoned before each run.
#include "catch.hpp"
#include "compile.hpp"
#include "compile_options.hpp"
#include "gpu_util.hpp"
#include "onnx/import.hpp"
#include "pipeline.hpp"
#include "plan/plan_writer.hpp"
#include "shape_ranges.hpp"
#include "stof/c_api.h"
#include "stof/compare.hpp"
#include "stof/npy.hpp"
#include "stof/runtime.hpp"
#include "stof/shape_ranges.hpp"
#include "test_util.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

using namespace stof;

namespace {

const std::string kModel = "bert-dynamo";
const std::string kMask = "sliding:24";

std::string device_arch() {
    cudaDeviceProp prop{};
    CUDA_REQUIRE(cudaGetDeviceProperties(&prop, 0));
    return "sm_" + std::to_string(prop.major * 10 + prop.minor);
}

CompileOptions gpu_options() {
    CompileOptions opt = test::compile_options(Precision::fp16, "model.onnx", device_arch());
    opt.pipeline.pass.masks = {kMask};
    return opt;
}

std::string write(const plan::Plan& p, const std::string& name) {
    std::filesystem::create_directories(test::binary_dir() + "/test_tmp");
    const std::string path = test::binary_dir() + "/test_tmp/" + name;
    plan::write_plan(p, path);
    return path;
}

// The zoo's inputs cut to [batch, seq]; batch 1's last 7 keys are padding.
TensorMap inputs_at(const ir::Graph& g, int64_t batch, int64_t seq) {
    const std::string dir = test::source_dir() + "/models/" + kModel + "/inputs/";
    TensorMap feeds;
    for (ir::ValueId id : g.inputs) {
        const std::string& name = g.value(id).name;
        Tensor t = cut_tensor(read_npy(dir + name + ".npy"), {batch, seq});
        if (name == "attention_mask") {
            for (int64_t i = 0; i < t.numel(); ++i) t.set_i64(i, 1);
            if (batch > 1)
                for (int64_t s = seq - 7; s < seq; ++s) t.set_i64(seq + s, 0);
        }
        feeds[name] = std::move(t);
    }
    return feeds;
}

// stofc eval: the model with the same mask on the reference interpreter at exactly this shape.
Tensor reference(const ir::Graph& model, const TensorMap& feeds) {
    ir::Graph g = model;
    PipelineOptions opt;
    for (const auto& [name, t] : feeds) opt.pass.input_shapes[name] = t.shape;
    opt.pass.masks = {kMask};
    run_pipeline(g, opt);
    return interpret(g, feeds).at("last_hidden_state");
}

// Runs rt on feeds with its output buffers poisoned (NaN) first; returns the output.
Tensor run_poisoned(Runtime& rt, const TensorMap& feeds) {
    for (const auto& [name, t] : feeds) rt.set_input(name, t);
    const TensorInfo& out = rt.outputs()[0];
    const plan::TensorDesc& inner = rt.plan().tensors[static_cast<size_t>(out.tensor)];
    Tensor nan(inner.dtype, inner.shape);
    for (int64_t i = 0; i < nan.numel(); ++i) nan.set_f64(i, std::numeric_limits<double>::quiet_NaN());
    rt.write_tensor(out.tensor, nan);
    CUDA_REQUIRE(cudaMemset(rt.output_address(0), 0xff, static_cast<size_t>(numel(out.shape)) * dtype_size(out.dtype)));
    rt.run();
    return rt.output(out.name);
}

}  // namespace

TEST_CASE("a range plan runs shapes inside its range like the reference interpreter", "[gpu][shapes]") {
    STOF_REQUIRE_GPU();
    const ir::Graph model = import_onnx_file(test::source_dir() + "/models/" + kModel + "/model.onnx");
    const plan::Plan p = compile_ranged(model, parse_shape_args({"batch=1..2", "seq=16..128"}), gpu_options());
    REQUIRE(p.buckets.size() == 8);
    Runtime rt(write(p, "shape_ranges_bert.plan"));
    REQUIRE(rt.ranges() != nullptr);
    CHECK(rt.inputs()[0].shape == Shape{1, 16});  // every range's minimum until set

    struct Case {
        int64_t batch, seq;
        std::vector<int64_t> bucket;
    };
    for (const Case& c : {Case{1, 20, {1, 32}}, Case{2, 77, {2, 128}}, Case{2, 128, {2, 128}}, Case{1, 64, {1, 64}}}) {
        INFO("batch " << c.batch << " seq " << c.seq);
        const TensorMap feeds = inputs_at(model, c.batch, c.seq);
        const Tensor got = run_poisoned(rt, feeds);
        CHECK(rt.ranges()->bucket_values[rt.bucket()] == c.bucket);
        REQUIRE(got.shape == Shape{c.batch, c.seq, 128});
        const Tensor want = reference(model, feeds);
        const Comparison cmp = compare(got, want, 3e-2, 3e-2);
        INFO(describe(cmp, want, 3e-2, 3e-2));
        CHECK(cmp.ok);

        // The same run as a CUDA graph of padding, steps and cutting (captured for this shape).
        CUDA_REQUIRE(cudaMemset(rt.output_address(0), 0xff, got.bytes.size()));
        rt.run(true);
        CHECK(rt.output("last_hidden_state").bytes == got.bytes);

        // The same run enqueued on device buffers of the actual shape, on a stream of the caller's.
        std::vector<std::unique_ptr<test::DeviceBuffer>> in;
        std::vector<const void*> in_ptrs;
        for (const TensorInfo& i : rt.inputs()) {
            const Tensor& t = feeds.at(i.name);
            in.push_back(std::make_unique<test::DeviceBuffer>(t.bytes.size()));
            test::upload(*in.back(), t.bytes);
            in_ptrs.push_back(in.back()->ptr);
        }
        test::DeviceBuffer out(got.bytes.size());
        CUDA_REQUIRE(cudaMemset(out.ptr, 0xff, out.bytes));
        void* out_ptrs[] = {out.ptr};
        cudaStream_t s = nullptr;
        CUDA_REQUIRE(cudaStreamCreate(&s));
        rt.enqueue(in_ptrs.data(), out_ptrs, true, s);
        CUDA_REQUIRE(cudaStreamSynchronize(s));
        CUDA_REQUIRE(cudaStreamDestroy(s));
        CHECK(test::download<uint8_t>(out.ptr, got.bytes.size()) == got.bytes);
    }
    test::require_error([&] { rt.set_input_shape(0, {3, 16}); }, "dimension 0 (batch) is 3, outside the plan's range 1..2");
    test::require_error([&] { rt.set_input_shape(0, {1, 129}); }, "outside the plan's range 16..128");
}

// Runs rt on feeds as enqueue does for a caller: device buffers of the actual shapes on a
// stream of the caller's, outputs poisoned (0xff) first; returns the output's bytes.
std::vector<uint8_t> run_enqueued(Runtime& rt, const TensorMap& feeds, bool graph) {
    std::vector<std::unique_ptr<test::DeviceBuffer>> in;
    std::vector<const void*> in_ptrs;
    for (const TensorInfo& i : rt.inputs()) {
        const Tensor& t = feeds.at(i.name);
        REQUIRE(t.shape == i.shape);
        in.push_back(std::make_unique<test::DeviceBuffer>(t.bytes.size()));
        test::upload(*in.back(), t.bytes);
        in_ptrs.push_back(in.back()->ptr);
    }
    const TensorInfo& o = rt.outputs()[0];
    test::DeviceBuffer out(static_cast<size_t>(numel(o.shape)) * dtype_size(o.dtype));
    CUDA_REQUIRE(cudaMemset(out.ptr, 0xff, out.bytes));
    void* out_ptrs[] = {out.ptr};
    cudaStream_t s = nullptr;
    CUDA_REQUIRE(cudaStreamCreate(&s));
    rt.enqueue(in_ptrs.data(), out_ptrs, graph, s);
    CUDA_REQUIRE(cudaStreamSynchronize(s));
    CUDA_REQUIRE(cudaStreamDestroy(s));
    return test::download<uint8_t>(out.ptr, out.bytes);
}

TEST_CASE("a range plan at a shape matches the plan compiled for exactly that shape", "[gpu][shapes]") {
    STOF_REQUIRE_GPU();
    const ir::Graph model = import_onnx_file(test::source_dir() + "/models/" + kModel + "/model.onnx");
    Runtime ranged(write(compile_ranged(model, parse_shape_args({"seq=64..128", "batch=2"}), gpu_options()),
                         "shape_ranges_bert_64_128.plan"));
    // seq 128 is a bucket's size (inputs and output bound in place), seq 100 is padded into it.
    for (int64_t seq : {int64_t{100}, int64_t{128}}) {
        INFO("seq " << seq);
        ir::Graph g = model;
        CompileOptions opt = gpu_options();
        opt.pipeline.pass.input_shapes = {{"batch", {2}}, {"seq", {seq}}};
        Runtime exact(write(compile_model(g, opt), "shape_ranges_bert_" + std::to_string(seq) + ".plan"));
        const TensorMap feeds = inputs_at(model, 2, seq);
        const Tensor a = run_poisoned(ranged, feeds), b = run_poisoned(exact, feeds);
        CHECK(ranged.ranges()->bucket_values[ranged.bucket()] == std::vector<int64_t>{128});
        const Comparison cmp = compare(a, b, 1e-2, 1e-2);
        INFO(describe(cmp, b, 1e-2, 1e-2));
        CHECK(cmp.ok);

        // Bound in place, an input set through the runtime is the bucket's own tensor before
        // any run; padded, the run leaves the bucket's tensor the input and zeros after it.
        const TensorInfo& ids = ranged.inputs()[0];
        const Tensor& fed = feeds.at(ids.name);
        const Shape bucket_shape = ranged.plan().tensors[static_cast<size_t>(ids.tensor)].shape;
        REQUIRE(bucket_shape == Shape{2, 128});
        Tensor poison(ids.dtype, bucket_shape);
        std::fill(poison.bytes.begin(), poison.bytes.end(), uint8_t{0xff});
        ranged.write_tensor(ids.tensor, poison);
        ranged.set_input(ids.name, fed);
        if (seq == 128) {
            CHECK(ranged.read_tensor(ids.tensor).bytes == fed.bytes);
            CHECK(ranged.input_address(0) != nullptr);
        } else {
            CHECK(ranged.read_tensor(ids.tensor).bytes == poison.bytes);
            ranged.run();
            CHECK(ranged.read_tensor(ids.tensor).bytes == pad_tensor(fed, bucket_shape).bytes);
        }

        // The same bytes as a CUDA graph, and enqueued on a caller's device buffers and stream
        // (plain and graph), on both plans.
        CUDA_REQUIRE(cudaMemset(ranged.output_address(0), 0xff, a.bytes.size()));
        ranged.run(true);
        CHECK(ranged.output("last_hidden_state").bytes == a.bytes);
        for (bool graph : {false, true}) {
            INFO("enqueued, graph " << graph);
            CHECK(run_enqueued(ranged, feeds, graph) == a.bytes);
            CHECK(run_enqueued(exact, feeds, graph) == b.bytes);
        }
    }
}

TEST_CASE("C API: a range plan takes the actual shape", "[gpu][shapes][c_api]") {
    STOF_REQUIRE_GPU();
    const ir::Graph model = import_onnx_file(test::source_dir() + "/models/" + kModel + "/model.onnx");
    const std::string path = write(compile_ranged(model, parse_shape_args({"input_ids=1..2x16..64"}), gpu_options()),
                                   "shape_ranges_capi.plan");
    stof_plan* plan = nullptr;
    REQUIRE(stof_plan_open(path.c_str(), 0, &plan) == STOF_OK);
    size_t vars = 0, buckets = 0, bucket = 0;
    REQUIRE(stof_plan_shape_ranges(plan, &vars, &buckets, &bucket) == STOF_OK);
    CHECK(vars == 2);
    CHECK(buckets == 6);
    const int64_t dims[] = {2, 40};
    REQUIRE(stof_plan_set_input_shape(plan, 0, 2, dims) == STOF_OK);
    stof_tensor_info info{};
    REQUIRE(stof_plan_input_info(plan, 1, &info) == STOF_OK);  // attention_mask follows input_ids' ranges
    CHECK(info.rank == 2);
    CHECK(info.dims[0] == 2);
    CHECK(info.dims[1] == 40);
    REQUIRE(stof_plan_output_info(plan, 0, &info) == STOF_OK);
    CHECK(std::vector<int64_t>(info.dims, info.dims + info.rank) == std::vector<int64_t>{2, 40, 128});
    REQUIRE(stof_plan_shape_ranges(plan, nullptr, nullptr, &bucket) == STOF_OK);
    CHECK(bucket == 5);  // batch 2, seq 64
    const int64_t outside[] = {2, 65};
    CHECK(stof_plan_set_input_shape(plan, 0, 2, outside) == STOF_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(stof_last_error()).find("outside the plan's range 16..64") != std::string::npos);

    const TensorMap feeds = inputs_at(model, 2, 40);
    size_t n = 0;
    REQUIRE(stof_plan_num_inputs(plan, &n) == STOF_OK);
    for (size_t i = 0; i < n; ++i) {
        REQUIRE(stof_plan_input_info(plan, i, &info) == STOF_OK);
        const Tensor& t = feeds.at(info.name);
        REQUIRE(stof_plan_set_input(plan, i, t.bytes.data(), t.bytes.size()) == STOF_OK);
    }
    REQUIRE(stof_plan_run(plan, 0) == STOF_OK);
    Tensor got(DType::f32, {2, 40, 128});
    REQUIRE(stof_plan_get_output(plan, 0, got.bytes.data(), got.bytes.size()) == STOF_OK);
    const Tensor want = reference(model, feeds);
    const Comparison cmp = compare(got, want, 3e-2, 3e-2);
    INFO(describe(cmp, want, 3e-2, 3e-2));
    CHECK(cmp.ok);

    // At a bucket's own shape (2x64: bound in place), enqueued on device buffers and a
    // stream of the caller's, plain and as a CUDA graph, output poisoned first.
    const int64_t full[] = {2, 64};
    REQUIRE(stof_plan_set_input_shape(plan, 0, 2, full) == STOF_OK);
    const TensorMap feeds64 = inputs_at(model, 2, 64);
    const Tensor want64 = reference(model, feeds64);
    std::vector<std::unique_ptr<test::DeviceBuffer>> in;
    std::vector<const void*> in_ptrs;
    for (size_t i = 0; i < n; ++i) {
        REQUIRE(stof_plan_input_info(plan, i, &info) == STOF_OK);
        const Tensor& t = feeds64.at(info.name);
        in.push_back(std::make_unique<test::DeviceBuffer>(t.bytes.size()));
        test::upload(*in.back(), t.bytes);
        in_ptrs.push_back(in.back()->ptr);
    }
    test::DeviceBuffer out(want64.bytes.size());
    void* out_ptrs[] = {out.ptr};
    cudaStream_t s = nullptr;
    CUDA_REQUIRE(cudaStreamCreate(&s));
    for (int graph : {0, 1}) {
        INFO("graph " << graph);
        CUDA_REQUIRE(cudaMemset(out.ptr, 0xff, out.bytes));
        REQUIRE(stof_plan_enqueue(plan, in_ptrs.data(), out_ptrs, graph, s) == STOF_OK);
        CUDA_REQUIRE(cudaStreamSynchronize(s));
        Tensor got64(DType::f32, {2, 64, 128});
        got64.bytes = test::download<uint8_t>(out.ptr, out.bytes);
        const Comparison c64 = compare(got64, want64, 3e-2, 3e-2);
        INFO(describe(c64, want64, 3e-2, 3e-2));
        CHECK(c64.ok);
    }
    CUDA_REQUIRE(cudaStreamDestroy(s));
    stof_plan_close(plan);
}
