#include "onnx_builder.hpp"

#include <algorithm>

namespace stof::test {

OnnxBuilder::OnnxBuilder(int64_t opset, const std::string& domain) {
    model_.set_ir_version(8);
    model_.set_producer_name("stof-tests");
    auto* o = model_.add_opset_import();
    o->set_domain(domain);
    o->set_version(opset);
    model_.mutable_graph()->set_name("test");
}

OnnxBuilder& OnnxBuilder::input(const std::string& name, int32_t elem_type, const std::vector<Dim>& dims) {
    auto* v = model_.mutable_graph()->add_input();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    for (const Dim& d : dims) {
        auto* dim = shape->add_dim();
        if (const int64_t* i = std::get_if<int64_t>(&d)) dim->set_dim_value(*i);
        else dim->set_dim_param(std::get<std::string>(d));
    }
    return *this;
}

OnnxBuilder& OnnxBuilder::output(const std::string& name, int32_t elem_type) {
    auto* v = model_.mutable_graph()->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
    return *this;
}

OnnxBuilder& OnnxBuilder::initializer(const std::string& name, const Tensor& t) {
    auto* p = model_.mutable_graph()->add_initializer();
    p->set_name(name);
    int32_t type = onnx::TensorProto::FLOAT;
    switch (t.dtype) {
        case DType::f32: type = onnx::TensorProto::FLOAT; break;
        case DType::f16: type = onnx::TensorProto::FLOAT16; break;
        case DType::i64: type = onnx::TensorProto::INT64; break;
        case DType::i32: type = onnx::TensorProto::INT32; break;
        case DType::boolean: type = onnx::TensorProto::BOOL; break;
        default: type = onnx::TensorProto::UNDEFINED; break;
    }
    p->set_data_type(type);
    for (int64_t d : t.shape) p->add_dims(d);
    p->set_raw_data(std::string(t.bytes.begin(), t.bytes.end()));
    return *this;
}

onnx::NodeProto& OnnxBuilder::node(const std::string& op, const std::vector<std::string>& inputs,
                                   const std::vector<std::string>& outputs, const std::string& name) {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
}

std::string OnnxBuilder::bytes() const { return model_.SerializeAsString(); }

void set_attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
}

void set_attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
}

void set_attr(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
}

void set_attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
}

Tensor ints(std::initializer_list<int64_t> v) {
    Tensor t(DType::i64, {static_cast<int64_t>(v.size())});
    int64_t i = 0;
    for (int64_t x : v) t.data<int64_t>()[i++] = x;
    return t;
}

Tensor iota_f32(const Shape& shape) {
    Tensor t(DType::f32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.5f + static_cast<float>(i);
    return t;
}

void add_attention(OnnxBuilder& b, float scale) {
    Tensor s(DType::f32, {});
    s.data<float>()[0] = scale;
    b.initializer("scale", s);
    set_attr(b.node("Transpose", {"k"}, {"kt"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
    b.node("MatMul", {"q", "kt"}, {"s"});
    b.node("Mul", {"s", "scale"}, {"ss"});
    set_attr(b.node("Softmax", {"ss"}, {"p"}), "axis", int64_t{-1});
    b.node("MatMul", {"p", "v"}, {"o"});
}

void add_rotate_half(OnnxBuilder& b, const std::string& x, const std::string& out, int64_t d) {
    const auto& inits = b.model().graph().initializer();
    if (std::none_of(inits.begin(), inits.end(), [](const onnx::TensorProto& t) { return t.name() == "rope_mid"; })) {
        b.initializer("rope_lo", ints({0})).initializer("rope_mid", ints({d / 2})).initializer("rope_hi", ints({INT64_MAX}));
        b.initializer("rope_axis", ints({-1}));
    }
    b.node("Slice", {x, "rope_lo", "rope_mid", "rope_axis"}, {x + "_x1"});
    b.node("Slice", {x, "rope_mid", "rope_hi", "rope_axis"}, {x + "_x2"});
    b.node("Neg", {x + "_x2"}, {x + "_nx2"});
    set_attr(b.node("Concat", {x + "_nx2", x + "_x1"}, {x + "_rot"}), "axis", int64_t{-1});
    b.node("Mul", {x, "cos"}, {x + "_c"});
    b.node("Mul", {x + "_rot", "sin"}, {x + "_s"});
    b.node("Add", {x + "_c", x + "_s"}, {out});
}

}  // namespace stof::test
