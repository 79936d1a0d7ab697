#include "ir/op.hpp"

#include "ops/op_functions.hpp"

namespace stof::ir {

namespace {
constexpr OpInfo kOps[] = {
#define STOF_OP(name, cat, min_in, max_in, min_out, max_out, infer, eval) \
    {#name, Category::cat, min_in, max_in, min_out, max_out, &ops::infer, &ops::eval},
#include "ir/ops.def"
#undef STOF_OP
};
}  // namespace

const OpInfo& op_info(Op op) { return kOps[static_cast<size_t>(op)]; }

std::string_view op_name(Op op) { return op_info(op).name; }

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

bool op_from_name(std::string_view name, Op* out) {
    for (size_t i = 0; i < std::size(kOps); ++i) {
        if (kOps[i].name == name) {
            *out = static_cast<Op>(i);
            return true;
        }
    }
    return false;
}

}  // namespace stof::ir
