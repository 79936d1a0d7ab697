// fuse-linear: Gemm, reshaped and bias-first spellings of a linear layer become
// Add(MatMul(x, W), b) with W [K, N] and b [N] constants; near-misses stay;
// results are unchanged.
#include "onnx_builder.hpp"
#include "pass_check.hpp"
#include "test_util.hpp"

using namespace stof;
using test::OnnxBuilder;

namespace {

constexpr int32_t kF32 = onnx::TensorProto::FLOAT;

// x: [2, 3, 8] → Reshape [6, 8] ([8, 6] with transA) → Gemm(·, W [8, 16] or [16, 8] with transB, C)
// → Reshape `out_shape` (GPT-2's Conv1D).
std::string gemm_model(bool bias, bool trans_b, float alpha, float beta, const Shape& c_shape = {16},
                       const Shape& out_shape = {2, 3, 16}, bool trans_a = false) {
    OnnxBuilder b(17);
    b.input("x", kF32, {2, 3, 8});
    Tensor back(DType::i64, {static_cast<int64_t>(out_shape.size())});
    for (size_t i = 0; i < out_shape.size(); ++i) back.set_i64(static_cast<int64_t>(i), out_shape[i]);
    b.initializer("flat", trans_a ? test::ints({8, -1}) : test::ints({-1, 8})).initializer("back", back);
    b.initializer("W", test::iota_f32(trans_b ? Shape{16, 8} : Shape{8, 16})).initializer("C", test::iota_f32(c_shape));
    b.node("Reshape", {"x", "flat"}, {"x2"});
    std::vector<std::string> in{"x2", "W"};
    if (bias) in.push_back("C");
    auto& gemm = b.node("Gemm", in, {"y2"});
    test::set_attr(gemm, "transA", int64_t{trans_a});
    test::set_attr(gemm, "transB", int64_t{trans_b});
    test::set_attr(gemm, "alpha", alpha);
    test::set_attr(gemm, "beta", beta);
    b.node("Reshape", {"y2", "back"}, {"y"});
    b.output("y");
    return b.bytes();
}

// x: [2, 3, 8] → MatMul(x, W) + b, b first or second; `w_input`: W is a graph input.
std::string matmul_add_model(bool bias_first, const Shape& b_shape, bool w_input = false, bool mm_output = false) {
    OnnxBuilder b(17);
    b.input("x", kF32, {2, 3, 8});
    if (w_input) b.input("W", kF32, {8, 16});
    else b.initializer("W", test::iota_f32({8, 16}));
    b.initializer("b", test::iota_f32(b_shape));
    b.node("MatMul", {"x", "W"}, {"mm"});
    if (bias_first) b.node("Add", {"b", "mm"}, {"y"});
    else b.node("Add", {"mm", "b"}, {"y"});
    b.output("y");
    if (mm_output) b.output("mm");
    return b.bytes();
}

// The canonical form: one MatMul(x, W [8, 16]) and, with a bias, Add(it, b [16]).
void check_canonical(const ir::Graph& g, bool bias) {
    CHECK(ir::op_histogram(g) == (bias ? "1 Add, 1 MatMul" : "1 MatMul"));
    for (const ir::Node& n : g.nodes) {
        if (n.op == ir::Op::MatMul) {
            CHECK(g.value(n.inputs[0]).name == "x");
            CHECK(g.value(n.inputs[1]).shape == Shape({8, 16}));
        }
        if (n.op == ir::Op::Add) {
            CHECK(g.value(n.inputs[1]).data);
            CHECK(g.value(n.inputs[1]).shape == Shape{16});
        }
    }
}

}  // namespace

TEST_CASE("fuse-linear brings linear layers to Add(MatMul(x, W), b)", "[cpu][passes]") {
    auto rng = test::make_rng();
    SECTION("Reshape, Gemm with bias, Reshape (GPT-2 TorchScript)") {
        check_canonical(test::run_checked(test::prepared(gemm_model(true, false, 1, 1)), passes::fuse_linear, rng), true);
    }
    SECTION("Gemm without bias (GPT-2 dynamo)") {
        check_canonical(test::run_checked(test::prepared(gemm_model(false, false, 1, 1)), passes::fuse_linear, rng), false);
    }
    SECTION("transB, alpha and beta fold into W and b") {
        check_canonical(
            test::run_checked(test::prepared(gemm_model(true, true, 0.5f, 2.0f, {1, 16})), passes::fuse_linear, rng), true);
    }
    SECTION("bias first (BERT TorchScript)") {
        check_canonical(test::run_checked(test::prepared(matmul_add_model(true, {16})), passes::fuse_linear, rng), true);
    }
    SECTION("bias of shape [1, 1, 16]") {
        check_canonical(test::run_checked(test::prepared(matmul_add_model(false, {1, 1, 16})), passes::fuse_linear, rng), true);
    }
    SECTION("the canonical form is left as it is") {
        const ir::Graph g = test::prepared(matmul_add_model(false, {16}));
        const ir::Graph after = test::run_checked(g, passes::fuse_linear, rng);
        CHECK(ir::to_text(after) == ir::to_text(g));
    }
}

TEST_CASE("fuse-linear leaves near-misses alone", "[cpu][passes]") {
    auto rng = test::make_rng();
    auto same_ops = [&](const std::string& bytes) {
        const ir::Graph g = test::prepared(bytes);
        const ir::Graph after = test::run_checked(g, passes::fuse_linear, rng);
        CHECK(ir::op_histogram(after) == ir::op_histogram(g));
        return after;
    };
    SECTION("the weight is no constant") { same_ops(matmul_add_model(true, {16}, true)); }
    SECTION("the MatMul is also read outside") {
        const ir::Graph after = same_ops(matmul_add_model(true, {16}, false, true));
        for (const ir::Node& n : after.nodes)
            if (n.op == ir::Op::Add) CHECK(after.value(n.inputs[0]).name == "b");
    }
    SECTION("a bias that is no row vector") { same_ops(matmul_add_model(false, {3, 16})); }
    SECTION("Gemm with C of shape [M, N]") { same_ops(gemm_model(true, false, 1, 1, {6, 16})); }
    SECTION("Gemm with transA") { same_ops(gemm_model(true, false, 1, 1, {16}, {2, 3, 16}, true)); }
    SECTION("an output Reshape that does not restore x's leading dimensions") {
        const ir::Graph g = test::prepared(gemm_model(true, false, 1, 1, {16}, {3, 2, 16}));
        const ir::Graph after = test::run_checked(g, passes::fuse_linear, rng);
        CHECK(ir::op_histogram(after) == "1 Add, 1 MatMul, 2 Reshape");
    }
}
