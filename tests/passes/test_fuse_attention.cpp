// fuse-attention: every model in models/ ends with one SparseAttention per layer
// and no Softmax, with unchanged reference outputs; near-misses stay unfused;
// --mask is intersected with the model's own mask.
#include "interp/interpreter.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "pipeline.hpp"
#include "stof/compare.hpp"
#include "stof/npy.hpp"
#include "test_util.hpp"

#include <filesystem>

using namespace stof;
namespace fs = std::filesystem;

namespace {

int count(const ir::Graph& g, ir::Op op) {
    int n = 0;
    for (const ir::Node& x : g.nodes) n += x.op == op;
    return n;
}

struct Model {
    ir::Graph g;
    TensorMap inputs;
};

Model load(const fs::path& dir, const std::vector<std::string>& masks = {}) {
    Model m{import_onnx_file((dir / "model.onnx").string()), {}};
    PipelineOptions opt;
    for (const auto& f : fs::directory_iterator(dir / "inputs")) {
        Tensor t = read_npy(f.path().string());
        opt.pass.input_shapes[f.path().stem().string()] = t.shape;
        m.inputs[f.path().stem().string()] = std::move(t);
    }
    opt.pass.masks = masks;
    run_pipeline(m.g, opt);
    m.g.verify();
    return m;
}

const ir::Node& attention(const ir::Graph& g, int layer) {
    for (const ir::Node& n : g.nodes)
        if (n.op == ir::Op::SparseAttention && n.attrs.i("layer", -1) == layer) return n;
    FAIL("no attention layer " << layer);
    throw;
}

// Scores [1,1,S,S] from x [1,1,S,8] for the negative cases.
test::OnnxBuilder scores_model(int64_t softmax_axis) {
    test::OnnxBuilder b;
    b.input("q", onnx::TensorProto::FLOAT, {1, 1, 16, 8}).input("kt", onnx::TensorProto::FLOAT, {1, 1, 8, 16});
    b.input("v", onnx::TensorProto::FLOAT, {1, 1, 16, 8});
    b.node("MatMul", {"q", "kt"}, {"s"});
    test::set_attr(b.node("Softmax", {"s"}, {"p"}), "axis", softmax_axis);
    b.node("MatMul", {"p", "v"}, {"o"});
    b.output("o");
    return b;
}

}  // namespace

TEST_CASE("every zoo model fuses each attention layer and keeps its outputs", "[cpu][passes][attention]") {
    int models = 0;
    for (const auto& d : fs::directory_iterator(test::source_dir() + "/models")) {
        if (!fs::exists(d.path() / "model.onnx")) continue;
        INFO(d.path().filename().string());
        Model m = load(d.path());
        CHECK(count(m.g, ir::Op::SparseAttention) == 2);
        CHECK(count(m.g, ir::Op::Softmax) == 0);
        const TensorMap out = interpret(m.g, m.inputs);
        const Tensor want = read_npy((d.path() / "expected" / "last_hidden_state.npy").string());
        const Comparison c = compare(out.at("last_hidden_state"), want, 1e-3, 1e-4);
        CHECK(c.ok);
        ++models;
    }
    CHECK(models >= 10);
}

