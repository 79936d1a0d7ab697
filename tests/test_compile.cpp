// compile_model: what every plan gets regardless of precision, and what it reports.
#include "compile.hpp"
#include "compile_options.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "plan/plan_reader.hpp"
#include "plan/plan_writer.hpp"
#include "stof/npy.hpp"
#include "stof/sparse_mask.hpp"
#include "test_util.hpp"

#include <filesystem>
#include <random>

using namespace stof;
namespace fs = std::filesystem;

namespace {

// q, k, v [1, 2, S, D] (heads-major) through scaled-dot-product attention.
std::string attention_model(int64_t d, int64_t seq = 16) {
    test::OnnxBuilder b;
    for (const char* n : {"q", "k", "v"}) b.input(n, onnx::TensorProto::FLOAT, {1, 2, seq, d});
    test::add_attention(b, 0.25f);
    b.output("o");
    return b.bytes();
}

plan::Plan compile(const std::string& bytes, Precision p, const std::string& arch = "sm_90") {
    ir::Graph g = import_onnx_bytes(bytes, "", "attention");
    return compile_model(g, test::compile_options(p, "attention.onnx", arch));
}

// The kernel of the plan's only attention step.
int32_t attention_kernel(const plan::Plan& p) {
    for (const plan::Step& s : p.steps)
        if (s.kind == plan::StepKind::attention) return s.attention.kernel;
    return -1;
}

int attention_steps(const plan::Plan& p) {
    int n = 0;
    for (const plan::Step& s : p.steps) n += s.kind == plan::StepKind::attention;
    return n;
}

}  // namespace

TEST_CASE("every precision runs attention on the sparse kernels; a fallback is in the plan's notes", "[cpu][compile]") {
    for (const Precision p : {Precision::fp32, Precision::fp16, Precision::bf16}) {
        INFO(precision_name(p));
        const plan::Plan plan = compile(attention_model(64), p);
        CHECK(attention_steps(plan) == 1);
        CHECK(plan.meta.notes.empty());
    }
    // Head dim 16: no kernel instance takes it; dense ops, and the plan says why.
    const plan::Plan dense = compile(attention_model(16), Precision::fp16);
    CHECK(attention_steps(dense) == 0);
    CHECK(dense.meta.notes.find("not on the sparse attention kernels: head dim 16") != std::string::npos);
}

TEST_CASE("an attention-like softmax the matcher refuses is reported in the plan's notes; a classifier's is not",
          "[cpu][compile]") {
    // x [2, 64, 32]: MatMul(x, xᵀ) -> Softmax -> MatMul(p, x): rank-3 scores, no heads.
    test::OnnxBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {2, 64, 32});
    auto& t = b.node("Transpose", {"x"}, {"xt"});
    test::set_attr(t, "perm", std::vector<int64_t>{0, 2, 1});
    b.node("MatMul", {"x", "xt"}, {"s"});
    auto& sm = b.node("Softmax", {"s"}, {"p"});
    test::set_attr(sm, "axis", int64_t{-1});
    b.node("MatMul", {"p", "x"}, {"o"});
    b.output("o");
    const plan::Plan p = compile(b.bytes(), Precision::fp16);
    CHECK(attention_steps(p) == 0);
    INFO(p.meta.notes);
    CHECK(p.meta.notes.find("is not fused (dense MatMul/Softmax): the scores have shape [2,64,64], not [batch, heads, "
                            "queries, keys]") != std::string::npos);

    // logits = MatMul(x, W) -> Softmax: an output, read by no MatMul.
    test::OnnxBuilder c;
    c.input("x", onnx::TensorProto::FLOAT, {1, 2, 4, 32});
    c.initializer("W", test::iota_f32({32, 8}));
    c.node("MatMul", {"x", "W"}, {"logits"});
    auto& sm2 = c.node("Softmax", {"logits"}, {"probs"});
    test::set_attr(sm2, "axis", int64_t{-1});
    c.output("probs");
    CHECK(compile(c.bytes(), Precision::fp16).meta.notes.empty());
}

