// The C API's plans (stof/c_api.h): the synchronous host calls and the
// asynchronous run on caller's device buffers and stream give the same bytes.
#include "catch.hpp"
#include "compile.hpp"
#include "compile_options.hpp"
#include "gpu_util.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "plan/plan_writer.hpp"
#include "stof/c_api.h"
#include "stof/version.hpp"
#include "test_util.hpp"

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

using namespace stof;

namespace {

// x [2, 16, 64] -> MatMul(W) -> + x -> y [2, 16, 64]; and attention over q, k, v [1, 2, 16, 64] -> o.
std::string two_output_model() {
    test::OnnxBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {2, 16, 64});
    for (const char* n : {"q", "k", "v"}) b.input(n, onnx::TensorProto::FLOAT, {1, 2, 16, 64});
    Tensor w(DType::f32, {64, 64});
    for (int64_t i = 0; i < w.numel(); ++i)
        w.data<float>()[i] = static_cast<float>(std::sin(0.1 * static_cast<double>(i))) * 0.1f;
    b.initializer("W", w);
    b.node("MatMul", {"x", "W"}, {"xw"});
    b.node("Add", {"xw", "x"}, {"y"});
    test::add_attention(b, 0.125f);
    b.output("y");
    b.output("o");
    return b.bytes();
}

std::string status_message(stof_status s) { return std::to_string(static_cast<int>(s)) + ": " + stof_last_error(); }

#define REQUIRE_OK(call)                                        \
    do {                                                        \
        const stof_status s_ = (call);                          \
        INFO(#call);                                            \
        REQUIRE(status_message(s_) == status_message(STOF_OK)); \
    } while (0)
#define REQUIRE_CUDA(call) REQUIRE((call) == cudaSuccess)

}  // namespace

