#include "passes/passes.hpp"
#include "stof/error.hpp"

namespace stof::passes {

void bind_inputs(ir::Graph& g, const PassOptions& opt) {
    for (const auto& [name, shape] : opt.input_shapes) {
        const ir::ValueId id = g.find_value(name);
        bool is_input = false;
        for (ir::ValueId i : g.inputs) is_input = is_input || i == id;
        std::string names;
        for (ir::ValueId i : g.inputs) names += (names.empty() ? "" : ", ") + g.value(i).name;
        STOF_CHECK(is_input, "--shape names '{}', which is not a model input (inputs: {})", name, names);
        ir::Value& v = g.value(id);
        if (v.shape_known || !v.shape.empty()) {
            STOF_CHECK(v.shape.size() == shape.size() || (!v.shape_known && v.shape.empty()),
                       "--shape {}={}: the model declares rank {} ({})", name, shape_str(shape), v.shape.size(),
                       shape_str(v.shape));
            for (size_t d = 0; d < v.shape.size(); ++d)
                STOF_CHECK(v.shape[d] < 0 || v.shape[d] == shape[d],
                           "--shape {}={}: dimension {} is fixed to {} by the model", name, shape_str(shape), d, v.shape[d]);
        }
        for (int64_t d : shape) STOF_CHECK(d > 0, "--shape {}={}: dimensions must be positive", name, shape_str(shape));
        v.shape = shape;
        v.shape_known = true;
    }
    for (ir::ValueId i : g.inputs) {
        ir::Value& v = g.value(i);
        if (v.shape_known) continue;
        std::string dims;
        for (size_t d = 0; d < v.dim_names.size(); ++d)
            dims += (dims.empty() ? "" : "x") + (v.dim_names[d].empty() ? std::to_string(v.shape[d]) : v.dim_names[d]);
        STOF_FAIL("input '{}' has {} shape [{}]; give its size with --shape {}=DxDx... (or pass an input file)", v.name,
                  v.dim_names.empty() ? "no declared" : "a symbolic", dims, v.name);
    }
}

}  // namespace stof::passes