TEST_CASE("plans for sm_90 record the Hopper block-wise kernel at every head dim", "[cpu][compile]") {
    CHECK(attention_kernel(compile(attention_model(64, 256), Precision::fp16)) == 2);
    CHECK(attention_kernel(compile(attention_model(128, 256), Precision::bf16)) == 2);
    CHECK(attention_kernel(compile(attention_model(32, 256), Precision::fp16)) == 2);  // on the instance of 64
    CHECK(attention_kernel(compile(attention_model(96, 256), Precision::fp16)) == 2);  // on the instance of 128
    CHECK(attention_kernel(compile(attention_model(64, 256), Precision::fp16, "sm_80")) == 0);
    CHECK(attention_kernel(compile(attention_model(64, 16), Precision::fp16)) == 1);  // the selector's row-wise
    CHECK(std::string(plan::attention_kernel_name(2)) == "attention_block_wise_sm90");
}

TEST_CASE("empty outputs and segments get no steps, and their plans pass the reader", "[cpu][compile]") {
    const auto check = [](const std::string& bytes, const char* what) {
        INFO(what);
        ir::Graph g = import_onnx_bytes(bytes, "", what);
        const plan::Plan p = compile_model(g, test::compile_options(Precision::fp32, "empty.onnx", "sm_80"));
        CHECK(p.steps.size() <= 1);  // at most the kernel of the non-empty output
        CHECK_NOTHROW(plan::parse_plan(plan::serialize_plan(p), what));
    };
    {
        test::OnnxBuilder b;
        b.input("x", onnx::TensorProto::FLOAT, {0, 2});
        b.output("x");
        check(b.bytes(), "an empty input as an output");
    }
    {
        test::OnnxBuilder b;
        b.input("x", onnx::TensorProto::FLOAT, {2});
        b.initializer("c", Tensor(DType::f32, {0, 3}));
        b.node("Add", {"x", "x"}, {"y"});
        b.output("y").output("c");
        check(b.bytes(), "an empty constant as an output");
    }
    {
        test::OnnxBuilder b;
        b.input("x", onnx::TensorProto::FLOAT, {3, 0});
        b.input("u", onnx::TensorProto::FLOAT, {1, 0});
        b.initializer("i", Tensor(DType::i64, {1, 1}));
        b.node("ScatterND", {"x", "i", "u"}, {"y"});
        b.output("y");
        check(b.bytes(), "ScatterND into an empty tensor");
    }
    {  // 2^37 output columns of no rows: no tables of 2^37 taps
        test::OnnxBuilder b;
        b.input("x", onnx::TensorProto::FLOAT, {1, 2});
        Tensor scales(DType::f32, {2});
        scales.data<float>()[0] = 0.5f;
        scales.data<float>()[1] = 0x1p36f;
        b.initializer("scales", scales);
        b.node("Resize", {"x", "", "scales"}, {"y"});
        b.output("y");
        check(b.bytes(), "Resize to an empty shape");
    }
    {
        test::OnnxBuilder b;
        b.input("q", onnx::TensorProto::FLOAT, {1, 2, 0, 64});
        for (const char* n : {"k", "v"}) b.input(n, onnx::TensorProto::FLOAT, {1, 2, 16, 64});
        test::add_attention(b, 0.125f);
        b.output("o");
        check(b.bytes(), "attention of no queries");
    }
}

