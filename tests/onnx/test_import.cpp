#include "interp/interpreter.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "pipeline.hpp"
#include "test_util.hpp"

#include <filesystem>
#include <fstream>

using namespace stof;
using test::OnnxBuilder;

namespace {
constexpr int32_t kF32 = onnx::TensorProto::FLOAT;

ir::Graph import_bytes(const std::string& bytes, const std::string& dir = "") {
    return import_onnx_bytes(bytes, dir, "test.onnx");
}

std::string tmp_dir(const std::string& name) {
    const auto dir = std::filesystem::path(test::binary_dir()) / "test_tmp" / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir.string();
}

void write_file(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }
}  // namespace

TEST_CASE("importer builds the IR of a small model and the interpreter runs it", "[cpu][onnx]") {
    OnnxBuilder b;
    b.input("x", kF32, {2, 3}).initializer("w", test::iota_f32({3, 2})).initializer("bias", test::iota_f32({2}));
    b.node("MatMul", {"x", "w"}, {"xw"});
    b.node("Add", {"xw", "bias"}, {"y"});
    b.output("y");
    ir::Graph g = import_bytes(b.bytes());
    g.verify();
    CHECK(g.nodes.size() == 2);
    CHECK(g.nodes[0].op == ir::Op::MatMul);
    CHECK(g.nodes[0].name == "MatMul_0");  // unnamed nodes get generated names
    CHECK(g.value(g.nodes[0].inputs[1]).data != nullptr);

    PipelineOptions opt;
    run_pipeline(g, opt);
    Tensor x(DType::f32, {2, 3});
    for (int i = 0; i < 6; ++i) x.data<float>()[i] = static_cast<float>(i - 2);
    const TensorMap out = interpret(g, {{"x", x}});
    const Tensor& y = out.at("y");
    REQUIRE(y.shape == Shape{2, 2});
    // w = [[0.5,1.5],[2.5,3.5],[4.5,5.5]], bias = [0.5,1.5]
    const float expect[4] = {-2 * 0.5f - 1 * 2.5f + 0 + 0.5f, -2 * 1.5f - 1 * 3.5f + 0 + 1.5f,
                             1 * 0.5f + 2 * 2.5f + 3 * 4.5f + 0.5f, 1 * 1.5f + 2 * 3.5f + 3 * 5.5f + 1.5f};
    for (int i = 0; i < 4; ++i) CHECK(y.data<float>()[i] == Catch::Approx(expect[i]));
}

TEST_CASE("importer names the op domain opset and node of an unsupported op", "[cpu][onnx]") {
    OnnxBuilder b;
    b.input("x", kF32, {2});
    b.node("Hardmax", {"x"}, {"y"}, "my_hardmax");
    b.output("y");
    test::require_error([&] { import_bytes(b.bytes()); },
                        "Hardmax node 'my_hardmax': op 'Hardmax' (domain ai.onnx, opset 17) is not supported");

    OnnxBuilder c;
    c.input("x", kF32, {2});
    auto* o = c.model().add_opset_import();
    o->set_domain("com.microsoft");
    o->set_version(1);
    c.node("FastGelu", {"x"}, {"y"}, "fg").set_domain("com.microsoft");
    c.output("y");
    test::require_error([&] { import_bytes(c.bytes()); }, "op 'FastGelu' from domain 'com.microsoft' is not supported");

    OnnxBuilder d;  // LayerNormalization exists only from opset 17
    d.model().mutable_opset_import(0)->set_version(13);
    d.input("x", kF32, {2}).initializer("s", test::iota_f32({2}));
    d.node("LayerNormalization", {"x", "s"}, {"y"}, "ln");
    d.output("y");
    test::require_error([&] { import_bytes(d.bytes()); }, "not supported at opset 13");
}

TEST_CASE("importer rejects opsets outside 13 to 21", "[cpu][onnx]") {
    for (int64_t opset : {12, 22}) {
        OnnxBuilder b(opset);
        b.input("x", kF32, {2});
        b.node("Relu", {"x"}, {"y"});
        b.output("y");
        test::require_error([&] { import_bytes(b.bytes()); }, "opset " + std::to_string(opset) + " is not supported");
    }
}

TEST_CASE("importer rejects truncated and corrupt files without crashing", "[cpu][onnx]") {
    OnnxBuilder b;
    b.input("x", kF32, {4}).initializer("w", test::iota_f32({64}));
    b.node("Add", {"x", "x"}, {"y"});
    b.output("y");
    const std::string bytes = b.bytes();
    for (size_t cut : {bytes.size() / 2, bytes.size() - 3, size_t{7}}) {
        INFO("cut at " << cut);
        test::require_error([&] { import_bytes(bytes.substr(0, cut)); }, "test.onnx");
    }
    test::require_error([] { import_bytes(std::string("\x0a\xff\xff\xff\xff\x0f garbage", 13)); }, "not a valid ONNX model");
    test::require_error([] { import_bytes(""); }, "no graph");
    test::require_error([] { import_onnx_file("/nonexistent/model.onnx"); }, "does not exist");

    OnnxBuilder wrong_size;  // raw data shorter than the shape needs
    wrong_size.input("x", kF32, {2});
    Tensor t = test::iota_f32({4});
    wrong_size.initializer("w", t);
    wrong_size.model().mutable_graph()->mutable_initializer(0)->set_dims(0, 5);
    wrong_size.node("Relu", {"x"}, {"y"});
    wrong_size.output("y");
    test::require_error([&] { import_bytes(wrong_size.bytes()); }, "raw data has 16 bytes but f32[5] needs 20");

    // Typed values far fewer than a huge shape needs: rejected before anything of that size is allocated.
    OnnxBuilder huge;
    huge.input("x", kF32, {2});
    auto* w = huge.model().mutable_graph()->add_initializer();
    w->set_name("w");
    w->set_data_type(kF32);
    w->add_dims(int64_t{1} << 38);
    w->add_float_data(1.0f);
    huge.node("Relu", {"x"}, {"y"});
    huge.output("y");
    test::require_error([&] { import_bytes(huge.bytes()); }, "tensor 'w': holds 1 values but shape [274877906944] needs");
}

