#include "interp/interpreter.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "pipeline.hpp"
#include "test_util.hpp"

#include <optional>

using namespace stof;
using test::OnnxBuilder;

namespace {
constexpr int32_t kF32 = onnx::TensorProto::FLOAT;

// x: [batch, seq, 8] → Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1, 4])) → [batch, seq*2, 4],
// plus a dead branch. The shape subgraph is what exporters emit around head splits.
std::string shape_subgraph_model() {
    OnnxBuilder b;
    b.input("x", kF32, {std::string("batch"), std::string("seq"), int64_t{8}});
    b.initializer("zero", test::ints({0})).initializer("tail", test::ints({-1, 4})).initializer("axes0", test::ints({0}));
    b.node("Shape", {"x"}, {"shape"}, "shape");
    b.node("Gather", {"shape", "zero"}, {"batch1"}, "gather");
    b.node("Concat", {"batch1", "tail"}, {"target"}, "concat");
    test::set_attr(b.model().mutable_graph()->mutable_node(2)[0], "axis", int64_t{0});
    b.node("Reshape", {"x", "target"}, {"y"}, "reshape");
    b.node("Neg", {"x"}, {"unused"}, "dead");
    b.output("y");
    return b.bytes();
}
}  // namespace

TEST_CASE("constant folding removes the shape subgraph and keeps results", "[cpu][passes]") {
    ir::Graph g = import_onnx_bytes(shape_subgraph_model(), "", "m");
    CHECK(g.nodes.size() == 5);
    auto rng = test::make_rng();
    const Tensor x = test::random_tensor(DType::f32, {2, 3, 8}, rng);
    PipelineOptions opt;
    opt.pass.input_shapes["x"] = {2, 3, 8};
    std::vector<std::string> seen;
    std::optional<Tensor> reference;
    opt.after_pass = [&](const PassInfo& p, const ir::Graph& cur) {
        seen.push_back(p.name);
        cur.verify();
        if (std::string(p.name) == "bind-inputs") return;
        const Tensor y = interpret(cur, {{"x", x}}).at("y");
        if (!reference) reference = y;
        CHECK(y.bytes == reference->bytes);  // every pass leaves the result bit-identical
    };
    run_pipeline(g, opt);
    CHECK(seen == std::vector<std::string>{"bind-inputs", "infer-shapes", "fold-constants", "fuse-layernorm", "fuse-rmsnorm",
                                           "fuse-gelu", "patch-conv", "fuse-linear", "merge-sibling-linear", "fuse-rotary",
                                           "fuse-attention", "decompose-attention", "eliminate-dead-code"});
    REQUIRE(g.nodes.size() == 1);
    CHECK(g.nodes[0].op == ir::Op::Reshape);
    CHECK(ir::count_ops(g, ir::Op::Shape) == 0);
    const ir::Value& out = g.value(g.outputs[0]);
    CHECK(out.shape == Shape{2, 6, 4});
    CHECK(reference->bytes == x.bytes);  // a reshape moves no bytes
}