TEST_CASE("the model's own mask is classified: causal for GPT-2, padding for BERT, bias for T5", "[cpu][passes][attention]") {
    const fs::path zoo = test::source_dir() + "/models";
    const Model gpt2 = load(zoo / "gpt2-torchscript");
    const ir::Node& a = attention(gpt2.g, 0);
    REQUIRE(a.inputs.size() == 6);
    const Tensor& keep = *gpt2.g.value(a.inputs[3]).data;
    REQUIRE(keep.shape == Shape({1, 1, 128, 128}));
    for (int64_t i = 0; i < 128; i += 7)
        for (int64_t j = 0; j < 128; j += 5) CHECK((keep.get_i64(i * 128 + j) != 0) == (j <= i));
    CHECK(gpt2.g.value(a.inputs[5]).name == "attention_mask");
    const Model bert = load(zoo / "bert-dynamo");
    const ir::Node& b = attention(bert.g, 1);
    REQUIRE(b.inputs.size() == 6);
    CHECK(b.inputs[3] == ir::kNoValue);
    CHECK(b.inputs[4] == ir::kNoValue);
    const Model t5 = load(zoo / "t5-torchscript");
    const ir::Node& t = attention(t5.g, 0);
    REQUIRE(t.inputs.size() == 6);
    CHECK(t.inputs[4] != ir::kNoValue);
    CHECK(t.attrs.f("scale", 0) == 1.0);
    const Model vit = load(zoo / "vit-dynamo");
    CHECK(attention(vit.g, 0).inputs.size() == 3);
}

TEST_CASE("a mask option is intersected with the model's mask, per layer range", "[cpu][passes][attention]") {
    const fs::path dir = fs::path(test::source_dir()) / "models" / "gpt2-dynamo";
    const Model m = load(dir, {"sliding:4", "1=global:2"});
    const Tensor& k0 = *m.g.value(attention(m.g, 0).inputs[3]).data;
    const Tensor& k1 = *m.g.value(attention(m.g, 1).inputs[3]).data;
    for (int64_t i = 0; i < 128; i += 3)
        for (int64_t j = 0; j < 128; j += 3) {
            CHECK((k0.get_i64(i * 128 + j) != 0) == (j <= i && i - j <= 4));
            CHECK((k1.get_i64(i * 128 + j) != 0) == (j <= i && (i < 2 || j < 2)));
        }
    // dense changes nothing.
    const Model plain = load(dir), dense = load(dir, {"dense"});
    const Tensor a = interpret(plain.g, plain.inputs).at("last_hidden_state");
    const Tensor b = interpret(dense.g, dense.inputs).at("last_hidden_state");
    CHECK(a.bytes == b.bytes);
    test::require_error([&] { load(dir, {"x-2=causal"}); }, "is no layer range");
    test::require_error([&] { load(dir, {"causal|nope"}); }, "nope");
}

TEST_CASE("near-misses of attention stay unfused", "[cpu][passes][attention]") {
    auto fused = [](test::OnnxBuilder& b) {
        ir::Graph g = import_onnx_bytes(b.bytes(), "", "m");
        run_pipeline(g, {});
        return count(g, ir::Op::SparseAttention);
    };
    test::OnnxBuilder last = scores_model(-1);
    CHECK(fused(last) == 1);
    test::OnnxBuilder other_axis = scores_model(2);
    CHECK(fused(other_axis) == 0);
    // The scores are also a model output.
    test::OnnxBuilder shared = scores_model(-1);
    shared.output("s");
    CHECK(fused(shared) == 0);
    // An additive term computed from a float model input is no mask.
    test::OnnxBuilder float_mask;
    float_mask.input("q", onnx::TensorProto::FLOAT, {1, 1, 16, 8}).input("kt", onnx::TensorProto::FLOAT, {1, 1, 8, 16});
    float_mask.input("v", onnx::TensorProto::FLOAT, {1, 1, 16, 8}).input("m", onnx::TensorProto::FLOAT, {1, 1, 16, 16});
    float_mask.node("MatMul", {"q", "kt"}, {"s"});
    float_mask.node("Add", {"s", "m"}, {"sm"});
    float_mask.node("Softmax", {"sm"}, {"p"});
    float_mask.node("MatMul", {"p", "v"}, {"o"});
    float_mask.output("o");
    CHECK(fused(float_mask) == 0);
    // --mask with nothing to apply it to is an error.
    test::OnnxBuilder none = scores_model(2);
    ir::Graph g = import_onnx_bytes(none.bytes(), "", "m");
    PipelineOptions opt;
    opt.pass.masks = {"causal"};
    test::require_error([&] { run_pipeline(g, opt); }, "no attention in the model could be recognised");
}
