#include "interp/interpreter.hpp"

#include "stof/error.hpp"

#include <memory>

namespace stof {

TensorMap interpret(const ir::Graph& g, const TensorMap& feeds) {
    std::vector<std::shared_ptr<const Tensor>> vals(g.values.size());
    for (size_t i = 0; i < g.values.size(); ++i) vals[i] = g.values[i].data;
    for (ir::ValueId id : g.inputs) {
        const ir::Value& v = g.value(id);
        auto it = feeds.find(v.name);
        STOF_CHECK(it != feeds.end(), "no tensor given for input '{}' ({}{})", v.name, dtype_name(v.dtype), shape_str(v.shape));
        STOF_CHECK(it->second.dtype == v.dtype, "input '{}' must be {}, got {}", v.name, dtype_name(v.dtype),
                   dtype_name(it->second.dtype));
        STOF_CHECK(it->second.shape == v.shape, "input '{}' must have shape {}, got {}", v.name, shape_str(v.shape),
                   shape_str(it->second.shape));
        vals[static_cast<size_t>(id)] = std::make_shared<const Tensor>(it->second);
    }
    for (const auto& [name, t] : feeds) {
        bool known = false;
        for (ir::ValueId id : g.inputs) known = known || g.value(id).name == name;
        STOF_CHECK(known, "'{}' is not an input of the model", name);
    }

    // Release each intermediate after its last reader.
    std::vector<int> remaining = g.use_counts();
    for (const ir::Node& n : g.nodes) {
        const ir::OpInfo& info = ir::op_info(n.op);
        std::vector<const Tensor*> args(n.inputs.size(), nullptr);
        for (size_t k = 0; k < n.inputs.size(); ++k)
            if (n.inputs[k] != ir::kNoValue) args[k] = vals[static_cast<size_t>(n.inputs[k])].get();
        std::vector<ir::TensorType> types;
        for (ir::ValueId o : n.outputs) types.push_back({g.value(o).dtype, g.value(o).shape});
        std::vector<Tensor> results = info.eval(n, args, types);
        STOF_CHECK(results.size() == n.outputs.size(), "{}: evaluation produced {} outputs", n.label(), results.size());
        for (size_t k = 0; k < results.size(); ++k) {
            STOF_CHECK(results[k].dtype == types[k].dtype && results[k].shape == types[k].shape,
                       "{}: evaluation produced {} where shape inference said {}{}", n.label(), results[k].describe(),
                       dtype_name(types[k].dtype), shape_str(types[k].shape));
            vals[static_cast<size_t>(n.outputs[k])] = std::make_shared<const Tensor>(std::move(results[k]));
        }
        for (ir::ValueId in : n.inputs) {
            if (in == ir::kNoValue) continue;
            if (--remaining[static_cast<size_t>(in)] == 0 && !g.value(in).data) vals[static_cast<size_t>(in)].reset();
        }
    }
    TensorMap out;
    for (ir::ValueId o : g.outputs) out[g.value(o).name] = *vals[static_cast<size_t>(o)];
    return out;
}

}  // namespace stof
