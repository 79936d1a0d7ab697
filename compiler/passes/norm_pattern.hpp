// The spelling shared by exported LayerNorm and RMSNorm (fuse_layernorm.cpp,
// fuse_rmsnorm.cpp):
//   y = n · 1/√(ReduceMean(s², last axis, keepdims) + eps)
// with s² = Pow(s, 2) or Mul(s, s), and the scaling spelled Mul(n, Reciprocal(√v)),
// Mul(n, Div(1, √v)), Mul(n, Pow(v, -0.5)) or Div(n, √v) (operands of Mul and
// the eps Add in either order); then an optional affine tail y·scale + bias.
#pragma once

#include "passes/match.hpp"

#include <optional>
#include <vector>

namespace stof::passes {

struct NormCore {
    ir::ValueId s = ir::kNoValue;  // the squared operand
    ir::ValueId n = ir::kNoValue;  // the normalised operand
    ir::ValueId y = ir::kNoValue;  // the result
    double eps = 0;
    const ir::Node* square = nullptr;    // Pow / Mul computing s²
    const ir::Node* scale = nullptr;     // Mul / Div reading n and computing y
    std::vector<const ir::Node*> nodes;  // every matched node, square to scale
};

// ReduceMean `r` over exactly the last axis, keepdims=1, of a float tensor.
bool is_last_axis_mean(const Matcher& m, const ir::Node& r);

// The core from its variance ReduceMean `r`; every intermediate value is read
// only inside the pattern. y has n's shape.
std::optional<NormCore> match_norm_core(const Matcher& m, const ir::Node& r);

struct NormAffine {
    ir::ValueId out = ir::kNoValue;     // y when nothing matched
    std::optional<Tensor> scale, bias;  // [len], dtype dt
    std::vector<const ir::Node*> nodes;
};

// y·scale (Mul, either order) then, with `with_bias`, + bias (Add, either
// order); each optional, each a constant broadcast along the last axis only
// (len elements) and read by nothing else, leaving the shape of y unchanged.
NormAffine match_norm_affine(const Matcher& m, ir::ValueId y, int64_t len, DType dt, bool with_bias);

}  // namespace stof::passes
