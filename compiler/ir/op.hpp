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

// How a plan computes an op (codegen dispatches on it):
//   fused             an expression or index map inside a generated elementwise/layout kernel
//   row_kernel        a row kernel over the last axes (norms, softmax, reductions)
//   gemm              cuBLASLt, with the epilogue the fusion plan folds in
//   loop_kernel       a generated kernel of its own (convolutions, resize, scans, scatters)
//   sparse_attention  the prebuilt sparse attention kernels
//   folded            computed at compile time; never reaches lowering
enum class Lowering : uint8_t { fused, row_kernel, gemm, loop_kernel, sparse_attention, folded };

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
    Lowering lowering;
    int min_inputs, max_inputs;    // max -1: variadic
    int min_outputs, max_outputs;  // max -1: variadic
    InferFn infer;
    EvalFn eval;
    const char* device_expr;  // CUDA expression of a float unary op's input {0}, or nullptr
};

// The op table's row for `op` (ops/op_table.cpp).
const OpInfo& op_info(Op op);
inline constexpr size_t kOpCount = 0
#define STOF_OP(...) +1
#include "ir/ops.def"
#undef STOF_OP
    ;
std::string_view op_name(Op op);
const char* category_name(Category c);
const char* lowering_name(Lowering l);
// The op named `name` (IR spelling), or false.
bool op_from_name(std::string_view name, Op* out);

}  // namespace stof::ir
