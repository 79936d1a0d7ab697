// A value read at another precision by several consumers is converted once:
// at fp16/bf16 a float model input feeding two MatMuls (the cross-attention
// K/V projections of encoder-decoders) or read twice by self-attention compiles
// to one conversion both read, and every plan tensor name stays unique.
#include "catch.hpp"
#include "compile.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "test_util.hpp"

#include <set>

using namespace stof;

namespace {

plan::Plan compile(const test::OnnxBuilder& b, Precision precision) {
    ir::Graph g = import_onnx_bytes(b.bytes(), "", "convert_once");
    CompileOptions opt;
    opt.lower.precision = precision;
    opt.lower.arch = "sm_90";
    opt.lower.jobs = 1;
    opt.lower.cache_dir = test::binary_dir() + "/test_tmp/convert_once_cache";
    opt.lower.model = "convert_once.onnx";
    return compile_model(g, opt);
}

// Steps converting the plan tensor `name` (emit_convert labels them with their source).
std::vector<const plan::Step*> conversions_of(const plan::Plan& p, const std::string& name) {
    std::vector<const plan::Step*> out;
    for (const plan::Step& s : p.steps)
        if (s.kind == plan::StepKind::launch && s.nodes == name) out.push_back(&s);
    return out;
}

void check_names_unique(const plan::Plan& p) {
    std::set<std::string> names;
    for (const plan::TensorDesc& t : p.tensors) {
        INFO("tensor " << t.name);
        CHECK(names.insert(t.name).second);
    }
    CHECK_NOTHROW(plan::validate(p));
}

}  // namespace

TEST_CASE("a float input feeding two MatMuls is converted once at 16-bit precision", "[cpu][codegen]") {
    // x [2, 64, 32] read by MatMul(x, w1) and MatMul(x, w2): with two [32, 32] weights
    // (one merged GEMM after merge-sibling-linear) and with a batched [2, 32, 32] w2
    // (two GEMMs reading x).
    std::mt19937_64 rng = test::make_rng();
    for (const bool batched : {false, true}) {
        test::OnnxBuilder b;
        b.input("x", onnx::TensorProto::FLOAT, {2, 64, 32});
        b.initializer("w1", test::random_tensor(DType::f32, {32, 32}, rng));
        b.initializer("w2", test::random_tensor(DType::f32, batched ? Shape{2, 32, 32} : Shape{32, 32}, rng));
        b.node("MatMul", {"x", "w1"}, {"k"});
        b.node("MatMul", {"x", "w2"}, {"v"});
        b.node("Add", {"k", "v"}, {"y"});
        b.output("y");
        for (const Precision precision : {Precision::fp16, Precision::bf16}) {
            INFO((batched ? "batched w2, " : "two [32, 32] weights, ") << precision_name(precision));
            const plan::Plan p = compile(b, precision);
            check_names_unique(p);
            REQUIRE(conversions_of(p, "x").size() == 1);
            std::vector<int32_t> a_operands;
            for (const plan::Step& s : p.steps)
                if (s.kind == plan::StepKind::gemm) a_operands.push_back(s.gemm.a);
            REQUIRE(a_operands.size() == (batched ? 2u : 1u));
            CHECK(a_operands.front() == a_operands.back());
            CHECK(p.tensors[static_cast<size_t>(a_operands[0])].dtype == float_dtype(precision));
        }
    }
}

TEST_CASE("self-attention over a float input reads one conversion of it", "[cpu][codegen]") {
    // x -> MatMul(x, x^T) -> Softmax -> MatMul(p, x): x is read by both MatMuls.
    test::OnnxBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {2, 64, 32});
    test::set_attr(b.node("Transpose", {"x"}, {"xt"}), "perm", std::vector<int64_t>{0, 2, 1});
    b.node("MatMul", {"x", "xt"}, {"s"});
    test::set_attr(b.node("Softmax", {"s"}, {"p"}), "axis", int64_t{-1});
    b.node("MatMul", {"p", "x"}, {"y"});
    b.output("y");
    const plan::Plan p = compile(b, Precision::fp16);
    check_names_unique(p);
    CHECK(conversions_of(p, "x").size() == 1);
}

TEST_CASE("a derived plan tensor never takes the name of a model value", "[cpu][codegen]") {
    // The model has its own stored value "x_f16" (an output); the conversion of x gets another name.
    std::mt19937_64 rng = test::make_rng();
    test::OnnxBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {4, 32});
    b.initializer("w", test::random_tensor(DType::f32, {32, 32}, rng));
    b.node("Relu", {"x"}, {"x_f16"});
    b.node("MatMul", {"x", "w"}, {"h"});
    b.node("Add", {"h", "x_f16"}, {"y"});
    b.output("y");
    b.output("x_f16");
    const plan::Plan p = compile(b, Precision::fp16);
    check_names_unique(p);
    REQUIRE(conversions_of(p, "x").size() == 1);
}
