// Declarations of every shape-inference and reference-evaluation function the
// op table (ir/ops.def) names. Shared functions (infer_unary, ...) are declared
// once per row that uses them; repeated declarations are harmless.
#pragma once

#include "ir/graph.hpp"

namespace stof::ir::ops {

#define STOF_OP(name, cat, lowering, min_in, max_in, min_out, max_out, infer, eval, expr) \
    std::vector<TensorType> infer(const Node&, const std::vector<InferInput>&);           \
    std::vector<Tensor> eval(const Node&, const std::vector<const Tensor*>&, const std::vector<TensorType>&);
#include "ir/ops.def"
#undef STOF_OP

}  // namespace stof::ir::ops
