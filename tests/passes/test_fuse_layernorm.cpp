// fuse-layernorm: the exported spellings of layer normalisation become one
// LayerNormalization; near-misses stay as they are; results are unchanged.
#include "onnx_builder.hpp"
#include "pass_check.hpp"
#include "test_util.hpp"

using namespace stof;
using test::OnnxBuilder;

namespace {

constexpr int32_t kF32 = onnx::TensorProto::FLOAT;

struct Spelling {
    bool mul_square = false;  // d·d instead of Pow(d, 2)
    std::string inv = "div";  // div: d / √v; recip: d · Reciprocal(√v); one: d · (1 / √v); pow: d · v^-0.5
    bool two_subs = false;    // x − μ emitted twice (TorchScript)
    bool scale = true, bias = true;
    bool eps_first = false;  // Add(eps, var)
    int opset = 17;          // 18: ReduceMean axes as an input
    int64_t mean_axis = -1, var_axis = -1;
    float eps = 1e-6f, exponent = 2.0f;
    bool d_is_output = false;  // x − μ is also a graph output
    Shape gamma_shape{16};
};

// x: [2, 5, 16] → out, spelled as `s` says.
std::string layernorm_model(const Spelling& s) {
    OnnxBuilder b(s.opset);
    b.input("x", kF32, {2, 5, 16});
    b.initializer("two", test::scalar_f32(s.exponent)).initializer("eps", test::scalar_f32(s.eps));
    b.initializer("one", test::scalar_f32(1.0f)).initializer("m_half", test::scalar_f32(-0.5f));
    b.initializer("gamma", test::iota_f32(s.gamma_shape)).initializer("beta", test::iota_f32({16}));
    auto mean = [&](const std::string& in, const std::string& out, int64_t axis) {
        if (s.opset >= 18) {
            b.initializer(out + "_axes", test::ints({axis}));
            b.node("ReduceMean", {in, out + "_axes"}, {out});
        } else {
            test::set_attr(b.node("ReduceMean", {in}, {out}), "axes", std::vector<int64_t>{axis});
        }
    };
    mean("x", "mu", s.mean_axis);
    b.node("Sub", {"x", "mu"}, {"d"});
    if (s.two_subs) b.node("Sub", {"x", "mu"}, {"d2"});
    const std::string dn = s.two_subs ? "d2" : "d";
    if (s.mul_square) b.node("Mul", {"d", "d"}, {"sq"});
    else b.node("Pow", {"d", "two"}, {"sq"});
    mean("sq", "var", s.var_axis);
    if (s.eps_first) b.node("Add", {"eps", "var"}, {"ve"});
    else b.node("Add", {"var", "eps"}, {"ve"});
    if (s.inv == "pow") {
        b.node("Pow", {"ve", "m_half"}, {"inv"});
    } else {
        b.node("Sqrt", {"ve"}, {"sd"});
        if (s.inv == "recip") b.node("Reciprocal", {"sd"}, {"inv"});
        if (s.inv == "one") b.node("Div", {"one", "sd"}, {"inv"});
    }
    if (s.inv == "div") b.node("Div", {dn, "sd"}, {"n"});
    else b.node("Mul", {"inv", dn}, {"n"});
    std::string out = "n";
    if (s.scale) {
        b.node("Mul", {out, "gamma"}, {"g"});
        out = "g";
    }
    if (s.bias) {
        b.node("Add", {"beta", out}, {"y"});
        out = "y";
    }
    b.node("Identity", {out}, {"out"});
    b.output("out");
    if (s.d_is_output) b.output("d");
    return b.bytes();
}

}  // namespace

TEST_CASE("fuse-layernorm fuses every exported spelling", "[cpu][passes]") {
    auto rng = test::make_rng();
    std::vector<Spelling> spellings;
    for (const std::string inv : {"div", "recip", "one", "pow"})
        for (int v = 0; v < 4; ++v) {
            Spelling s;
            s.inv = inv;
            s.mul_square = v & 1;
            s.two_subs = v & 2;
            s.eps_first = v == 3;
            s.opset = v == 1 ? 18 : 17;
            spellings.push_back(s);
        }
    Spelling plain;
    plain.scale = plain.bias = false;
    plain.mean_axis = plain.var_axis = 2;
    spellings.push_back(plain);
    Spelling scale_only;
    scale_only.bias = false;
    scale_only.gamma_shape = {1, 1, 16};
    spellings.push_back(scale_only);
    Spelling bias_only;
    bias_only.scale = false;
    spellings.push_back(bias_only);

    for (const Spelling& s : spellings) {
        INFO("inv " << s.inv << ", mul_square " << s.mul_square << ", two_subs " << s.two_subs << ", scale " << s.scale
                    << ", bias " << s.bias << ", opset " << s.opset);
        const ir::Graph g = test::prepared(layernorm_model(s));
        const ir::Graph after = test::run_checked(g, passes::fuse_layernorm, rng);
        CHECK(ir::op_histogram(after) == "1 Identity, 1 LayerNormalization");
        const ir::Node* ln = test::find_op(after, ir::Op::LayerNormalization);
        REQUIRE(ln);
        CHECK(ln->attrs.i("axis", 0) == -1);
        CHECK(ln->attrs.f("epsilon", 0) == static_cast<double>(1e-6f));
        REQUIRE(ln->inputs.size() == 3);
        const Tensor& scale = *after.value(ln->inputs[1]).data;
        const Tensor& bias = *after.value(ln->inputs[2]).data;
        CHECK(scale.shape == Shape{16});
        CHECK(scale.get_f64(3) == (s.scale ? 3.5 : 1.0));
        CHECK(bias.get_f64(3) == (s.bias ? 3.5 : 0.0));
    }
}

TEST_CASE("fuse-layernorm leaves near-misses alone", "[cpu][passes]") {
    auto rng = test::make_rng();
    auto unchanged = [&](const Spelling& s) {
        const ir::Graph g = test::prepared(layernorm_model(s));
        const ir::Graph after = test::run_checked(g, passes::fuse_layernorm, rng);
        CHECK(ir::op_histogram(after) == ir::op_histogram(g));
    };
    SECTION("mean over another axis") {
        Spelling s;
        s.mean_axis = 1;
        unchanged(s);
    }
    SECTION("variance over another axis") {
        Spelling s;
        s.var_axis = -2;
        unchanged(s);
    }
    SECTION("cube instead of square") {
        Spelling s;
        s.exponent = 3.0f;
        unchanged(s);
    }
    SECTION("x - mean read outside the pattern") {
        Spelling s;
        s.d_is_output = true;
        unchanged(s);
    }
    SECTION("a scale that is not a row vector stays a Mul") {
        Spelling s;
        s.gamma_shape = {5, 16};
        const ir::Graph g = test::prepared(layernorm_model(s));
        const ir::Graph after = test::run_checked(g, passes::fuse_layernorm, rng);
        CHECK(ir::op_histogram(after) == "1 Add, 1 Identity, 1 LayerNormalization, 1 Mul");
    }
}
