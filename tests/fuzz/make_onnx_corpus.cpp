// make_onnx_corpus DIR: writes the seed corpus of fuzz_onnx_import into DIR:
// small models that between them use the importer's every kind of input (graph
// inputs with fixed and symbolic dimensions, initializers of each dtype, Constant
// nodes, attributes of each kind, the op spellings of Transformer exports, an
// external-data reference, another domain, an old opset). Each is checked to
// import (or to be rejected, where that is its point) before it is written.
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "stof/error.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using stof::DType;
using stof::Tensor;
using stof::test::OnnxBuilder;
using stof::test::set_attr;
constexpr int32_t kF32 = onnx::TensorProto::FLOAT;
constexpr int32_t kI64 = onnx::TensorProto::INT64;

// x [2, S, 8] → LayerNormalization → x·W + b → 0.5·x·(1 + Erf(x/√2)) (BERT's FFN half).
std::string linear_gelu() {
    OnnxBuilder b(17);
    b.input("x", kF32, {2, "S", 8});
    b.initializer("scale", stof::test::iota_f32({8})).initializer("bias", stof::test::iota_f32({8}));
    b.initializer("W", stof::test::iota_f32({8, 16})).initializer("b", stof::test::iota_f32({16}));
    Tensor half(DType::f32, {});
    half.set_f64(0, 0.5);
    Tensor rsqrt2(DType::f32, {});
    rsqrt2.set_f64(0, 1.41421356);
    Tensor one(DType::f32, {});
    one.set_f64(0, 1.0);
    b.initializer("half", half).initializer("sqrt2", rsqrt2).initializer("one", one);
    set_attr(b.node("LayerNormalization", {"x", "scale", "bias"}, {"n"}), "epsilon", 1e-5f);
    b.node("MatMul", {"n", "W"}, {"m"});
    b.node("Add", {"m", "b"}, {"h"});
    b.node("Div", {"h", "sqrt2"}, {"d"});
    b.node("Erf", {"d"}, {"e"});
    b.node("Add", {"e", "one"}, {"e1"});
    b.node("Mul", {"h", "e1"}, {"p"});
    b.node("Mul", {"p", "half"}, {"y"});
    b.output("y");
    return b.bytes();
}

