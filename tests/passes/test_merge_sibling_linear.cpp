// merge-sibling-linear: linear layers reading one input become one GEMM over
// concatenated weights, split back; near-misses stay; results are unchanged.
#include "onnx_builder.hpp"
#include "pass_check.hpp"
#include "test_util.hpp"

using namespace stof;

namespace {

// x [2, 8, 16] read by `widths.size()` linear layers x·W_i (+ b_i where bias[i]).
std::string siblings(std::mt19937_64& rng, const std::vector<int64_t>& widths, const std::vector<bool>& bias,
                     bool share_weight = false) {
    test::OnnxBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {2, 8, 16});
    for (size_t i = 0; i < widths.size(); ++i) {
        const std::string w = share_weight ? "w0" : "w" + std::to_string(i), y = "y" + std::to_string(i);
        if (!share_weight || i == 0) b.initializer(w, test::random_tensor(DType::f32, {16, widths[i]}, rng));
        b.node("MatMul", {"x", w}, {bias[i] ? "m" + std::to_string(i) : y});
        if (bias[i]) {
            b.initializer("b" + std::to_string(i), test::random_tensor(DType::f32, {widths[i]}, rng));
            b.node("Add", {"m" + std::to_string(i), "b" + std::to_string(i)}, {y});
        }
        b.output(y);
    }
    return b.bytes();
}

}  // namespace

TEST_CASE("merge-sibling-linear makes Q/K/V and gate/up one GEMM", "[cpu][passes]") {
    auto rng = test::make_rng();
    SECTION("three projections with biases (BERT)") {
        const ir::Graph after = test::run_checked(test::prepared(siblings(rng, {16, 16, 16}, {true, true, true})),
                                                  passes::merge_sibling_linear, rng);
        CHECK(ir::op_histogram(after) == "1 Add, 1 MatMul, 1 Split");
    }
    SECTION("unequal widths without biases (LLaMA's GQA)") {
        const ir::Graph after = test::run_checked(test::prepared(siblings(rng, {32, 8, 8}, {false, false, false})),
                                                  passes::merge_sibling_linear, rng);
        CHECK(ir::op_histogram(after) == "1 MatMul, 1 Split");
    }
    SECTION("a layer without a bias beside one with (zeros)") {
        const ir::Graph after = test::run_checked(test::prepared(siblings(rng, {16, 8}, {true, false})),
                                                  passes::merge_sibling_linear, rng);
        CHECK(ir::op_histogram(after) == "1 Add, 1 MatMul, 1 Split");
    }
}

TEST_CASE("merge-sibling-linear leaves near-misses alone", "[cpu][passes]") {
    auto rng = test::make_rng();
    auto unchanged = [&](const std::string& bytes) {
        const ir::Graph g = test::prepared(bytes);
        const ir::Graph after = test::run_checked(g, passes::merge_sibling_linear, rng);
        CHECK(ir::op_histogram(after) == ir::op_histogram(g));
    };
    SECTION("one layer") { unchanged(siblings(rng, {16}, {true})); }
    SECTION("a weight read by two layers") { unchanged(siblings(rng, {16, 16}, {false, false}, true)); }
    SECTION("a weight that is a model input") {
        test::OnnxBuilder b;
        b.input("x", onnx::TensorProto::FLOAT, {4, 16});
        b.input("w", onnx::TensorProto::FLOAT, {16, 16});
        b.initializer("v", test::random_tensor(DType::f32, {16, 16}, rng));
        b.node("MatMul", {"x", "w"}, {"y0"});
        b.node("MatMul", {"x", "v"}, {"y1"});
        b.output("y0");
        b.output("y1");
        unchanged(b.bytes());
    }
}
