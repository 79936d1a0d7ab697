// fuse-rmsnorm: LLaMA / T5 spellings of RMS normalisation (with the exporters'
// fp32 Cast wrappers) become one RMSNorm; near-misses stay; results are unchanged.
#include "onnx_builder.hpp"
#include "pass_check.hpp"
#include "test_util.hpp"

using namespace stof;
using test::OnnxBuilder;

namespace {

constexpr int32_t kF32 = onnx::TensorProto::FLOAT, kF16 = onnx::TensorProto::FLOAT16;

struct Spelling {
    std::string name;
    bool f16 = false;           // x is fp16 (with cast_in); so is w after cast_out
    bool cast_in = false;       // x' = Cast(x, float) feeds the pattern
    bool residual = false;      // x' is also read outside (LLaMA TorchScript's residual Add)
    bool t5_square = false;     // the square reads Cast(x), the scaling x itself
    bool cast_out = false;      // Cast(y, type of x) before the weight
    std::string inv = "recip";  // recip, one (1 / √v), div (x / √v), pow (v^-0.5)
    bool weight = true;
    int64_t axis = -1;
    bool eps_input = false;      // eps is a graph input
    bool var_is_output = false;  // the mean of squares is also a graph output
    bool square_other = false;   // the square reads another tensor z
};

// x: [2, 5, 16] → out.
std::string rmsnorm_model(const Spelling& s) {
    OnnxBuilder b(18);
    const int32_t xt = s.f16 ? kF16 : kF32;
    b.input("x", xt, {2, 5, 16});
    if (s.square_other) b.input("z", kF32, {2, 5, 16});
    if (s.eps_input) b.input("eps", kF32, {});
    else b.initializer("eps", test::scalar_f32(1e-6f));
    b.initializer("two", test::scalar_f32(2.0f)).initializer("one", test::scalar_f32(1.0f));
    b.initializer("m_half", test::scalar_f32(-0.5f)).initializer("axes", test::ints({s.axis}));
    b.initializer("w", s.f16 && s.cast_out ? cast(test::iota_f32({16}), DType::f16) : test::iota_f32({16}));
    std::string x = "x";
    if (s.cast_in) {
        test::set_attr(b.node("Cast", {"x"}, {"xf"}), "to", int64_t{kF32});
        x = "xf";
    }
    std::string sq_in = s.square_other ? "z" : x;
    if (s.t5_square) {
        test::set_attr(b.node("Cast", {x}, {"xs"}), "to", int64_t{kF32});
        sq_in = "xs";
    }
    b.node("Pow", {sq_in, "two"}, {"sq"});
    b.node("ReduceMean", {"sq", "axes"}, {"var"});
    b.node("Add", {"var", "eps"}, {"ve"});
    if (s.inv == "pow") {
        b.node("Pow", {"ve", "m_half"}, {"inv"});
    } else {
        b.node("Sqrt", {"ve"}, {"sd"});
        if (s.inv == "recip") b.node("Reciprocal", {"sd"}, {"inv"});
        if (s.inv == "one") b.node("Div", {"one", "sd"}, {"inv"});
    }
    if (s.inv == "div") b.node("Div", {x, "sd"}, {"n"});
    else b.node("Mul", {x, "inv"}, {"n"});
    std::string out = "n";
    if (s.cast_out) {
        test::set_attr(b.node("Cast", {out}, {"nc"}), "to", int64_t{xt});
        out = "nc";
    }
    if (s.weight) {
        b.node("Mul", {"w", out}, {"y"});
        out = "y";
    }
    b.node("Identity", {out}, {"out"});
    b.output("out", s.cast_out || !s.cast_in ? xt : kF32);
    if (s.residual) {
        b.node("Add", {x, x}, {"res"});
        b.output("res");
    }
    if (s.var_is_output) b.output("var");
    return b.bytes();
}

}  // namespace

TEST_CASE("fuse-rmsnorm fuses the LLaMA and T5 spellings", "[cpu][passes]") {
    auto rng = test::make_rng();
    std::vector<Spelling> spellings(10);
    spellings[0].name = "dynamo (x * Reciprocal(Sqrt(mean + eps)) * w)";
    spellings[1].name = "torchscript (Cast, Div(1, Sqrt), Cast, w)";
    spellings[1].cast_in = spellings[1].cast_out = true;
    spellings[1].inv = "one";
    spellings[2].name = "T5 (square of Cast(x))";
    spellings[2].t5_square = true;
    spellings[3].name = "Div(x, Sqrt)";
    spellings[3].inv = "div";
    spellings[4].name = "Pow(v, -0.5), no weight";
    spellings[4].inv = "pow";
    spellings[4].weight = false;
    spellings[5].name = "fp16 with fp32 statistics";
    spellings[5].f16 = spellings[5].cast_in = spellings[5].cast_out = true;
    spellings[6].name = "T5 square behind an fp32 Cast";
    spellings[6].t5_square = spellings[6].cast_in = true;
    spellings[7].name = "positive last axis";
    spellings[7].axis = 2;
    spellings[8].name = "fp16 input, fp32 output (the Cast stays)";
    spellings[8].f16 = spellings[8].cast_in = true;
    spellings[9].name = "the fp32 Cast is also read outside (it stays)";
    spellings[9].cast_in = spellings[9].residual = true;
    for (const Spelling& s : spellings) {
        INFO(s.name);
        const ir::Graph g = test::prepared(rmsnorm_model(s));
        const ir::Graph after = test::run_checked(g, passes::fuse_rmsnorm, rng, s.f16 ? 1e-2 : 1e-4, s.f16 ? 1e-2 : 1e-5);
        const ir::Node* rms = test::find_op(after, ir::Op::RMSNorm);
        REQUIRE(rms);
        CHECK(rms->attrs.i("axis", 0) == -1);
        CHECK(rms->attrs.f("epsilon", 0) == static_cast<double>(1e-6f));
        const ir::Value& in = after.value(rms->inputs[0]);
        const Tensor& scale = *after.value(rms->inputs[1]).data;
        CHECK(scale.dtype == in.dtype);
        CHECK(scale.get_f64(3) == (s.weight ? 3.5 : 1.0));
        if (s.name.find("Cast stays") != std::string::npos) {
            CHECK(ir::op_histogram(after) == "1 Cast, 1 Identity, 1 RMSNorm");
            CHECK(in.dtype == DType::f32);
        } else if (s.residual) {
            CHECK(ir::op_histogram(after) == "1 Add, 1 Cast, 1 Identity, 1 RMSNorm");
            CHECK(in.name == "x");
        } else {
            CHECK(ir::op_histogram(after) == "1 Identity, 1 RMSNorm");
            CHECK(in.name == "x");
        }
    }
}

TEST_CASE("fuse-rmsnorm leaves near-misses alone", "[cpu][passes]") {
    auto rng = test::make_rng();
    auto unchanged = [&](const Spelling& s) {
        const ir::Graph g = test::prepared(rmsnorm_model(s));
        const ir::Graph after = test::run_checked(g, passes::fuse_rmsnorm, rng);
        CHECK(ir::op_histogram(after) == ir::op_histogram(g));
    };
    Spelling s;
    SECTION("epsilon is no constant") { s.eps_input = true; }
    SECTION("mean over another axis") { s.axis = 1; }
    SECTION("the mean of squares is read outside") { s.var_is_output = true; }
    SECTION("the square of another tensor") { s.square_other = true; }
    unchanged(s);
}