TEST_CASE("symbolic inputs need --shape naming an input or a symbolic dimension", "[cpu][passes]") {
    ir::Graph g = import_onnx_bytes(shape_subgraph_model(), "", "m");
    test::require_error([&] { run_pipeline(g, {}); },
                        "input 'x' has shape [batch, seq, 8]; give a size to each symbolic dimension (batch, seq), e.g. "
                        "--shape batch=1 --shape seq=128, or the whole shape, e.g. --shape x=1x128x8");
    PipelineOptions bad;
    bad.pass.input_shapes["y"] = {1};
    test::require_error([&] { run_pipeline(g, bad); },
                        "'y', which is neither a model input (inputs: x) nor a symbolic dimension");
    PipelineOptions half;
    half.pass.input_shapes["batch"] = {2};
    test::require_error([&] { run_pipeline(g, half); }, "(seq), e.g. --shape seq=128,");
    PipelineOptions by_dim;
    by_dim.pass.input_shapes["batch"] = {2};
    by_dim.pass.input_shapes["seq"] = {3};
    ir::Graph named = g;
    run_pipeline(named, by_dim);
    CHECK(named.value(named.inputs[0]).shape == Shape({2, 3, 8}));
    PipelineOptions multi;
    multi.pass.input_shapes["seq"] = {2, 3};
    test::require_error([&] { run_pipeline(g, multi); }, "a symbolic dimension takes one positive size");
    PipelineOptions wrong_rank;
    wrong_rank.pass.input_shapes["x"] = {2, 3};
    test::require_error([&] { run_pipeline(g, wrong_rank); }, "declares rank 3");
    PipelineOptions fixed;
    fixed.pass.input_shapes["x"] = {2, 3, 9};
    test::require_error([&] { run_pipeline(g, fixed); }, "dimension 2 is fixed to 8");
    PipelineOptions dump;
    dump.pass.input_shapes["x"] = {2, 3, 8};
    dump.dump_after = "no-such-pass";
    test::require_error([&] { run_pipeline(g, dump); }, "no such pass");
}

TEST_CASE("a reshape target computed from run-time data is reported", "[cpu][passes]") {
    OnnxBuilder b;
    b.input("x", kF32, {4}).input("dims", onnx::TensorProto::INT64, {2});
    b.node("Reshape", {"x", "dims"}, {"y"}, "runtime_reshape");
    b.output("y");
    ir::Graph g = import_onnx_bytes(b.bytes(), "", "m");
    test::require_error([&] { run_pipeline(g, {}); },
                        "Reshape node 'runtime_reshape': the target shape (input 1) is computed at run time");
}

TEST_CASE("shape inference reports invalid models by node", "[cpu][passes]") {
    OnnxBuilder b;
    b.input("a", kF32, {2, 3}).input("b", kF32, {4, 5});
    b.node("MatMul", {"a", "b"}, {"y"}, "mm");
    b.output("y");
    ir::Graph g = import_onnx_bytes(b.bytes(), "", "m");
    test::require_error([&] { run_pipeline(g, {}); }, "MatMul node 'mm': inner dimensions differ ([2,3] and [4,5])");

    OnnxBuilder c;
    c.input("a", kF32, {2, 3}).input("b", kF32, {4});
    c.node("Add", {"a", "b"}, {"y"}, "add");
    c.output("y");
    ir::Graph h = import_onnx_bytes(c.bytes(), "", "m");
    test::require_error([&] { run_pipeline(h, {}); }, "Add node 'add': shapes cannot be broadcast together ([2,3] and [4])");
}

TEST_CASE("a Transpose of a constant folds past fold_limit; other ops of that size stay run-time work", "[cpu][passes]") {
    auto rng = test::make_rng();
    const Tensor w = test::random_tensor(DType::f32, {12, 20}, rng);  // 240 elements
    OnnxBuilder b;
    b.input("x", kF32, {int64_t{12}, int64_t{3}});
    b.initializer("w", w);
    b.node("Transpose", {"w"}, {"wt"}, "transpose");
    b.node("Neg", {"w"}, {"wn"}, "neg");
    b.node("MatMul", {"wt", "x"}, {"y"}, "matmul");
    b.output("y").output("wn");
    ir::Graph g = import_onnx_bytes(b.bytes(), "", "m");
    PassOptions opt;
    opt.fold_limit = 64;
    passes::bind_inputs(g, opt);
    passes::infer_shapes(g, opt);
    const ir::Value& wt = g.value(g.find_value("wt"));
    REQUIRE(wt.data);
    for (int64_t i = 0; i < 12; ++i)
        for (int64_t j = 0; j < 20; ++j) CHECK(wt.data->get_f64(j * 12 + i) == w.get_f64(i * 20 + j));
    CHECK(!g.value(g.find_value("wn")).data);
    opt.transpose_fold_limit = 64;
    passes::infer_shapes(g, opt);
    CHECK(!g.value(g.find_value("wt")).data);
}
