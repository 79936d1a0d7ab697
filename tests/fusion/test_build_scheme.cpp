// Fusion schemes: which nodes form each segment and which values are stored, with
// every decision taken (fused_scheme) and with none (initial_scheme), and what
// --dump-after partition prints.
#include "fusion/fusion_plan.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "pipeline.hpp"
#include "test_util.hpp"
#include "zoo_model.hpp"

#include <map>

using namespace stof;

namespace {

ir::Graph pipelined(const std::string& bytes) {
    ir::Graph g = import_onnx_bytes(bytes, "", "sample");
    run_pipeline(g, {});
    return g;
}

std::string ops_of(const ir::Graph& g, const fusion::Segment& s) {
    std::string out;
    for (int n : s.nodes) out += fmt::format("{}{}", out.empty() ? "" : "+", ir::op_name(g.nodes[static_cast<size_t>(n)].op));
    return out;
}

}  // namespace

TEST_CASE("fused scheme: GEMM epilogues, inlined chains, norm prologues and views", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    test::OnnxBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {2, 8, 32});
    b.initializer("w", test::random_tensor(DType::f32, {32, 32}, rng));
    b.initializer("bias", test::random_tensor(DType::f32, {32}, rng));
    b.initializer("scale", test::random_tensor(DType::f32, {32}, rng));
    b.initializer("shape", test::ints({16, 32}));
    b.node("MatMul", {"x", "w"}, {"h"}, "mm");
    b.node("Add", {"h", "bias"}, {"hb"}, "bias_add");
    b.node("Relu", {"hb"}, {"r"}, "relu");
    b.node("Add", {"r", "x"}, {"res"}, "residual");
    b.node("LayerNormalization", {"res", "scale"}, {"n"}, "ln");
    b.node("Mul", {"n", "n"}, {"sq"}, "square");
    b.node("Sqrt", {"sq"}, {"root"}, "root");
    b.node("Reshape", {"root", "shape"}, {"y"}, "flat");
    b.output("y");
    b.output("n");
    const ir::Graph g = pipelined(b.bytes());
    const fusion::FusionPlan p = fusion::fused_scheme(g);

    std::vector<std::string> kinds, ops;
    for (const fusion::Segment& s : p.segments) {
        kinds.push_back(fusion::segment_kind_name(s.kind));
        ops.push_back(ops_of(g, s));
    }
    // The residual Add is the LayerNorm's prologue, the LayerNorm output is a graph output
    // and so stored, and Mul and Sqrt are inlined into the Reshape that the output is.
    CHECK(kinds == std::vector<std::string>{"gemm", "rownorm", "elementwise"});
    CHECK(ops == std::vector<std::string>{"MatMul+Add+Relu", "LayerNormalization+Add", "Mul+Sqrt+Reshape"});
    CHECK(p.inlined[static_cast<size_t>(g.find_value("res"))]);
    CHECK(p.inlined[static_cast<size_t>(g.find_value("sq"))]);
    CHECK(p.inlined[static_cast<size_t>(g.find_value("root"))]);
    CHECK(!p.stored[static_cast<size_t>(g.find_value("hb"))]);
    CHECK(p.stored[static_cast<size_t>(g.find_value("r"))]);
    CHECK(p.stored[static_cast<size_t>(g.find_value("n"))]);

    const std::string text = fusion::to_text(g, p);
    INFO(text);
    CHECK(text.find("// partition: 3 segments, 3 steps") != std::string::npos);
    CHECK(text.find("seg 0 gemm @0: MatMul 'mm' + Add 'bias_add' + Relu 'relu' -> r") != std::string::npos);
    CHECK(text.find("seg 1 rownorm @4: LayerNormalization 'ln' + Add 'residual' -> n") != std::string::npos);
    CHECK(text.find("seg 2 elementwise @7: Mul 'square' + Sqrt 'root' + Reshape 'flat' -> y") != std::string::npos);

    // A reshape of a stored value that a GEMM reads is a view: no step.
    test::OnnxBuilder v;
    v.input("x", onnx::TensorProto::FLOAT, {2, 8});
    v.initializer("shape", test::ints({16, 1}));
    v.initializer("w", test::random_tensor(DType::f32, {1, 4}, rng));
    v.node("Softmax", {"x"}, {"s"});
    v.node("Reshape", {"s", "shape"}, {"col"});
    v.node("MatMul", {"col", "w"}, {"y"});
    v.output("y");
    const ir::Graph vg = pipelined(v.bytes());
    const fusion::FusionPlan vp = fusion::fused_scheme(vg);
    REQUIRE(vp.segments.size() == 3);
    CHECK(vp.segments[1].kind == fusion::SegmentKind::view);
    CHECK(fusion::to_text(vg, vp).find("// partition: 3 segments, 2 steps") != std::string::npos);
    // The same reshape as a graph output is a view too: the Softmax writes the output's tensor.
    v.output("col");
    const ir::Graph og = pipelined(v.bytes());
    const fusion::FusionPlan op = fusion::fused_scheme(og);
    REQUIRE(op.segments.size() == 3);
    CHECK(op.segments[1].kind == fusion::SegmentKind::view);
    // Unless the Softmax's output is read by anything else (here: also an output itself);
    // then a kernel of its own writes the reshape.
    v.output("s");
    const ir::Graph sg = pipelined(v.bytes());
    const fusion::FusionPlan sp = fusion::fused_scheme(sg);
    REQUIRE(sp.segments.size() == 3);
    CHECK(sp.segments[1].kind == fusion::SegmentKind::elementwise);
}

