// Builds small ONNX models in tests, through the generated protobuf classes.
#pragma once

#include "onnx.pb.h"
#include "stof/tensor.hpp"

#include <initializer_list>
#include <string>
#include <variant>
#include <vector>

namespace stof::test {

using Dim = std::variant<int64_t, std::string>;  // a fixed size or a symbolic name

class OnnxBuilder {
public:
    explicit OnnxBuilder(int64_t opset = 17, const std::string& domain = "");

    OnnxBuilder& input(const std::string& name, int32_t elem_type, const std::vector<Dim>& dims);
    OnnxBuilder& output(const std::string& name, int32_t elem_type = onnx::TensorProto::FLOAT);
    OnnxBuilder& initializer(const std::string& name, const Tensor& t);
    onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name = "");

    onnx::ModelProto& model() { return model_; }
    std::string bytes() const;

private:
    onnx::ModelProto model_;
};

void set_attr(onnx::NodeProto& n, const std::string& name, int64_t v);
void set_attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v);
void set_attr(onnx::NodeProto& n, const std::string& name, float v);
void set_attr(onnx::NodeProto& n, const std::string& name, const std::string& v);

// An int64 1-D tensor.
Tensor ints(std::initializer_list<int64_t> v);
// An f32 tensor filled with 0.5, 1.5, 2.5, ...
Tensor iota_f32(const Shape& shape);

// Scaled-dot-product attention over the values "q", "k", "v" [..., S, D] as exporters
// spell it: o = Softmax(MatMul(q, Transpose(k)) * scale, axis -1) · v. Adds the scalar
// initializer "scale" and the values "kt", "s", "ss", "p" and "o".
void add_attention(OnnxBuilder& b, float scale);

// out = x·cos + rotate_half(x)·sin over x's last axis of d elements, LLaMA's rotary embedding as
// exporters spell it (rotate_half(x) = Concat(−x[d/2:], x[:d/2])), with the initializers "cos" and
// "sin" the caller adds. Adds the Slice bounds "rope_lo", "rope_mid", "rope_hi", "rope_axis" once per
// model and the values x + "_x1", "_x2", "_nx2", "_rot", "_c", "_s".
void add_rotate_half(OnnxBuilder& b, const std::string& x, const std::string& out, int64_t d);

}  // namespace stof::test
