// patch-conv: convolutions over non-overlapping patches become layout ops and a
// linear layer over the patches with unchanged results; other convolutions stay.
#include "onnx_builder.hpp"
#include "pass_check.hpp"
#include "test_util.hpp"

using namespace stof;
using test::OnnxBuilder;

namespace {

constexpr int32_t kF32 = onnx::TensorProto::FLOAT;

struct ConvCase {
    Shape x{2, 3, 12, 8}, w{5, 3, 4, 2};
    std::vector<int64_t> strides{4, 2}, pads{0, 0, 0, 0};
    int64_t group = 1;
    bool bias = true, weight_input = false;
};

std::vector<test::Dim> dims(const Shape& s) { return {s.begin(), s.end()}; }

// y = Conv(x, w [, b]) with random constant w and b.
std::string conv_model(const ConvCase& c, std::mt19937_64& rng) {
    OnnxBuilder b(17);
    b.input("x", kF32, dims(c.x));
    if (c.weight_input) b.input("w", kF32, dims(c.w));
    else b.initializer("w", test::random_tensor(DType::f32, c.w, rng));
    std::vector<std::string> in{"x", "w"};
    if (c.bias) {
        b.initializer("b", test::random_tensor(DType::f32, {c.w[0]}, rng));
        in.push_back("b");
    }
    auto& conv = b.node("Conv", in, {"y"});
    test::set_attr(conv, "strides", c.strides);
    test::set_attr(conv, "pads", c.pads);
    test::set_attr(conv, "group", c.group);
    b.output("y");
    return b.bytes();
}

}  // namespace

TEST_CASE("patch-conv turns patch convolutions into a linear layer over the patches", "[cpu][passes]") {
    auto rng = test::make_rng();
    for (const bool bias : {true, false}) {
        INFO("bias " << bias);
        ConvCase c;
        c.bias = bias;
        const ir::Graph after = test::run_checked(test::prepared(conv_model(c, rng)), passes::patch_conv, rng);
        CHECK(ir::op_histogram(after) ==
              (bias ? "1 Add, 1 MatMul, 2 Reshape, 2 Transpose" : "1 MatMul, 2 Reshape, 2 Transpose"));
        for (const ir::Node& n : after.nodes) {
            if (n.op == ir::Op::MatMul) {
                CHECK(after.value(n.inputs[0]).shape == Shape({2, 3, 4, 3 * 4 * 2}));
                CHECK(after.value(n.inputs[1]).shape == Shape({24, 5}));
            }
            if (n.op == ir::Op::Add) CHECK(after.value(n.inputs[1]).shape == Shape{5});
        }
    }
    SECTION("a 1x1 convolution") {
        ConvCase c;
        c.w = {5, 3, 1, 1};
        c.strides = {1, 1};
        const ir::Graph after = test::run_checked(test::prepared(conv_model(c, rng)), passes::patch_conv, rng);
        CHECK(ir::count_ops(after, ir::Op::Conv) == 0);
    }
}

TEST_CASE("patch-conv leaves other convolutions alone", "[cpu][passes]") {
    auto rng = test::make_rng();
    ConvCase c;
    SECTION("overlapping windows") { c.strides = {2, 2}; }
    SECTION("padding") { c.pads = {0, 0, 1, 0}; }
    SECTION("groups") {
        c.x = {2, 4, 12, 8};
        c.w = {6, 2, 4, 2};
        c.group = 2;
    }
    SECTION("a size the patches do not divide") { c.x = {2, 3, 13, 8}; }
    SECTION("a weight that is no constant") { c.weight_input = true; }
    const ir::Graph g = test::prepared(conv_model(c, rng));
    const ir::Graph after = test::run_checked(g, passes::patch_conv, rng);
    CHECK(ir::to_text(after) == ir::to_text(g));
}