TEST_CASE("fused scheme: an erf-GELU and a value read twice are not folded into the GEMM", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    for (const bool twice : {false, true}) {
        test::OnnxBuilder b(20);
        b.input("x", onnx::TensorProto::FLOAT, {4, 16});
        b.initializer("w", test::random_tensor(DType::f32, {16, 16}, rng));
        b.node("MatMul", {"x", "w"}, {"h"});
        auto& gelu = b.node(twice ? "Relu" : "Gelu", {"h"}, {"y"});
        if (!twice) test::set_attr(gelu, "approximate", std::string("none"));
        if (twice) {
            b.node("Add", {"h", "y"}, {"z"});
            b.output("z");
        } else {
            b.output("y");
        }
        ir::Graph g = import_onnx_bytes(b.bytes(), "", "sample");
        run_pipeline(g, {});
        const fusion::FusionPlan p = fusion::fused_scheme(g);
        REQUIRE(p.segments.size() == 2);
        CHECK(p.segments[0].kind == fusion::SegmentKind::gemm);
        CHECK(p.segments[0].nodes.size() == 1);
        CHECK(p.segments[1].kind == fusion::SegmentKind::elementwise);
    }
}

TEST_CASE("initial and fused schemes: steps per layer of the zoo models", "[cpu][fusion]") {
    // BERT: QKV, attention, out-projection + residual, LN, FFN-in, GELU, FFN-out + residual, LN.
    // GPT-2: LN, QKV, attention, projection + residual, LN, FFN-in + tanh-GELU, FFN-out + residual.
    // LLaMA: RMSNorm, QKV, rotary of q and k (one Rotary over the merged projection, fuse-rotary),
    // attention, o + residual, RMSNorm, gate|up, SwiGLU, down + residual. T5: RMSNorm, QKV,
    // attention, o + residual, RMSNorm, wi + ReLU, wo + residual.
    // Plan steps (segments that are not views) from one attention layer's attention
    // to the next one's: one layer's steps.
    // The initial scheme: GEMMs with a bias (and ReLU / tanh-GELU) over the merged Q/K/V
    // (and gate/up) projections, single-use inlining: BERT/ViT 10 (QKV, attention, out,
    // residual, LN, FFN-in, GELU, FFN-out, residual, LN), GPT-2 9, LLaMA 12, T5 9.
    const std::map<std::string, std::pair<int, int>> expected = {{"bert-torchscript", {10, 8}},
                                                                 {"gpt2-torchscript", {9, 7}},
                                                                 {"llama-torchscript", {12, 9}},
                                                                 {"t5-torchscript", {9, 7}},
                                                                 {"vit-torchscript", {10, 8}}};
    for (const auto& [name, counts] : expected)
        for (const bool initial : {true, false}) {
            INFO(name << (initial ? " initial" : " fused"));
            const int per_layer = initial ? counts.first : counts.second;
            const ir::Graph g = test::zoo_graph(name, Precision::fp16);
            std::map<int, int> steps_by_layer;
            const fusion::FusionPlan p = initial
                                             ? fusion::initial_scheme(g)
                                             : fusion::fused_scheme(g);  // layer (from the SparseAttention before it) → steps
            int layer = -1;
            for (const fusion::Segment& s : p.segments) {
                if (s.kind == fusion::SegmentKind::attention)
                    layer = static_cast<int>(g.nodes[static_cast<size_t>(s.nodes[0])].attrs.i("layer", -1));
                if (s.kind == fusion::SegmentKind::view) continue;
                if (layer >= 0) ++steps_by_layer[layer];
            }
            REQUIRE(steps_by_layer.size() == 2);
            CHECK(steps_by_layer[0] == per_layer);
        }
}