TEST_CASE("a strided mask is stored folded; the plan refuses a fold that does not fit", "[cpu][compile]") {
    const int S = 256;
    const fs::path dir = fs::path(test::binary_dir()) / "test_tmp" / "folded_masks";
    fs::create_directories(dir);
    Tensor strided(DType::boolean, {S, S}), random(DType::boolean, {S, S});
    std::mt19937_64 rng = test::make_rng();
    for (int64_t i = 0; i < S; ++i)
        for (int64_t j = 0; j < S; ++j) {
            strided.set_i64(i * S + j, (i - j) % 8 == 0);
            random.set_i64(i * S + j, i == j || rng() % 16 == 0);
        }
    write_npy((dir / "strided.npy").string(), strided);
    write_npy((dir / "random.npy").string(), random);
    for (const auto& [spec, fold] :
         {std::pair{"file:" + (dir / "strided.npy").string(), 8}, std::pair{"file:" + (dir / "random.npy").string(), 1},
          std::pair{std::string("sliding:64 & strided:4"), 4}}) {
        INFO(spec);
        ir::Graph g = import_onnx_bytes(attention_model(64, S), "", "attention");
        CompileOptions opt = test::compile_options(Precision::fp16, "attention.onnx");
        opt.pipeline.pass.masks = {spec};
        const plan::Plan p = compile_model(g, opt);
        REQUIRE(attention_steps(p) == 1);
        for (const plan::Step& s : p.steps)
            if (s.kind == plan::StepKind::attention) {
                CHECK(s.attention.fold == fold);
                const SparseMask& m = p.masks[static_cast<size_t>(s.attention.mask)].mask;
                CHECK(m.rows == S / fold);
                CHECK(m.cols == S / fold);
                if (fold == 8) {  // the folded mask is dense: every kept (i, j) of the file
                    CHECK(mask_stats(m).full_tiles == 1);
                    CHECK(mask_stats(m).partial_tiles == 0);
                }
            }
        const plan::Plan back = plan::parse_plan(plan::serialize_plan(p), "folded");
        CHECK(back.steps.size() == p.steps.size());
        // A fold that does not match the stored mask, or does not divide the lengths, is refused.
        for (const int bad : {fold == 1 ? 2 : fold / 2, 3, 0}) {
            plan::Plan q = p;
            for (plan::Step& s : q.steps)
                if (s.kind == plan::StepKind::attention) s.attention.fold = bad;
            CHECK_THROWS_WITH(plan::parse_plan(plan::serialize_plan(q), "folded"),
                              Catch::Matchers::ContainsSubstring(bad == 3   ? "does not divide"
                                                                 : bad == 0 ? "not in 1..64"
                                                                            : "folded by"));
        }
    }
}

TEST_CASE("with padding and a bias, a folded mask's key validity words and bias are in its fold", "[cpu][compile]") {
    for (const char* name : {"bert-torchscript", "t5-torchscript"}) {
        INFO(name);
        const fs::path model = fs::path(test::source_dir()) / "models" / name;
        const fs::path dir = fs::path(test::binary_dir()) / "test_tmp" / "folded_masks";
        fs::create_directories(dir);
        CompileOptions opt = test::compile_options(Precision::fp16, "model.onnx");
        int64_t S = 0, B = 0;
        for (const auto& f : fs::directory_iterator(model / "inputs")) {
            const Tensor t = read_npy(f.path().string());
            opt.pipeline.pass.input_shapes[f.path().stem().string()] = t.shape;
            B = t.shape[0];
            S = t.shape[1];
        }
        Tensor keep(DType::boolean, {S, S});
        for (int64_t i = 0; i < S; ++i)
            for (int64_t j = 0; j < S; ++j) keep.set_i64(i * S + j, (i - j) % 2 == 0);
        write_npy((dir / "strided2.npy").string(), keep);
        opt.pipeline.pass.masks = {"file:" + (dir / "strided2.npy").string()};
        ir::Graph g = import_onnx_file((model / "model.onnx").string());
        const plan::Plan p = compile_model(g, opt);
        int key_valid = 0, attention = 0;
        for (const plan::Step& s : p.steps) {
            if (s.kind == plan::StepKind::key_valid) {
                ++key_valid;
                CHECK(s.key_valid.fold == 2);
                CHECK(p.tensors[static_cast<size_t>(s.key_valid.words)].shape == Shape{2, B, (S / 2 + 63) / 64});
            }
            if (s.kind == plan::StepKind::attention) {
                ++attention;
                CHECK(s.attention.fold == 2);
                CHECK(s.attention.key_valid >= 0);
                if (s.attention.bias >= 0) {  // T5's position bias as its residue blocks [2, H, S/2, S/2]
                    const Shape& bs = p.tensors[static_cast<size_t>(s.attention.bias)].shape;
                    CHECK(bs == Shape{2, s.attention.heads, S / 2, S / 2});
                    CHECK(s.attention.bias_stride_h == (S / 2) * (S / 2));
                    CHECK(s.attention.bias_stride_s == S / 2);
                }
            }
        }
        CHECK(key_valid == 1);
        CHECK(attention >= 1);
        // Words of another fold are refused.
        plan::Plan q = p;
        for (plan::Step& s : q.steps)
            if (s.kind == plan::StepKind::key_valid) s.key_valid.fold = 1;
        CHECK_THROWS_WITH(plan::parse_plan(plan::serialize_plan(q), "folded"),
                          Catch::Matchers::ContainsSubstring("holds words folded by 1"));
    }
}
