#include "onnx/onnx_ops.hpp"

#include "onnx/onnx_tensor.hpp"
#include "stof/error.hpp"

namespace stof {

using ir::Op;

namespace {

// ReduceMean/Max/Min before opset 18 carry axes as an attribute; the IR takes them as input 1.
void axes_attr_to_input(ImportContext& c, ir::Node& n) {
    if (!n.attrs.has("axes")) return;
    const std::vector<int64_t> axes = n.attrs.ints("axes");
    n.attrs.erase("axes");
    Tensor t(DType::i64, {static_cast<int64_t>(axes.size())});
    for (size_t i = 0; i < axes.size(); ++i) t.data<int64_t>()[i] = axes[i];
    n.inputs.resize(1);
    n.inputs.push_back(c.graph.add_constant(std::move(t), n.name + "_axes"));
}

// saturate only matters for float8 targets, which the IR does not have.
void drop_saturate(ImportContext&, ir::Node& n) {
    if (n.attrs.has("saturate")) n.attrs.erase("saturate");
}

void cast_to_dtype(ImportContext& c, ir::Node& n) {
    STOF_CHECK(n.attrs.has("to"), "{}: missing attribute 'to'", n.label());
    n.attrs.set("to", static_cast<int64_t>(dtype_from_onnx(static_cast<int32_t>(n.attrs.i("to", 0)), n.label())));
    drop_saturate(c, n);
}

// Inference-mode Dropout is the identity; its optional mask output is dropped.
void dropout_to_identity(ImportContext&, ir::Node& n) {
    n.op = Op::Identity;
    n.inputs.resize(1);
    n.outputs.resize(1);
    n.attrs = {};
}

void layernorm_check(ImportContext&, ir::Node& n) {
    STOF_CHECK(n.attrs.i("stash_type", 1) == 1, "{}: stash_type {} is not supported (only float)", n.label(),
               n.attrs.i("stash_type", 1));
    n.attrs.erase("stash_type");
}

// Inference-mode BatchNormalization only (one output, running statistics).
void batchnorm_inference(ImportContext&, ir::Node& n) {
    STOF_CHECK(n.attrs.i("training_mode", 0) == 0 && n.outputs.size() == 1,
               "{}: training-mode BatchNormalization is not supported", n.label());
    n.attrs.erase("training_mode");
}

constexpr int64_t kLast = 21;

// Each row: ONNX type, opset range, IR op, fix-up, and the attributes the op takes
// (space-separated; the importer rejects any other, as onnxruntime does).

constexpr OnnxOp kTable[] = {
    {"Identity", 13, kLast, Op::Identity, nullptr},
    {"Dropout", 13, kLast, Op::Identity, dropout_to_identity, "seed"},
    {"Abs", 13, kLast, Op::Abs, nullptr},
    {"Neg", 13, kLast, Op::Neg, nullptr},
    {"Sqrt", 13, kLast, Op::Sqrt, nullptr},
    {"Reciprocal", 13, kLast, Op::Reciprocal, nullptr},
    {"Log", 13, kLast, Op::Log, nullptr},
    {"Exp", 13, kLast, Op::Exp, nullptr},
    {"Erf", 13, kLast, Op::Erf, nullptr},
    {"Tanh", 13, kLast, Op::Tanh, nullptr},
    {"Relu", 13, kLast, Op::Relu, nullptr},
    {"Sigmoid", 13, kLast, Op::Sigmoid, nullptr},
    {"Sin", 13, kLast, Op::Sin, nullptr},
    {"Cos", 13, kLast, Op::Cos, nullptr},
    {"Sign", 13, kLast, Op::Sign, nullptr},
    {"Floor", 13, kLast, Op::Floor, nullptr},
    {"Ceil", 13, kLast, Op::Ceil, nullptr},
    {"Softplus", 13, kLast, Op::Softplus, nullptr},
    {"Softsign", 13, kLast, Op::Softsign, nullptr},
    {"Gelu", 20, kLast, Op::Gelu, nullptr, "approximate"},
    {"IsNaN", 13, kLast, Op::IsNaN, nullptr},
    {"IsInf", 13, kLast, Op::IsInf, nullptr, "detect_negative detect_positive"},
    {"Not", 13, kLast, Op::Not, nullptr},
    {"Cast", 13, kLast, Op::Cast, cast_to_dtype, "to saturate"},
    {"CastLike", 15, kLast, Op::CastLike, drop_saturate, "saturate"},
    {"Clip", 13, kLast, Op::Clip, nullptr},
    {"Add", 13, kLast, Op::Add, nullptr},
    {"Sub", 13, kLast, Op::Sub, nullptr},
    {"Mul", 13, kLast, Op::Mul, nullptr},
    {"Div", 13, kLast, Op::Div, nullptr},
    {"Pow", 13, kLast, Op::Pow, nullptr},
    {"Mod", 13, kLast, Op::Mod, nullptr, "fmod"},
    {"Min", 13, kLast, Op::Min, nullptr},
    {"Max", 13, kLast, Op::Max, nullptr},
    {"Equal", 13, kLast, Op::Equal, nullptr},
    {"Less", 13, kLast, Op::Less, nullptr},
    {"LessOrEqual", 13, kLast, Op::LessOrEqual, nullptr},
    {"Greater", 13, kLast, Op::Greater, nullptr},
    {"GreaterOrEqual", 13, kLast, Op::GreaterOrEqual, nullptr},
    {"And", 13, kLast, Op::And, nullptr},
    {"Or", 13, kLast, Op::Or, nullptr},
    {"Xor", 13, kLast, Op::Xor, nullptr},
    {"Where", 13, kLast, Op::Where, nullptr},
    {"ReduceMean", 13, kLast, Op::ReduceMean, axes_attr_to_input, "axes keepdims noop_with_empty_axes"},
    {"ReduceSum", 13, kLast, Op::ReduceSum, nullptr, "keepdims noop_with_empty_axes"},
    {"ReduceMax", 13, kLast, Op::ReduceMax, axes_attr_to_input, "axes keepdims noop_with_empty_axes"},
    {"ReduceMin", 13, kLast, Op::ReduceMin, axes_attr_to_input, "axes keepdims noop_with_empty_axes"},
    {"Softmax", 13, kLast, Op::Softmax, nullptr, "axis"},
    {"LayerNormalization", 17, kLast, Op::LayerNormalization, layernorm_check, "axis epsilon stash_type"},
    {"CumSum", 13, kLast, Op::CumSum, nullptr, "exclusive reverse"},
    {"MatMul", 13, kLast, Op::MatMul, nullptr},
    {"Gemm", 13, kLast, Op::Gemm, nullptr, "alpha beta transA transB"},
    {"Conv", 13, kLast, Op::Conv, nullptr, "auto_pad dilations group kernel_shape pads strides"},
    {"ConvTranspose", 13, kLast, Op::ConvTranspose, nullptr,
     "auto_pad dilations group kernel_shape output_padding output_shape pads strides"},
    {"BatchNormalization", 14, kLast, Op::BatchNormalization, batchnorm_inference, "epsilon momentum training_mode"},
    {"Resize", 13, kLast, Op::Resize, nullptr,
     "antialias axes coordinate_transformation_mode cubic_coeff_a exclude_outside extrapolation_value keep_aspect_ratio_policy mode nearest_mode"},
    {"Reshape", 13, kLast, Op::Reshape, nullptr, "allowzero"},
    {"Transpose", 13, kLast, Op::Transpose, nullptr, "perm"},
    {"Unsqueeze", 13, kLast, Op::Unsqueeze, nullptr},
    {"Squeeze", 13, kLast, Op::Squeeze, nullptr},
    {"Flatten", 13, kLast, Op::Flatten, nullptr, "axis"},
    {"Slice", 13, kLast, Op::Slice, nullptr},
    {"Concat", 13, kLast, Op::Concat, nullptr, "axis"},
    {"Split", 13, kLast, Op::Split, nullptr, "axis num_outputs"},
    {"Expand", 13, kLast, Op::Expand, nullptr},
    {"Tile", 13, kLast, Op::Tile, nullptr},
    {"Gather", 13, kLast, Op::Gather, nullptr, "axis"},
    {"GatherElements", 13, kLast, Op::GatherElements, nullptr, "axis"},
    {"GatherND", 13, kLast, Op::GatherND, nullptr, "batch_dims"},
    {"ScatterND", 13, kLast, Op::ScatterND, nullptr, "reduction"},
    {"Pad", 13, kLast, Op::Pad, nullptr, "mode"},
    {"Trilu", 14, kLast, Op::Trilu, nullptr, "upper"},
    {"Shape", 13, kLast, Op::Shape, nullptr, "end start"},
    {"Size", 13, kLast, Op::Size, nullptr},
    {"ConstantOfShape", 13, kLast, Op::ConstantOfShape, nullptr, "value"},
    {"Range", 13, kLast, Op::Range, nullptr},
};

}  // namespace

const OnnxOp* find_onnx_op(std::string_view type, int64_t opset) {
    for (const OnnxOp& e : kTable)
        if (e.type == type && opset >= e.min_opset && opset <= e.max_opset) return &e;
    return nullptr;
}

bool accepts_attribute(const OnnxOp& op, std::string_view name) {
    for (std::string_view rest = op.attrs; !rest.empty();) {
        const size_t sp = rest.find(' ');
        if (rest.substr(0, sp) == name) return true;
        rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
    }
    return false;
}

std::string known_onnx_ops() {
    std::string s;
    for (const OnnxOp& e : kTable) s += (s.empty() ? "" : ", ") + std::string(e.type);
    return s + ", Constant";
}

}  // namespace stof
