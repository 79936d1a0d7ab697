// fuse-attention: every model in models/ ends with one SparseAttention per layer
// and no Softmax, with unchanged reference outputs; near-misses stay unfused;
// --mask is intersected with the model's own mask.
#include "compile.hpp"
#include "compile_options.hpp"
#include "interp/interpreter.hpp"
#include "onnx/import.hpp"
#include "ops/attention_layout.hpp"
#include "passes/passes.hpp"
#include "onnx_builder.hpp"
#include "pipeline.hpp"
#include "stof/compare.hpp"
#include "stof/npy.hpp"
#include "test_util.hpp"
#include "zoo_model.hpp"

#include <filesystem>
#include <set>
#include <functional>
#include <limits>
#include <random>
#include <tuple>

using namespace stof;
namespace fs = std::filesystem;

namespace {

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

// keep(b, h, i, j) of attention node a: its keep_tiles, its keep constant, or true.
bool node_keeps(const ir::Graph& g, const ir::Node& a, int64_t b, int64_t h, int64_t i, int64_t j) {
    if (const ir::MaskTilesAttr t = a.attrs.mask_tiles("keep_tiles"))
        return t->keep(t->pattern_of(int32_t(b), int32_t(h)), int32_t(i), int32_t(j));
    if (a.inputs.size() <= 3 || a.inputs[3] == ir::kNoValue) return true;
    const Tensor& k = *g.value(a.inputs[3]).data;
    Shape s = k.shape;
    s.insert(s.begin(), 4 - s.size(), 1);
    return k.get_i64((((s[0] == 1 ? 0 : b) * s[1] + (s[1] == 1 ? 0 : h)) * s[2] + i) * s[3] + j) != 0;
}

// The model in dir (shapes from its inputs) compiled to an fp16 plan for sm_90
// (kernels compiled offline into a test cache).
plan::Plan fp16_plan(const fs::path& dir, const std::vector<std::string>& masks) {
    ir::Graph g = import_onnx_file((dir / "model.onnx").string());
    CompileOptions opt = test::compile_options(Precision::fp16, "model.onnx");
    opt.pipeline.pass.input_shapes = test::stored_input_shapes(dir);
    opt.pipeline.pass.masks = masks;
    return compile_model(g, opt);
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
        CHECK(ir::count_ops(m.g, ir::Op::SparseAttention) == 2);
        CHECK(ir::count_ops(m.g, ir::Op::Softmax) == 0);
        // Both layers mask alike: they read one keep constant (or none) and one bias constant (or none).
        const ir::Node &a0 = attention(m.g, 0), &a1 = attention(m.g, 1);
        for (size_t k : {size_t{3}, size_t{4}}) {
            const ir::ValueId v0 = a0.inputs.size() > k ? a0.inputs[k] : ir::kNoValue;
            const ir::ValueId v1 = a1.inputs.size() > k ? a1.inputs[k] : ir::kNoValue;
            CHECK(v0 == v1);
        }
        CHECK(a0.attrs.mask_tiles("keep_tiles") == a1.attrs.mask_tiles("keep_tiles"));
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
    CHECK(a.inputs[3] == ir::kNoValue);  // classified tile by tile: the pattern in the sparse format
    const ir::MaskTilesAttr keep = a.attrs.mask_tiles("keep_tiles");
    REQUIRE(keep);
    CHECK((keep->mask_batch == 1 && keep->mask_heads == 1 && keep->rows == 128 && keep->cols == 128));
    for (int64_t i = 0; i < 128; ++i)
        for (int64_t j = 0; j < 128; ++j) CHECK(node_keeps(gpt2.g, a, 1, 1, i, j) == (j <= i));
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
    const ir::Node &a0 = attention(m.g, 0), &a1 = attention(m.g, 1);
    for (int64_t i = 0; i < 128; i += 3)
        for (int64_t j = 0; j < 128; j += 3) {
            CHECK(node_keeps(m.g, a0, 0, 0, i, j) == (j <= i && i - j <= 4));
            CHECK(node_keeps(m.g, a1, 0, 0, i, j) == (j <= i && (i < 2 || j < 2)));
        }
    // dense changes nothing.
    const Model plain = load(dir), dense = load(dir, {"dense"});
    const Tensor a = interpret(plain.g, plain.inputs).at("last_hidden_state");
    const Tensor b = interpret(dense.g, dense.inputs).at("last_hidden_state");
    CHECK(a.bytes == b.bytes);
    // GPT-2 is causal already: --mask causal changes nothing.
    const Model causal = load(dir, {"causal"});
    CHECK(interpret(causal.g, causal.inputs).at("last_hidden_state").bytes == a.bytes);
    // Overlapping layer ranges are intersected.
    const Model both = load(dir, {"0-1=sliding:8", "1=global:2"});
    const ir::Node& b1 = attention(both.g, 1);
    for (int64_t i = 0; i < 128; i += 3)
        for (int64_t j = 0; j < 128; j += 3)
            CHECK(node_keeps(both.g, b1, 0, 0, i, j) == (j <= i && i - j <= 8 && (i < 2 || j < 2)));
    test::require_error([&] { load(dir, {"x-2=causal"}); }, "is no layer range");
    test::require_error([&] { load(dir, {"causal|nope"}); }, "nope");
}

TEST_CASE("a file mask keeps its own batch and head dims and is one constant for all layers", "[cpu][passes][attention]") {
    const fs::path dir = fs::path(test::source_dir()) / "models" / "bert-torchscript";
    const fs::path tmp = fs::path(test::binary_dir()) / "test_tmp" / "file_masks";
    fs::create_directories(tmp);
    std::mt19937_64 rng = test::make_rng();
    for (const Shape& fs_shape : {Shape{128, 128}, Shape{2, 128, 128}}) {
        INFO(shape_str(fs_shape));
        Tensor keep(DType::boolean, fs_shape);
        for (int64_t k = 0; k < keep.numel(); ++k) keep.set_i64(k, (rng() & 3) != 0);
        const std::string path = (tmp / ("keep" + std::to_string(fs_shape.size()) + ".npy")).string();
        write_npy(path, keep);
        const Model m = load(dir, {"file:" + path});
        const ir::MaskTilesAttr k0 = attention(m.g, 0).attrs.mask_tiles("keep_tiles");
        CHECK(k0 == attention(m.g, 1).attrs.mask_tiles("keep_tiles"));
        REQUIRE(k0);
        CHECK(k0->mask_batch == 1);
        REQUIRE(k0->mask_heads == (fs_shape.size() == 3 ? 2 : 1));
        std::vector<uint8_t> got;
        for (int32_t p = 0; p < k0->patterns(); ++p) {
            const std::vector<uint8_t> d = to_dense(*k0, p);
            got.insert(got.end(), d.begin(), d.end());
        }
        CHECK(got == keep.bytes);
    }
}

TEST_CASE("near-misses of attention stay unfused", "[cpu][passes][attention]") {
    auto fused = [](test::OnnxBuilder& b) {
        ir::Graph g = import_onnx_bytes(b.bytes(), "", "m");
        run_pipeline(g, {});
        return ir::count_ops(g, ir::Op::SparseAttention);
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

// ---- in-place operands, selection masks, the fp32 decomposition -------------

namespace {

// The attention of a small ONNX model on random inputs: the reference
// interpreter before any rewrite and after the whole pipeline.
struct BeforeAfter {
    ir::Graph fused;
    Tensor before, after;
};

BeforeAfter before_after(test::OnnxBuilder& b, const TensorMap& feeds) {
    ir::Graph raw = import_onnx_bytes(b.bytes(), "", "m");
    passes::bind_inputs(raw, {});
    passes::infer_shapes(raw, {});
    BeforeAfter r{import_onnx_bytes(b.bytes(), "", "m"), {}, {}};
    run_pipeline(r.fused, {});
    r.fused.verify();
    r.before = interpret(raw, feeds).at("o");
    r.after = interpret(r.fused, feeds).at("o");
    return r;
}

Tensor scalar_f32(double x) {
    Tensor t(DType::f32, {});
    t.set_f64(0, x);
    return t;
}

// q [1,2,16,8] · kt [1,2,8,16] · 0.25, masked by `combine` (which names its
// result "masked"), softmax, · v; a padding input pad [1,16] (1 = valid) of type pad_type.
test::OnnxBuilder selection_model(const std::function<void(test::OnnxBuilder&)>& combine,
                                  int pad_type = onnx::TensorProto::INT64) {
    test::OnnxBuilder b;
    b.input("q", onnx::TensorProto::FLOAT, {1, 2, 16, 8}).input("kt", onnx::TensorProto::FLOAT, {1, 2, 8, 16});
    b.input("v", onnx::TensorProto::FLOAT, {1, 2, 16, 8}).input("pad", pad_type, {1, 16});
    Tensor causal(DType::boolean, {16, 16}), upper(DType::boolean, {16, 16});
    for (int64_t i = 0; i < 16; ++i)
        for (int64_t j = 0; j < 16; ++j) {
            causal.set_i64(i * 16 + j, j <= i);
            upper.set_i64(i * 16 + j, j > i);
        }
    b.initializer("causal", causal).initializer("upper", upper).initializer("quarter", scalar_f32(0.25));
    b.initializer("neg_inf", scalar_f32(-std::numeric_limits<double>::infinity())).initializer("lowest", scalar_f32(-3.4e38));
    b.initializer("zero", scalar_f32(0)).initializer("one", scalar_f32(1)).initializer("big", scalar_f32(-1e9));
    b.initializer("pad_shape", test::ints({1, 1, 1, 16}));
    b.node("MatMul", {"q", "kt"}, {"s0"});
    b.node("Mul", {"s0", "quarter"}, {"s"});
    // pad_term [1,1,1,16]: 0 for valid keys, -1e9 for padded ones.
    test::set_attr(b.node("Cast", {"pad"}, {"pad_f"}), "to", int64_t{1});
    b.node("Sub", {"one", "pad_f"}, {"pad_inv"});
    b.node("Mul", {"pad_inv", "big"}, {"pad_big"});
    b.node("Reshape", {"pad_big", "pad_shape"}, {"pad_term"});
    combine(b);
    b.node("Softmax", {"masked"}, {"p"});
    b.node("MatMul", {"p", "v"}, {"o"});
    b.output("o");
    return b;
}

TensorMap selection_feeds() {
    std::mt19937_64 rng(7);
    TensorMap f;
    f["q"] = test::random_tensor(DType::f32, {1, 2, 16, 8}, rng);
    f["kt"] = test::random_tensor(DType::f32, {1, 2, 8, 16}, rng);
    f["v"] = test::random_tensor(DType::f32, {1, 2, 16, 8}, rng);
    Tensor pad(DType::i64, {1, 16});
    for (int64_t j = 0; j < 16; ++j) pad.set_i64(j, j < 12 || j == 14);
    f["pad"] = pad;
    return f;
}

ir::ValueId add_input(ir::Graph& g, const std::string& name, DType dt, const Shape& s) {
    ir::Value v;
    v.name = name;
    v.dtype = dt;
    v.shape = s;
    v.shape_known = true;
    const ir::ValueId id = g.add_value(v);
    g.inputs.push_back(id);
    return id;
}

}  // namespace

TEST_CASE("attention reads q, k, v in place and writes where the head merge reads", "[cpu][passes][attention]") {
    const fs::path zoo = test::source_dir() + "/models";
    // Projections [B,S,H·D] read as [B,S,H,D]; the output written as [B,S,H,D]: no Transpose left.
    for (const char* name : {"bert-torchscript", "bert-dynamo", "gpt2-torchscript", "gpt2-dynamo", "t5-torchscript",
                             "t5-dynamo", "vit-torchscript", "vit-dynamo"}) {
        INFO(name);
        const Model m = load(zoo / name);
        for (int layer = 0; layer < 2; ++layer) CHECK(attention(m.g, layer).attrs.s("layout", "hhhh") == "ssss");
        // ViT: the patch embedding's (patch-conv's two and the flattened patches' one).
        CHECK(ir::count_ops(m.g, ir::Op::Transpose) == (std::string(name).rfind("vit", 0) == 0 ? 3 : 0));
    }
    // GPT-2: q, k, v are heads 0-1, 2-3, 4-5 of the fused c_attn projection [B,S,3·E].
    for (const char* name : {"gpt2-torchscript", "gpt2-dynamo"}) {
        INFO(name);
        const Model m = load(zoo / name);
        const ir::Node& a = attention(m.g, 0);
        CHECK((a.inputs[0] == a.inputs[1] && a.inputs[1] == a.inputs[2]));
        CHECK(m.g.value(a.inputs[0]).shape == Shape({2, 128, 6, 64}));
        CHECK(a.attrs.ints("head_offsets") == std::vector<int64_t>{0, 2, 4});
        CHECK((a.attrs.i("heads", 0) == 2 && a.attrs.i("kv_heads", 0) == 2));
        CHECK(ir::count_ops(m.g, ir::Op::Split) == 0);
    }
    // LLaMA: q, k and v read in place from the Rotary output over the merged q|k|v projection
    // (fuse-rotary) as heads 0-3, 4-5 and 6-7, k and v with their 2 KV heads (the grouped-query
    // repeat is gone).
    for (const char* name : {"llama-torchscript", "llama-dynamo"}) {
        INFO(name);
        const Model m = load(zoo / name);
        const ir::Node& a = attention(m.g, 1);
        CHECK(a.attrs.s("layout", "") == "ssss");
        CHECK((a.inputs[0] == a.inputs[1] && a.inputs[1] == a.inputs[2]));
        CHECK(m.g.value(a.inputs[0]).shape == Shape({2, 128, 8, 64}));
        const std::vector<int> producer = m.g.producers();
        const ir::Node& view = m.g.nodes.at(static_cast<size_t>(producer.at(static_cast<size_t>(a.inputs[0]))));
        REQUIRE(view.op == ir::Op::Reshape);  // the 4-D view of the Rotary output [2,128,512]
        CHECK(m.g.nodes.at(static_cast<size_t>(producer.at(static_cast<size_t>(view.inputs[0])))).op == ir::Op::Rotary);
        CHECK(ir::count_ops(m.g, ir::Op::Rotary) == 2);
        CHECK(a.attrs.ints("head_offsets") == std::vector<int64_t>{0, 4, 6});
        CHECK((a.attrs.i("heads", 0) == 4 && a.attrs.i("kv_heads", 0) == 2));
        CHECK(m.g.value(a.outputs[0]).shape == Shape({2, 128, 4, 64}));
        CHECK(ir::count_ops(m.g, ir::Op::Expand) == 0);
    }
}

TEST_CASE("selection masks (Where) and chains of mask nodes are recognised", "[cpu][passes][attention]") {
    auto check_causal = [](const ir::Graph& g) {
        REQUIRE(ir::count_ops(g, ir::Op::SparseAttention) == 1);
        const ir::Node& a = attention(g, 0);
        REQUIRE(a.inputs.size() == 6);
        CHECK(a.attrs.f("scale", 0) == 0.25);
        CHECK(g.value(a.inputs[5]).name == "pad");
        CHECK(a.inputs[4] == ir::kNoValue);
        REQUIRE(a.attrs.mask_tiles("keep_tiles"));
        for (int64_t i = 0; i < 16; ++i)
            for (int64_t j = 0; j < 16; ++j) CHECK(node_keeps(g, a, 0, 1, i, j) == (j <= i));
    };
    const TensorMap feeds = selection_feeds();
    SECTION("Where(causal, s, -inf) + padding") {
        test::OnnxBuilder b = selection_model([](test::OnnxBuilder& m) {
            m.node("Where", {"causal", "s", "neg_inf"}, {"w"});
            m.node("Add", {"w", "pad_term"}, {"masked"});
        });
        const BeforeAfter r = before_after(b, feeds);
        check_causal(r.fused);
        CHECK(compare(r.after, r.before, 1e-5, 1e-6).ok);
    }
    SECTION("padding + Where(upper, lowest, s)") {
        test::OnnxBuilder b = selection_model([](test::OnnxBuilder& m) {
            m.node("Add", {"pad_term", "s"}, {"a"});
            m.node("Where", {"upper", "lowest", "a"}, {"masked"});
        });
        const BeforeAfter r = before_after(b, feeds);
        check_causal(r.fused);
        CHECK(compare(r.after, r.before, 1e-5, 1e-6).ok);
    }
    SECTION("a float padding input is read as bool (nonzero = valid)") {
        test::OnnxBuilder b = selection_model(
            [](test::OnnxBuilder& m) {
                m.node("Where", {"causal", "s", "neg_inf"}, {"w"});
                m.node("Add", {"w", "pad_term"}, {"masked"});
            },
            onnx::TensorProto::FLOAT);
        TensorMap f = feeds;
        f["pad"] = cast(f.at("pad"), DType::f32);
        const BeforeAfter r = before_after(b, f);
        REQUIRE(ir::count_ops(r.fused, ir::Op::SparseAttention) == 1);
        const ir::Node& a = attention(r.fused, 0);
        REQUIRE(a.inputs.size() == 6);
        CHECK(r.fused.value(a.inputs[5]).dtype == DType::boolean);
        CHECK(compare(r.after, r.before, 1e-5, 1e-6).ok);
    }
    SECTION("a float input added to the scores as it is is no padding mask") {
        test::OnnxBuilder b = selection_model(
            [](test::OnnxBuilder& m) {
                m.initializer("pad_as_is", test::ints({1, 1, 1, 16}));
                m.node("Reshape", {"pad", "pad_as_is"}, {"pad_add"});
                m.node("Add", {"s", "pad_add"}, {"masked"});
            },
            onnx::TensorProto::FLOAT);
        TensorMap f = feeds;
        f["pad"] = cast(f.at("pad"), DType::f32);
        const BeforeAfter r = before_after(b, f);
        CHECK(ir::count_ops(r.fused, ir::Op::SparseAttention) == 0);
        CHECK(compare(r.after, r.before, 0, 0).ok);
    }
    SECTION("a full [B,H,Sq,Sk] mask input becomes a keep computed at run time, with the model's causal pattern") {
        for (const int type : {int(onnx::TensorProto::BOOL), int(onnx::TensorProto::FLOAT)}) {
            test::OnnxBuilder b = selection_model([type](test::OnnxBuilder& m) {
                m.input("full", type, {1, 2, 16, 16});
                m.node("Where", {"causal", "s", "neg_inf"}, {"w"});
                if (type == onnx::TensorProto::BOOL) {
                    m.node("Where", {"full", "w", "lowest"}, {"masked"});
                } else {  // additive: (1 - full) * -1e9
                    m.node("Sub", {"one", "full"}, {"full_inv"});
                    m.node("Mul", {"full_inv", "big"}, {"full_add"});
                    m.node("Add", {"w", "full_add"}, {"masked"});
                }
            });
            TensorMap f = feeds;
            std::mt19937_64 rng(11);
            Tensor full(type == onnx::TensorProto::BOOL ? DType::boolean : DType::f32, {1, 2, 16, 16});
            for (int64_t k = 0; k < full.numel(); ++k)  // the diagonal kept: no row loses every key
                full.set_i64(k, (rng() & 3) != 0 || k % 16 == (k / 16) % 16);
            f["full"] = full;
            const BeforeAfter r = before_after(b, f);
            REQUIRE(ir::count_ops(r.fused, ir::Op::SparseAttention) == 1);
            const ir::Node& a = attention(r.fused, 0);
            REQUIRE(a.inputs.size() >= 4);
            const ir::Value& keep = r.fused.value(a.inputs[3]);
            CHECK(!keep.data);  // computed at run time
            CHECK(keep.dtype == DType::boolean);
            CHECK(keep.shape == Shape({1, 2, 16, 16}));
            CHECK(ir::count_ops(r.fused, ir::Op::And) == 1);  // the input and the causal pattern
            CHECK(compare(r.after, r.before, 1e-5, 1e-6).ok);
        }
    }
    SECTION("a [B,H,Sq,Sk] input that scales the scores is no mask") {
        test::OnnxBuilder b = selection_model([](test::OnnxBuilder& m) {
            m.input("full", onnx::TensorProto::FLOAT, {1, 2, 16, 16});
            m.node("Mul", {"s", "full"}, {"masked"});
        });
        TensorMap f = feeds;
        f["full"] = test::random_tensor(DType::f32, {1, 2, 16, 16}, *std::make_unique<std::mt19937_64>(3));
        const BeforeAfter r = before_after(b, f);
        CHECK(ir::count_ops(r.fused, ir::Op::SparseAttention) == 0);
        CHECK(compare(r.after, r.before, 0, 0).ok);
    }
    SECTION("a finite fill is no mask") {
        test::OnnxBuilder b = selection_model([](test::OnnxBuilder& m) {
            m.node("Where", {"causal", "s", "zero"}, {"masked"});
        });
        const BeforeAfter r = before_after(b, feeds);
        CHECK(ir::count_ops(r.fused, ir::Op::SparseAttention) == 0);
        CHECK(compare(r.after, r.before, 0, 0).ok);
    }
    SECTION("a mask that scales the scores is no mask") {
        test::OnnxBuilder b = selection_model([](test::OnnxBuilder& m) {
            m.node("Add", {"s", "pad_term"}, {"a"});
            m.node("Where", {"causal", "a", "a"}, {"masked"});
        });
        CHECK(ir::count_ops(before_after(b, feeds).fused, ir::Op::SparseAttention) == 0);
    }
    SECTION("a condition computed from the scores is no mask") {
        test::OnnxBuilder b = selection_model([](test::OnnxBuilder& m) {
            m.node("Greater", {"s", "zero"}, {"positive"});
            m.node("Where", {"positive", "s", "neg_inf"}, {"masked"});
        });
        CHECK(ir::count_ops(before_after(b, feeds).fused, ir::Op::SparseAttention) == 0);
    }
}

TEST_CASE("SparseAttention's reference equals its MatMul/Softmax decomposition (the fp32 plan path)",
          "[cpu][passes][attention]") {
    // q [B,S,H,D] (seq-major), k [B,Hk,S,D], v [B,S,Hk,D], o [B,S,H,D]; GQA, a bias,
    // padding, a pattern with an empty row.
    const int64_t B = 2, H = 4, Hk = 2, S = 24, D = 8;
    std::mt19937_64 rng(11);
    // The last: q, k, v as heads 0-3, 4-5, 6-7 of one [B,S,8,D] tensor.
    for (const std::string layout : {"hhhh", "shss", "sssh", "ssss/fused"}) {
        INFO(layout);
        ir::Graph g;
        const ir::AttentionLayout l{layout[0], layout[1], layout[2], layout[3]};
        const bool fused = layout.size() > 4;
        ir::ValueId q, k, v;
        if (fused) {
            q = k = v = add_input(g, "q", DType::f32, {B, S, H + 2 * Hk, D});
        } else {
            q = add_input(g, "q", DType::f32, ir::attention_shape({B, H, S, D}, l.q));
            k = add_input(g, "k", DType::f32, ir::attention_shape({B, Hk, S, D}, l.k));
            v = add_input(g, "v", DType::f32, ir::attention_shape({B, Hk, S, D}, l.v));
        }
        const ir::ValueId pad = add_input(g, "pad", DType::i64, {B, S});
        Tensor keep(DType::boolean, {1, 1, S, S});
        for (int64_t i = 0; i < S; ++i)
            for (int64_t j = 0; j < S; ++j) keep.set_i64(i * S + j, i != 5 && (j <= i || (i + j) % 3 == 0));
        ir::Node n;
        n.op = ir::Op::SparseAttention;
        n.name = "attention";
        n.inputs = {
            q,  k, v, g.add_constant(keep, "keep"), g.add_constant(test::random_tensor(DType::f32, {1, H, S, S}, rng), "bias"),
            pad};
        n.attrs.set("scale", 0.3);
        n.attrs.set("layout", layout.substr(0, 4));
        if (fused) {
            n.attrs.set("heads", H);
            n.attrs.set("kv_heads", Hk);
            n.attrs.set("head_offsets", std::vector<int64_t>{0, H, H + Hk});
        }
        ir::Value o;
        o.name = "o";
        o.dtype = DType::f32;
        o.shape = ir::attention_shape({B, H, S, D}, l.o);
        o.shape_known = true;
        n.outputs = {g.add_value(o)};
        g.nodes.push_back(n);
        g.outputs = {n.outputs[0]};
        passes::infer_shapes(g, {});
        g.verify();
        TensorMap feeds;
        for (const char* name : {"q", "k", "v"}) {
            if (g.find_value(name) == ir::kNoValue) continue;
            const ir::Value& x = g.value(g.find_value(name));
            feeds[name] = test::random_tensor(DType::f32, x.shape, rng);
        }
        Tensor p(DType::i64, {B, S});
        for (int64_t x = 0; x < B * S; ++x) p.set_i64(x, x % S < S - 3 * (x / S) - 1);
        feeds["pad"] = p;
        const Tensor want = interpret(g, feeds).at("o");
        ir::Graph expanded = g;
        PassOptions fp32_plan;
        fp32_plan.plan_precision = Precision::fp32;
        passes::decompose_attention(expanded, fp32_plan);
        expanded.verify();
        CHECK(ir::count_ops(expanded, ir::Op::SparseAttention) == 0);
        const Tensor got = interpret(expanded, feeds).at("o");
        CHECK(compare(got, want, 1e-5, 1e-6).ok);
        // The same pattern as keep_tiles (the sparse format, no keep input): the same result.
        ir::Graph tiled = g;
        tiled.nodes[0].inputs[3] = ir::kNoValue;
        std::vector<uint8_t> dense(keep.bytes.begin(), keep.bytes.end());
        tiled.nodes[0].attrs.set("keep_tiles", std::make_shared<const SparseMask>(from_dense(
                                                   dense.data(), 1, 1, static_cast<int32_t>(S), static_cast<int32_t>(S))));
        passes::infer_shapes(tiled, {});
        tiled.verify();
        CHECK(interpret(tiled, feeds).at("o").bytes == want.bytes);
        passes::decompose_attention(tiled, fp32_plan);
        tiled.verify();
        CHECK(ir::count_ops(tiled, ir::Op::SparseAttention) == 0);
        CHECK(compare(interpret(tiled, feeds).at("o"), want, 1e-5, 1e-6).ok);
        // Row 5 keeps no key: zeros.
        const ir::AttentionStrides os = ir::attention_strides({B, H, S, D}, l.o);
        for (int64_t h = 0; h < H; ++h)
            for (int64_t d = 0; d < D; ++d) CHECK(want.get_f64(os.b + h * os.h + 5 * os.s + d) == 0.0);
    }
}

TEST_CASE("an fp16 plan runs attention on the projections in place: no head split or merge kernels",
          "[cpu][passes][attention]") {
    // BERT (its three projections merged) and GPT-2: q, k, v are heads 0-1, 2-3, 4-5 of one
    // [2,128,384] projection (fp16: 128 bytes a head).
    for (const auto& [name, width, offsets] :
         {std::tuple<const char*, int64_t, std::vector<uint64_t>>{"bert-torchscript", 384, {0, 256, 512}},
          {"gpt2-dynamo", 384, {0, 256, 512}}}) {
        INFO(name);
        const plan::Plan p = fp16_plan(fs::path(test::source_dir()) / "models" / name, {"sliding:16"});
        int attention_steps = 0, key_valid_steps = 0;
        std::set<int32_t> words;
        for (const plan::Step& s : p.steps) {
            INFO(s.label << " " << s.nodes);
            key_valid_steps += s.kind == plan::StepKind::key_valid;
            CHECK((s.label != "layout" || s.nodes.find("attn") == std::string::npos));
            if (s.kind != plan::StepKind::attention) continue;
            ++attention_steps;
            const plan::AttentionStep& a = s.attention;
            CHECK((a.heads == 2 && a.kv_heads == 2 && a.seq_q == 128 && a.head_dim == 64));
            // [B,S,H,D] views: strides (S·width, D, width); the output [2,128,2,64] itself.
            const plan::AttentionOperand* ops[4] = {&a.q, &a.k, &a.v, &a.o};
            for (int i = 0; i < 4; ++i) {
                const int64_t w = i < 3 ? width : 128;
                CHECK(ops[i]->stride_b == 128 * w);
                CHECK(ops[i]->stride_h == 64);
                CHECK(ops[i]->stride_s == w);
                CHECK(ops[i]->byte_offset == (i < 3 ? offsets[static_cast<size_t>(i)] : 0));
            }
            CHECK(a.key_valid >= 0);
            words.insert(a.key_valid);
            CHECK(p.masks.at(static_cast<size_t>(a.mask)).spec.find("sliding:16 & padding") != std::string::npos);
        }
        CHECK(attention_steps == 2);
        // One padding input: packed once, read by both layers.
        CHECK(key_valid_steps == 1);
        CHECK(words.size() == 1);
    }
}

TEST_CASE("T5's position bias, read by every layer, is one weight of the plan", "[cpu][passes][attention]") {
    for (const char* name : {"t5-torchscript", "t5-dynamo"}) {
        INFO(name);
        const plan::Plan p = fp16_plan(fs::path(test::source_dir()) / "models" / name, {});
        std::set<int32_t> biases;
        int attention_steps = 0;
        for (const plan::Step& s : p.steps) {
            if (s.kind != plan::StepKind::attention) continue;
            ++attention_steps;
            CHECK(s.attention.bias >= 0);
            biases.insert(s.attention.bias);
        }
        CHECK(attention_steps == 2);
        CHECK(biases.size() == 1);
        // Every weight's bytes are distinct.
        std::set<std::pair<uint64_t, uint64_t>> spans;
        for (const plan::TensorDesc& t : p.tensors)
            if (t.buffer == plan::BufferKind::weights) CHECK(spans.insert({t.offset, t.bytes()}).second);
    }
}
