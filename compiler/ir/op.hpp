// IR ops: the enum, categories and per-op metadata generated from ops.def.
#pragma once

#include "stof/tensor.hpp"

#include <string_view>
#include <vector>

namespace stof::ir {

enum class Op : uint16_t {
#define STOF_OP(name, ...) name,
#include "ir/ops.def"
#undef STOF_OP
};

// Categories drive fusion: elementwise ops join producers, reductions bound
// rows, gemms seed segments, layout ops fold into index maps, shape ops fold away.
enum class Category : uint8_t { elementwise, reduction, gemm, layout, shape, attention };

struct Node;

// What shape inference knows about one input: type, shape, and the contents
// when they are known at compile time (constants and folded shape math).
struct InferInput {
    bool present = false;
    DType dtype = DType::undefined;
    Shape shape;
    const Tensor* data = nullptr;
};

struct TensorType {
    DType dtype = DType::undefined;
    Shape shape;
};

// Output types from input types; throws stof::Error on invalid input.
using InferFn = std::vector<TensorType> (*)(const Node&, const std::vector<InferInput>&);
// Reference evaluation (fp32 arithmetic, int64 index math). inputs[i] is
// nullptr for an absent optional input; outs are the inferred output types.
using EvalFn = std::vector<Tensor> (*)(const Node&, const std::vector<const Tensor*>&, const std::vector<TensorType>&);

struct OpInfo {
    std::string_view name;
    Category category;
    int min_inputs, max_inputs;    // max -1: variadic
    int min_outputs, max_outputs;  // max -1: variadic
    InferFn infer;
    EvalFn eval;
};

const OpInfo& op_info(Op op);
std::string_view op_name(Op op);
const char* category_name(Category c);
// The op named `name` (IR spelling), or false.
bool op_from_name(std::string_view name, Op* out);

}  // namespace stof::ir