TEST_CASE("C API plans: errors are statuses with messages", "[cpu][c_api]") {
    CHECK(std::string(stof_version()) == kVersion);
    stof_plan* plan = reinterpret_cast<stof_plan*>(1);
    CHECK(stof_plan_open("/nonexistent/model.plan", 0, &plan) == STOF_ERROR_PLAN);
    CHECK(plan == nullptr);
    CHECK(std::string(stof_last_error()).find("/nonexistent/model.plan") != std::string::npos);
    CHECK(stof_plan_enqueue(nullptr, nullptr, nullptr, 0, nullptr) == STOF_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(stof_last_error()) == "plan is null");
    void* address = nullptr;
    CHECK(stof_plan_input_address(nullptr, 0, &address) == STOF_ERROR_INVALID_ARGUMENT);
    CHECK(stof_plan_output_address(nullptr, 0, &address) == STOF_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("C API plans: enqueued runs on caller buffers and streams match the synchronous run", "[gpu][c_api]") {
    STOF_REQUIRE_GPU();
    cudaDeviceProp prop{};
    REQUIRE_CUDA(cudaGetDeviceProperties(&prop, 0));
    ir::Graph g = import_onnx_bytes(two_output_model(), "", "two_outputs");
    const plan::Plan compiled = compile_model(
        g, test::compile_options(Precision::fp16, "two_outputs.onnx", "sm_" + std::to_string(prop.major * 10 + prop.minor)));
    const std::string path = test::binary_dir() + "/test_tmp/c_api_two_outputs.plan";
    std::filesystem::create_directories(test::binary_dir() + "/test_tmp");
    plan::write_plan(compiled, path);

    stof_plan* plan = nullptr;
    REQUIRE_OK(stof_plan_open(path.c_str(), 0, &plan));
    size_t ni = 0, no = 0;
    REQUIRE_OK(stof_plan_num_inputs(plan, &ni));
    REQUIRE_OK(stof_plan_num_outputs(plan, &no));
    REQUIRE(ni == 4);
    REQUIRE(no == 2);

    // Two input sets A and B, their synchronous results, and device copies of the inputs.
    std::mt19937_64 rng = test::make_rng();
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    std::vector<size_t> in_bytes(ni), out_bytes(no);
    std::vector<std::vector<float>> host_in[2];
    std::vector<std::vector<char>> ref[2];
    std::vector<void*> dev_in[2];
    for (int set = 0; set < 2; ++set) {
        for (size_t i = 0; i < ni; ++i) {
            stof_tensor_info t;
            REQUIRE_OK(stof_plan_input_info(plan, i, &t));
            REQUIRE(t.dtype == STOF_DTYPE_F32);
            in_bytes[i] = t.bytes;
            std::vector<float> v(t.bytes / 4);
            for (float& f : v) f = dist(rng);
            REQUIRE_OK(stof_plan_set_input(plan, i, v.data(), t.bytes));
            void* d = nullptr;
            REQUIRE_CUDA(cudaMalloc(&d, t.bytes));
            REQUIRE_CUDA(cudaMemcpy(d, v.data(), t.bytes, cudaMemcpyHostToDevice));
            dev_in[set].push_back(d);
            host_in[set].push_back(std::move(v));
        }
        REQUIRE_OK(stof_plan_run(plan, 0));
        for (size_t i = 0; i < no; ++i) {
            stof_tensor_info t;
            REQUIRE_OK(stof_plan_output_info(plan, i, &t));
            out_bytes[i] = t.bytes;
            ref[set].emplace_back(t.bytes);
            REQUIRE_OK(stof_plan_get_output(plan, i, ref[set][i].data(), t.bytes));
        }
    }
    REQUIRE(ref[0][0] != ref[1][0]);

    std::vector<void*> dev_out[2];
    for (int set = 0; set < 2; ++set)
        for (size_t i = 0; i < no; ++i) {
            void* d = nullptr;
            REQUIRE_CUDA(cudaMalloc(&d, out_bytes[i]));
            REQUIRE_CUDA(cudaMemset(d, 0xff, out_bytes[i]));
            dev_out[set].push_back(d);
        }
    auto check_outputs = [&](int set, const std::vector<void*>& out, const char* what) {
        for (size_t i = 0; i < no; ++i) {
            std::vector<char> got(out_bytes[i]);
            REQUIRE_CUDA(cudaMemcpy(got.data(), out[i], out_bytes[i], cudaMemcpyDeviceToHost));
            INFO(what << ", output " << i << ", input set " << set);
            CHECK(got == ref[set][i]);
        }
    };

    cudaStream_t s1 = nullptr, s2 = nullptr;
    REQUIRE_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    REQUIRE_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    for (int graph = 0; graph < 2; ++graph) {
        // Set A on stream 1, then set B on stream 2 without waiting in between:
        // the second run waits for the first on the GPU.
        REQUIRE_OK(stof_plan_enqueue(plan, dev_in[0].data(), dev_out[0].data(), graph, s1));
        REQUIRE_OK(stof_plan_enqueue(plan, dev_in[1].data(), dev_out[1].data(), graph, s2));
        REQUIRE_CUDA(cudaStreamSynchronize(s2));
        REQUIRE_CUDA(cudaStreamSynchronize(s1));
        check_outputs(0, dev_out[0], graph ? "graph, stream 1" : "stream 1");
        check_outputs(1, dev_out[1], graph ? "graph, stream 2" : "stream 2");
        for (int set = 0; set < 2; ++set)
            for (size_t i = 0; i < no; ++i) REQUIRE_CUDA(cudaMemset(dev_out[set][i], 0xff, out_bytes[i]));
    }

    // No copies: inputs written to the plan's own buffers, outputs read from its own, default stream.
    std::vector<void*> own_out(no);
    for (size_t i = 0; i < ni; ++i) {
        void* own = nullptr;
        REQUIRE_OK(stof_plan_input_address(plan, i, &own));
        REQUIRE_CUDA(cudaMemcpy(own, host_in[0][i].data(), in_bytes[i], cudaMemcpyHostToDevice));
    }
    for (size_t i = 0; i < no; ++i) REQUIRE_OK(stof_plan_output_address(plan, i, &own_out[i]));
    REQUIRE_OK(stof_plan_enqueue(plan, nullptr, nullptr, 0, nullptr));
    REQUIRE_CUDA(cudaDeviceSynchronize());
    check_outputs(0, own_out, "own buffers, legacy default stream");

    // Memory the GPU cannot reach is refused before anything runs.
    std::vector<char> host(in_bytes[0]);
    std::vector<const void*> bad(dev_in[0].begin(), dev_in[0].end());
    bad[0] = host.data();
    CHECK(stof_plan_enqueue(plan, bad.data(), nullptr, 0, s1) == STOF_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(stof_last_error()).find("input 'x'") != std::string::npos);

    REQUIRE_CUDA(cudaStreamDestroy(s1));
    REQUIRE_CUDA(cudaStreamDestroy(s2));
    for (int set = 0; set < 2; ++set) {
        for (void* d : dev_in[set]) cudaFree(d);
        for (void* d : dev_out[set]) cudaFree(d);
    }
    stof_plan_close(plan);
}