TEST_CASE("fused scheme: what must not fuse", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    SECTION("a constant that is not a row vector is neither a bias nor a residual") {
        test::OnnxBuilder b;
        b.input("x", onnx::TensorProto::FLOAT, {4, 16});
        b.initializer("w", test::random_tensor(DType::f32, {16, 16}, rng));
        b.initializer("c", test::random_tensor(DType::f32, {4, 16}, rng));
        b.node("MatMul", {"x", "w"}, {"h"});
        b.node("Add", {"h", "c"}, {"y"});
        b.output("y");
        const ir::Graph g = pipelined(b.bytes());
        const fusion::FusionPlan p = fusion::fused_scheme(g);
        REQUIRE(p.segments.size() == 2);
        CHECK(p.segments[0].nodes.size() == 1);
        CHECK(p.segments[1].kind == fusion::SegmentKind::elementwise);
    }
    SECTION("a residual computed after the GEMM is not its C") {
        test::OnnxBuilder b;
        b.input("x", onnx::TensorProto::FLOAT, {4, 16});
        b.initializer("w", test::random_tensor(DType::f32, {16, 16}, rng));
        b.node("MatMul", {"x", "w"}, {"h"});
        b.node("Softmax", {"x"}, {"late"});
        b.node("Add", {"h", "late"}, {"y"});
        b.output("y");
        const ir::Graph g = pipelined(b.bytes());
        const fusion::FusionPlan p = fusion::fused_scheme(g);
        for (const fusion::Segment& s : p.segments)
            if (s.kind == fusion::SegmentKind::gemm) CHECK(s.nodes.size() == 1);
    }
    SECTION("a sum read before the norm stays a kernel of its own; read after it, the norm stores it") {
        for (const bool early : {true, false}) {
            test::OnnxBuilder b;
            b.input("x", onnx::TensorProto::FLOAT, {4, 16});
            b.input("r", onnx::TensorProto::FLOAT, {4, 16});
            b.initializer("scale", test::random_tensor(DType::f32, {16}, rng));
            b.node("Add", {"x", "r"}, {"sum"});
            if (early) b.node("ReduceSum", {"sum"}, {"other"});
            b.node("LayerNormalization", {"sum", "scale"}, {"n"});
            if (!early) b.node("ReduceSum", {"sum"}, {"other"});
            b.output("n");
            b.output("other");
            const ir::Graph g = pipelined(b.bytes());
            const fusion::FusionPlan p = fusion::fused_scheme(g);
            INFO(fusion::to_text(g, p));
            std::vector<std::string> kinds;
            for (const fusion::Segment& s : p.segments) kinds.push_back(fusion::segment_kind_name(s.kind));
            if (early) {
                CHECK(kinds == std::vector<std::string>{"elementwise", "row", "rownorm"});
            } else {
                CHECK(kinds == std::vector<std::string>{"rownorm", "row"});
                CHECK(p.segments[0].outputs.size() == 2);
            }
        }
    }
    SECTION("a value read by two kernels is stored once, not recomputed by both") {
        test::OnnxBuilder b;
        b.input("x", onnx::TensorProto::FLOAT, {4, 16});
        b.node("Exp", {"x"}, {"e"});
        b.node("Softmax", {"e"}, {"s"});
        b.node("Mul", {"e", "s"}, {"y"});
        b.output("y");
        const ir::Graph g = pipelined(b.bytes());
        const fusion::FusionPlan p = fusion::fused_scheme(g);
        CHECK(p.stored[static_cast<size_t>(g.find_value("e"))]);
        CHECK(!p.inlined[static_cast<size_t>(g.find_value("e"))]);
    }
}

TEST_CASE("fused scheme: values read several times inside one kernel are inlined", "[cpu][fusion]") {
    // SiLU: x · sigmoid(x), x = a + b read twice by the same kernel.
    test::OnnxBuilder b;
    b.input("a", onnx::TensorProto::FLOAT, {4, 16});
    b.input("b", onnx::TensorProto::FLOAT, {4, 16});
    b.node("Add", {"a", "b"}, {"x"});
    b.node("Sigmoid", {"x"}, {"s"});
    b.node("Mul", {"x", "s"}, {"y"});
    b.output("y");
    const ir::Graph g = pipelined(b.bytes());
    const fusion::FusionPlan p = fusion::fused_scheme(g);
    REQUIRE(p.segments.size() == 1);
    CHECK(p.segments[0].nodes.size() == 3);
    CHECK(p.inlined[static_cast<size_t>(g.find_value("x"))]);
}

TEST_CASE("fused scheme: sibling kernels reading one value become one kernel with two outputs", "[cpu][fusion]") {
    test::OnnxBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {4, 16});
    b.node("Exp", {"x"}, {"e"});
    b.node("Neg", {"x"}, {"n"});
    b.output("e");
    b.output("n");
    const ir::Graph g = pipelined(b.bytes());
    const fusion::FusionPlan p = fusion::fused_scheme(g);
    REQUIRE(p.segments.size() == 1);
    CHECK(p.segments[0].outputs.size() == 2);
}
