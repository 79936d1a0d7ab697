#include "passes/passes.hpp"
#include "stof/error.hpp"

#include <algorithm>

namespace stof::passes {

void infer_shapes(ir::Graph& g, const PassOptions& opt) {
    for (ir::Node& n : g.nodes) {
        const int64_t max_fold = n.op == ir::Op::Transpose ? opt.transpose_fold_limit : opt.fold_limit;
        if (n.op == ir::Op::CastLike) {  // the target type is known now: a plain Cast
            STOF_CHECK(n.inputs.size() == 2 && n.inputs[1] != ir::kNoValue && g.value(n.inputs[1]).shape_known,
                       "{}: the type of the second input is unknown", n.label());
            n.op = ir::Op::Cast;
            n.attrs.set("to", static_cast<int64_t>(g.value(n.inputs[1]).dtype));
            n.inputs.resize(1);
        }
        const ir::OpInfo& info = ir::op_info(n.op);
        std::vector<ir::InferInput> in(n.inputs.size());
        bool all_known = true;
        for (size_t k = 0; k < n.inputs.size(); ++k) {
            if (n.inputs[k] == ir::kNoValue) continue;
            const ir::Value& v = g.value(n.inputs[k]);
            STOF_CHECK(v.shape_known, "{}: the shape of input '{}' is unknown", n.label(), v.name);
            in[k] = {true, v.dtype, v.shape, v.data.get()};
            all_known = all_known && v.data;
        }
        std::vector<ir::TensorType> out = info.infer(n, in);
        STOF_CHECK(out.size() == n.outputs.size(), "{}: inferred {} outputs, node has {}", n.label(), out.size(),
                   n.outputs.size());
        int64_t out_elems = 0;
        for (size_t k = 0; k < out.size(); ++k) {
            // Every inferred size is checked here, once for all ops: no dimension is negative and no
            // product of dimensions overflows, before anything is folded or allocated.
            const int64_t elems = checked_numel(out[k].shape, fmt::format("{}: output {}", n.label(), k));
            out_elems = std::min(out_elems + elems, max_fold + 1);
            ir::Value& v = g.value(n.outputs[k]);
            v.dtype = out[k].dtype;
            v.shape = out[k].shape;
            v.shape_known = true;
            v.data.reset();
        }
        // Shape and Size need only the input's shape.
        const bool shape_only = n.op == ir::Op::Shape || n.op == ir::Op::Size;
        if ((!all_known && !shape_only) || out_elems > max_fold) continue;
        std::vector<Tensor> shape_holders(n.inputs.size());
        std::vector<const Tensor*> args(n.inputs.size(), nullptr);
        for (size_t k = 0; k < n.inputs.size(); ++k) {
            if (n.inputs[k] == ir::kNoValue) continue;
            const ir::Value& v = g.value(n.inputs[k]);
            if (v.data) {
                args[k] = v.data.get();
            } else {
                shape_holders[k].dtype = v.dtype;
                shape_holders[k].shape = v.shape;
                args[k] = &shape_holders[k];
            }
        }
        std::vector<Tensor> results = info.eval(n, args, out);
        for (size_t k = 0; k < results.size(); ++k)
            g.value(n.outputs[k]).data = std::make_shared<const Tensor>(std::move(results[k]));
    }
}

}  // namespace stof::passes