TEST_CASE("importer loads external data and rejects bad references", "[cpu][onnx]") {
    const std::string dir = tmp_dir("external");
    const Tensor w = test::iota_f32({2, 3});
    std::string blob(16, '\x7f');  // 16 bytes of padding before the tensor
    blob.append(w.bytes.begin(), w.bytes.end());
    write_file(dir + "/weights.bin", blob);

    auto model_with = [&](const std::string& location, const std::string& offset, const std::string& length) {
        OnnxBuilder b;
        b.input("x", kF32, {1, 2});
        auto* init = b.model().mutable_graph()->add_initializer();
        init->set_name("w");
        init->set_data_type(kF32);
        init->add_dims(2);
        init->add_dims(3);
        init->set_data_location(onnx::TensorProto::EXTERNAL);
        auto add = [&](const char* k, const std::string& v) {
            if (v.empty()) return;
            auto* e = init->add_external_data();
            e->set_key(k);
            e->set_value(v);
        };
        add("location", location);
        add("offset", offset);
        add("length", length);
        b.node("MatMul", {"x", "w"}, {"y"});
        b.output("y");
        return b.bytes();
    };
    ir::Graph g = import_bytes(model_with("weights.bin", "16", "24"), dir);
    const Tensor& loaded = *g.value(g.nodes[0].inputs[1]).data;
    CHECK(loaded.bytes == w.bytes);

    test::require_error([&] { import_bytes(model_with("missing.bin", "0", "24"), dir); }, "cannot open external data file");
    test::require_error([&] { import_bytes(model_with("../weights.bin", "0", "24"), dir); }, "leaves the model's directory");
    test::require_error([&] { import_bytes(model_with("/etc/passwd", "0", "24"), dir); }, "must be relative");
    test::require_error([&] { import_bytes(model_with("weights.bin", "32", "24"), dir); }, "too short");
    test::require_error([&] { import_bytes(model_with("weights.bin", "0", "20"), dir); }, "does not match");
    test::require_error([&] { import_bytes(model_with("weights.bin", "x1", "24"), dir); }, "not a byte count");
    test::require_error([&] { import_bytes(model_with("weights.bin", "16", "24"), ""); }, "loaded from memory");

    // The same through the file API: the model's directory resolves the location.
    write_file(dir + "/model.onnx", model_with("weights.bin", "16", "24"));
    CHECK(import_onnx_file(dir + "/model.onnx").value(0).data->bytes == w.bytes);
}

TEST_CASE("importer sorts nodes topologically and reports cycles", "[cpu][onnx]") {
    OnnxBuilder b;
    b.input("x", kF32, {2});
    b.node("Relu", {"a"}, {"y"}, "second");
    b.node("Neg", {"x"}, {"a"}, "first");
    b.output("y");
    ir::Graph g = import_bytes(b.bytes());
    REQUIRE(g.nodes.size() == 2);
    CHECK(g.nodes[0].name == "first");
    g.verify();

    OnnxBuilder c;
    c.input("x", kF32, {2});
    c.node("Add", {"x", "b"}, {"a"}, "n1");
    c.node("Neg", {"a"}, {"b"}, "n2");
    c.output("b");
    test::require_error([&] { import_bytes(c.bytes()); }, "cycle");
}

TEST_CASE("importer turns Constant and Dropout nodes and axes attributes into the IR form", "[cpu][onnx]") {
    OnnxBuilder b(13);
    b.input("x", kF32, {2, 3});
    auto& k = b.node("Constant", {}, {"two"});
    auto* a = k.add_attribute();
    a->set_name("value_float");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(2.0f);
    b.node("Mul", {"x", "two"}, {"m"});
    b.node("Dropout", {"m"}, {"d", "mask"});
    auto& mean = b.node("ReduceMean", {"d"}, {"y"}, "mean");
    test::set_attr(mean, "axes", std::vector<int64_t>{-1});
    test::set_attr(mean, "keepdims", int64_t{0});
    b.output("y");
    ir::Graph g = import_bytes(b.bytes());
    g.verify();
    REQUIRE(g.nodes.size() == 3);
    CHECK(g.nodes[1].op == ir::Op::Identity);
    CHECK(g.nodes[1].outputs.size() == 1);
    CHECK(g.nodes[2].inputs.size() == 2);  // axes moved to an input
    CHECK(!g.nodes[2].attrs.has("axes"));
    run_pipeline(g, {});
    Tensor x = test::iota_f32({2, 3});
    const Tensor y = interpret(g, {{"x", x}}).at("y");
    REQUIRE(y.shape == Shape{2});
    CHECK(y.data<float>()[0] == Catch::Approx(3.0));  // 2 * mean(0.5, 1.5, 2.5)
    CHECK(y.data<float>()[1] == Catch::Approx(9.0));
}