// q, k, v [1, 2, 16, 8]; scores scaled, padding mask added, Softmax, ·v, heads merged.
std::string attention() {
    OnnxBuilder b(18);
    for (const char* n : {"q", "k", "v"}) b.input(n, kF32, {1, 2, 16, 8});
    b.input("mask", kI64, {1, 16});
    Tensor scale(DType::f32, {});
    scale.set_f64(0, 0.35355);
    Tensor low(DType::f32, {});
    low.set_f64(0, -3.4e38);
    b.initializer("scale", scale).initializer("low", low).initializer("merge", stof::test::ints({1, 16, 16}));
    b.initializer("axes", stof::test::ints({1, 2}));
    auto& t = b.node("Transpose", {"k"}, {"kt"});
    set_attr(t, "perm", std::vector<int64_t>{0, 1, 3, 2});
    b.node("MatMul", {"q", "kt"}, {"s0"});
    b.node("Mul", {"s0", "scale"}, {"s"});
    b.node("Unsqueeze", {"mask", "axes"}, {"m4"});
    set_attr(b.node("Cast", {"m4"}, {"mb"}), "to", int64_t{onnx::TensorProto::BOOL});
    b.node("Where", {"mb", "s", "low"}, {"sm"});
    set_attr(b.node("Softmax", {"sm"}, {"p"}), "axis", int64_t{-1});
    b.node("MatMul", {"p", "v"}, {"o"});
    set_attr(b.node("Transpose", {"o"}, {"ot"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
    b.node("Reshape", {"ot", "merge"}, {"y"});
    b.output("y");
    return b.bytes();
}

// The shape arithmetic exporters emit: Shape, Gather, Concat, Range, Trilu, Expand,
// ConstantOfShape, Slice, Equal, Constant nodes of each attribute kind.
std::string shape_ops() {
    OnnxBuilder b(17);
    b.input("ids", kI64, {"B", 12});
    b.initializer("zero", stof::test::ints({0})).initializer("one", stof::test::ints({1}));
    b.initializer("end", stof::test::ints({-1}));
    auto& c = b.node("Constant", {}, {"seven"});
    set_attr(c, "value_int", int64_t{7});
    auto* floats = b.node("Constant", {}, {"fl"}).add_attribute();
    floats->set_name("value_floats");
    floats->set_type(onnx::AttributeProto::FLOATS);
    floats->add_floats(1.5f);
    b.node("Shape", {"ids"}, {"shape"});
    set_attr(b.node("Gather", {"shape", "one"}, {"len"}), "axis", int64_t{0});
    b.node("Range", {"zero", "len", "one"}, {"pos"});
    set_attr(b.node("Concat", {"len", "len"}, {"sq"}), "axis", int64_t{0});
    auto& fill = b.node("ConstantOfShape", {"sq"}, {"ones"});
    auto* v = fill.add_attribute();
    v->set_name("value");
    v->set_type(onnx::AttributeProto::TENSOR);
    v->mutable_t()->set_data_type(kF32);
    v->mutable_t()->add_dims(1);
    v->mutable_t()->add_float_data(1.0f);
    set_attr(b.node("Trilu", {"ones"}, {"tri"}), "upper", int64_t{0});
    b.node("Slice", {"pos", "zero", "end", "zero", "one"}, {"cut"});
    b.node("Equal", {"ids", "seven"}, {"eq"});
    b.node("Expand", {"fl", "sq"}, {"big"});
    b.node("Add", {"tri", "big"}, {"y"});
    b.output("y").output("cut", kI64).output("eq", onnx::TensorProto::BOOL);
    return b.bytes();
}

// A patch convolution and a bilinear Resize over an fp16 weight held as int32 data.
std::string conv_resize() {
    OnnxBuilder b(13);
    b.input("img", kF32, {1, 3, 8, 8});
    auto* w = b.model().mutable_graph()->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT16);
    for (int64_t d : {4, 3, 2, 2}) w->add_dims(d);
    for (int i = 0; i < 48; ++i) w->add_int32_data(0x3c00 + i);  // 1.0, 1.0009765625, ...
    auto& conv = b.node("Conv", {"img", "w"}, {"c"});
    set_attr(conv, "strides", std::vector<int64_t>{2, 2});
    set_attr(conv, "kernel_shape", std::vector<int64_t>{2, 2});
    Tensor scales(DType::f32, {4});
    for (int i = 0; i < 4; ++i) scales.set_f64(i, i < 2 ? 1.0 : 2.0);
    b.initializer("scales", scales);
    auto& r = b.node("Resize", {"c", "", "scales"}, {"y"});
    set_attr(r, "mode", std::string("linear"));
    set_attr(r, "coordinate_transformation_mode", std::string("half_pixel"));
    b.output("y");
    return b.bytes();
}

// An initializer in an external file: rejected for a model read from memory.
std::string external_data() {
    OnnxBuilder b(17);
    b.input("x", kF32, {2, 4});
    auto* w = b.model().mutable_graph()->add_initializer();
    w->set_name("W");
    w->set_data_type(kF32);
    w->add_dims(4);
    w->add_dims(4);
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [k, v] :
         {std::pair<const char*, const char*>{"location", "weights.bin"}, {"offset", "0"}, {"length", "64"}}) {
        auto* e = w->add_external_data();
        e->set_key(k);
        e->set_value(v);
    }
    b.node("MatMul", {"x", "W"}, {"y"});
    b.output("y");
    return b.bytes();
}

// A node of a domain the importer does not know; an opset older than it takes.
std::string other_domain() {
    OnnxBuilder b(17);
    auto* o = b.model().add_opset_import();
    o->set_domain("com.microsoft");
    o->set_version(1);
    b.input("x", kF32, {2, 4});
    b.node("FastGelu", {"x"}, {"y"}).set_domain("com.microsoft");
    b.output("y");
    return b.bytes();
}
std::string old_opset() {
    OnnxBuilder b(9);
    b.input("x", kF32, {2, 4});
    b.node("Relu", {"x"}, {"y"});
    b.output("y");
    return b.bytes();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_onnx_corpus DIR\n");
        return 2;
    }
    const struct {
        const char* name;
        std::string (*make)();
        bool imports;
    } seeds[] = {{"linear_gelu", linear_gelu, true},      {"attention", attention, true},
                 {"shape_ops", shape_ops, true},          {"conv_resize", conv_resize, true},
                 {"external_data", external_data, false}, {"other_domain", other_domain, false},
                 {"old_opset", old_opset, false}};
    try {
        const std::filesystem::path dir = argv[1];
        std::filesystem::create_directories(dir);
        for (const auto& s : seeds) {
            const std::string bytes = s.make();
            bool imported = true;
            try {
                stof::import_onnx_bytes(bytes, "", s.name).verify();
            } catch (const stof::Error& e) {
                imported = false;
                if (s.imports) throw;
            }
            if (imported != s.imports) {
                std::fprintf(stderr, "make_onnx_corpus: seed %s imported, but should be rejected\n", s.name);
                return 1;
            }
            std::ofstream(dir / (std::string(s.name) + ".onnx"), std::ios::binary) << bytes;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_onnx_corpus: %s\n", e.what());
        return 1;
    }
    return 0;
}
