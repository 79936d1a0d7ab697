#include "ir/op.hpp"

namespace stof::ir {

namespace {
constexpr std::string_view kNames[] = {
#define STOF_OP(name, ...) #name,
#include "ir/ops.def"
#undef STOF_OP
};
}  // namespace

std::string_view op_name(Op op) { return kNames[static_cast<size_t>(op)]; }

const char* category_name(Category c) {
    switch (c) {
        case Category::elementwise: return "elementwise";
        case Category::reduction: return "reduction";
        case Category::gemm: return "gemm";
        case Category::layout: return "layout";
        case Category::shape: return "shape";
        case Category::attention: return "attention";
    }
    return "?";
}

const char* lowering_name(Lowering l) {
    switch (l) {
        case Lowering::fused: return "fused";
        case Lowering::row_kernel: return "row_kernel";
        case Lowering::gemm: return "gemm";
        case Lowering::loop_kernel: return "loop_kernel";
        case Lowering::sparse_attention: return "sparse_attention";
        case Lowering::folded: return "folded";
    }
    return "?";
}

bool op_from_name(std::string_view name, Op* out) {
    for (size_t i = 0; i < std::size(kNames); ++i) {
        if (kNames[i] == name) {
            *out = static_cast<Op>(i);
            return true;
        }
    }
    return false;
}

}  // namespace stof::ir
