// The fused GEMM + rotary embedding (kernels/gemm) in the fusion search: where its seize site
// exists (the Rotary op fuse-rotary makes on a merged Q|K|V projection), how a taken move lowers
// (plan::Epilogue::rotary, attention reading Q, K and V in place from its product), that the
// offline cost model never picks it unmeasured, and a plan with it against the interpreter on
// the GPU.
#include "compile.hpp"
#include "compile_options.hpp"
#include "fusion/search.hpp"
#include "gpu_util.hpp"
#include "interp/interpreter.hpp"
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
#include <cstdio>
#include <filesystem>

using namespace stof;
using fusion::Segment;
using fusion::SegmentKind;
using test::cheap_fused;
using test::Oracle;
using test::set_attr;

namespace {

struct Block {
    int64_t head_dim = 64;
    int64_t seq = 16;
};

// x [2, seq, 256] → q, k, v = x·Wq, x·Wk, x·Wv as [2, 4, seq, D] heads; q and k rotated (LLaMA's
// rotate-half with cos and sin [1, 1, seq, D] of frequencies 10000^(−2i/D)); attention; the
// heads back to [2, seq, 256]; · Wo → y.
std::string attention_block(std::mt19937_64& rng, const Block& m) {
    const int64_t hidden = 256, heads = hidden / m.head_dim, d = m.head_dim;
    test::OnnxBuilder b(18);
    b.input("x", onnx::TensorProto::FLOAT, {2, m.seq, hidden});
    Tensor cos(DType::f32, {1, 1, m.seq, d}), sin(DType::f32, {1, 1, m.seq, d});
    for (int64_t p = 0; p < m.seq; ++p)
        for (int64_t e = 0; e < d; ++e) {
            const double angle = static_cast<double>(p) * std::pow(10000.0, -2.0 * static_cast<double>(e % (d / 2)) / d);
            cos.data<float>()[p * d + e] = static_cast<float>(std::cos(angle));
            sin.data<float>()[p * d + e] = static_cast<float>(std::sin(angle));
        }
    b.initializer("cos", cos);
    b.initializer("sin", sin);
    b.initializer("heads_shape", test::ints({2, m.seq, heads, d}));
    b.initializer("hidden_shape", test::ints({2, m.seq, hidden}));
    for (const char* p : {"q", "k", "v", "o"}) {
        b.initializer(std::string("w") + p, test::random_weights({hidden, hidden}, hidden, rng));
        if (*p == 'o') continue;
        const std::string n = p;
        b.node("MatMul", {"x", "w" + n}, {n + "_proj"}, n + "_proj");
        b.node("Reshape", {n + "_proj", "heads_shape"}, {n + "_heads"});
        set_attr(b.node("Transpose", {n + "_heads"}, {*p == 'v' ? n : n + "_in"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
        if (*p != 'v') test::add_rotate_half(b, n + "_in", n, d);
    }
    test::add_attention(b, static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))));
    set_attr(b.node("Transpose", {"o"}, {"o_t"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
    b.node("Reshape", {"o_t", "hidden_shape"}, {"o_rows"});
    b.node("MatMul", {"o_rows", "wo"}, {"y"}, "o_proj");
    b.output("y");
    return b.bytes();
}

ir::Graph pipelined(const std::string& bytes) {
    ir::Graph g = import_onnx_bytes(bytes, "", "block");
    run_pipeline(g, {});
    return g;
}

int rotary_sites(const ir::Graph& g, bool target) {
    int n = 0;
    for (const fusion::Site& s : fusion::find_sites(g, {target})) n += s.field == fusion::Site::rotary_in_gemm;
    return n;
}

}  // namespace

TEST_CASE("fused rotary GEMM: the Rotary op on a merged Q|K|V projection is a seize site on targets that run it",
          "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    const ir::Graph g = pipelined(attention_block(rng, {}));
    int rotary = 0;
    for (const ir::Node& n : g.nodes) rotary += n.op == ir::Op::Rotary;
    CHECK(rotary == 1);
    CHECK(rotary_sites(g, true) == 1);
    CHECK(rotary_sites(g, false) == 0);
    // Not: heads of 32 columns (the kernel rotates heads of 64 or 128).
    CHECK(rotary_sites(pipelined(attention_block(rng, {32})), true) == 0);
}

TEST_CASE("fused rotary GEMM: the search takes it when it measures faster; the cost model never unmeasured", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    test::check_fused_gemm_search(pipelined(attention_block(rng, {})), plan::Epilogue::rotary);
}

TEST_CASE("fused rotary GEMM: a taken move lowers to one rotary step whose product attention reads in place", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    const std::string model = attention_block(rng, {});
    for (const Precision p : {Precision::fp16, Precision::bf16, Precision::fp32}) {
        INFO(precision_name(p));
        ir::Graph g = import_onnx_bytes(model, "", "block");
        CompileOptions opt = test::compile_options(p, "block.onnx");
        Oracle fast(cheap_fused);
        opt.evaluator = &fast;
        const plan::Plan plan = compile_model(g, opt);
        int fused = 0;
        for (const plan::Step& s : plan.steps) {
            if (s.kind != plan::StepKind::gemm || s.gemm.epilogue != plan::Epilogue::rotary) continue;
            ++fused;
            CHECK((s.gemm.m == 32 && s.gemm.k == 256 && s.gemm.n == 768 && s.gemm.ldd == 768));
            CHECK((s.gemm.rotary.cols == 512 && s.gemm.rotary.head_dim == 64 && s.gemm.rotary.rows == 16));
            CHECK(plan::step_kernel_name(plan, s) == "gemm_rotary");
            // Attention reads the product in place: its operands are views of d's bytes.
            const plan::TensorDesc& d = plan.tensors[static_cast<size_t>(s.gemm.d)];
            for (const plan::Step& a : plan.steps)
                if (a.kind == plan::StepKind::attention)
                    for (const plan::AttentionOperand* o : {&a.attention.q, &a.attention.k, &a.attention.v}) {
                        const plan::TensorDesc& t = plan.tensors[static_cast<size_t>(o->tensor)];
                        CHECK((t.buffer == d.buffer && t.offset == d.offset && t.bytes() == d.bytes()));
                    }
            for (const int32_t t : {s.gemm.rotary.cos, s.gemm.rotary.sin})
                CHECK(plan.tensors[static_cast<size_t>(t)].shape == Shape({16, 64}));
        }
        // fp32 plans keep the rotation in a kernel of its own: the fused kernel is 16-bit.
        CHECK(fused == (p == Precision::fp32 ? 0 : 1));
        const plan::Plan back = plan::parse_plan(plan::serialize_plan(plan), "block.plan");
        REQUIRE(back.steps.size() == plan.steps.size());
        for (size_t i = 0; i < plan.steps.size(); ++i)
            if (plan.steps[i].kind == plan::StepKind::gemm)
                CHECK(back.steps[i].gemm.rotary.cos == plan.steps[i].gemm.rotary.cos);
    }
}

TEST_CASE("fused rotary GEMM: a plan with it runs like the reference interpreter", "[gpu][plan]") {
    STOF_REQUIRE_GPU();
    cudaDeviceProp prop{};
    CUDA_REQUIRE(cudaGetDeviceProperties(&prop, 0));
    if (prop.major != 9 || prop.minor != 0) {
        std::printf("STOF-SKIP: the fused rotary GEMM runs on compute capability 9.0 alone\n");
        return;
    }
    std::mt19937_64 rng = test::make_rng();
    const std::filesystem::path dir = std::filesystem::path(test::binary_dir()) / "test_tmp" / "gemm_rotary";
    std::filesystem::create_directories(dir);
    // 2 x 200 tokens (m = 400: no multiple of a tile), heads of 64 and of 128.
    for (const int64_t head_dim : {64, 128}) {
        const std::string model = attention_block(rng, {head_dim, 200});
        for (const Precision p : {Precision::fp16, Precision::bf16}) {
            INFO(precision_name(p) << ", heads of " << head_dim);
            ir::Graph g = import_onnx_bytes(model, "", "block");
            CompileOptions opt = test::compile_options(p, "block.onnx", "sm_90");
            Oracle fast(cheap_fused);
            opt.evaluator = &fast;
            const plan::Plan plan = compile_model(g, opt);
            int fused = 0;
            for (const plan::Step& s : plan.steps)
                fused += s.kind == plan::StepKind::gemm && s.gemm.epilogue == plan::Epilogue::rotary;
            CHECK(fused == 1);
            const std::string path = (dir / (std::string(precision_name(p)) + std::to_string(head_dim) + ".plan")).string();

            TensorMap feeds;
            Tensor x(DType::f32, {2, 200, 256});
            std::uniform_real_distribution<float> u(-1.f, 1.f);
            for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
            feeds["x"] = x;
            ir::Graph ref = import_onnx_bytes(model, "", "block");  // the model as exported: shapes inferred, no rewrite
            for (const PassInfo& pass : pipeline_passes()) {
                pass.run(ref, {});
                if (std::string(pass.name) == "infer-shapes") break;
            }
            const Tensor want = interpret(ref, feeds).at("y");
            test::check_plan_output(plan, path, feeds, "y", want, p == Precision::bf16 ? 5e-2 : 2e-2);
        }
    }
}
