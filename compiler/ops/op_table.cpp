// The op table (ir/ops.def) bound to its functions.
#include "ir/op.hpp"
#include "ops/op_functions.hpp"

namespace stof::ir {

namespace {
constexpr OpInfo kOps[] = {
#define STOF_OP(name, cat, lowering, min_in, max_in, min_out, max_out, infer, eval, expr) \
    {#name, Category::cat, Lowering::lowering, min_in, max_in, min_out, max_out, &ops::infer, &ops::eval, expr},
#include "ir/ops.def"
#undef STOF_OP
};
static_assert(std::size(kOps) == kOpCount, "one OpInfo per ops.def row");
}  // namespace

const OpInfo& op_info(Op op) { return kOps[static_cast<size_t>(op)]; }

}  // namespace stof::ir
