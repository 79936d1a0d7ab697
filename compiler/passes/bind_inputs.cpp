#include "passes/passes.hpp"
#include "stof/error.hpp"

#include <map>

namespace stof::passes {

namespace {

bool is_dim_name(const ir::Graph& g, const std::string& name) {
    for (ir::ValueId i : g.inputs)
        for (const std::string& d : g.value(i).dim_names)
            if (d == name) return true;
    return false;
}

}  // namespace

// --shape NAME=DIMS binds a model input; --shape DIM=N binds a symbolic dimension
// (e.g. batch=2) in every input that declares it.
void bind_inputs(ir::Graph& g, const PassOptions& opt) {
    std::map<std::string, int64_t> dims;
    for (const auto& [name, shape] : opt.input_shapes) {
        const ir::ValueId id = g.find_value(name);
        bool is_input = false;
        for (ir::ValueId i : g.inputs) is_input = is_input || i == id;
        if (!is_input && is_dim_name(g, name)) {
            STOF_CHECK(shape.size() == 1 && shape[0] > 0, "--shape {}={}: a symbolic dimension takes one positive size", name,
                       shape_str(shape));
            dims[name] = shape[0];
            continue;
        }
        std::string names;
        for (ir::ValueId i : g.inputs) names += (names.empty() ? "" : ", ") + g.value(i).name;
        STOF_CHECK(is_input, "--shape names '{}', which is neither a model input (inputs: {}) nor a symbolic dimension", name,
                   names);
        ir::Value& v = g.value(id);
        if (v.shape_known || !v.shape.empty()) {
            STOF_CHECK(v.shape.size() == shape.size() || (!v.shape_known && v.shape.empty()),
                       "--shape {}={}: the model declares rank {} ({})", name, shape_str(shape), v.shape.size(),
                       shape_str(v.shape));
            for (size_t d = 0; d < v.shape.size(); ++d)
                STOF_CHECK(v.shape[d] < 0 || v.shape[d] == shape[d], "--shape {}={}: dimension {} is fixed to {} by the model",
                           name, shape_str(shape), d, v.shape[d]);
        }
        for (int64_t d : shape) STOF_CHECK(d > 0, "--shape {}={}: dimensions must be positive", name, shape_str(shape));
        v.shape = shape;
        v.shape_known = true;
    }
    // An input whose whole shape was given (--shape NAME=DIMS, or its file in stofc eval) must
    // agree with the symbolic dimensions bound by --shape DIM=N.
    for (ir::ValueId i : g.inputs) {
        const ir::Value& v = g.value(i);
        if (!v.shape_known || v.dim_names.size() != v.shape.size()) continue;
        for (size_t d = 0; d < v.shape.size(); ++d) {
            auto it = dims.find(v.dim_names[d]);
            STOF_CHECK(it == dims.end() || it->second == v.shape[d],
                       "--shape {}={} disagrees with input '{}' of shape {} (its dimension {}, '{}', is {})", it->first,
                       it->second, v.name, shape_str(v.shape), d, it->first, v.shape[d]);
        }
    }
    for (ir::ValueId i : g.inputs) {
        ir::Value& v = g.value(i);
        if (v.shape_known) continue;
        bool all_bound = v.dim_names.size() == v.shape.size() && !v.shape.empty();
        for (size_t d = 0; all_bound && d < v.shape.size(); ++d) all_bound = v.shape[d] > 0 || dims.count(v.dim_names[d]) != 0;
        if (all_bound) {
            for (size_t d = 0; d < v.shape.size(); ++d)
                if (v.shape[d] <= 0) v.shape[d] = dims.at(v.dim_names[d]);
            v.shape_known = true;
            continue;
        }
        // The model's own dimension names, the unbound ones with an example size each.
        std::string text, unbound, example, whole;
        bool anonymous = v.dim_names.size() != v.shape.size();
        for (size_t d = 0; d < v.shape.size(); ++d) {
            const std::string name = d < v.dim_names.size() ? v.dim_names[d] : "";
            const bool fixed = v.shape[d] > 0;
            anonymous = anonymous || (!fixed && name.empty());
            text += (d ? ", " : "") + (fixed ? std::to_string(v.shape[d]) : name.empty() ? std::string("?") : name);
            const int64_t size = fixed ? v.shape[d] : name.find("batch") != std::string::npos ? 1 : 128;
            whole += (d ? "x" : "") + std::to_string(size);
            if (!fixed && !name.empty() && !dims.count(name) && unbound.find(" " + name + ",") == std::string::npos) {
                unbound += " " + name + ",";
                example += fmt::format(" --shape {}={}", name, size);
            }
        }
        if (anonymous || unbound.empty())
            STOF_FAIL("input '{}' has shape [{}] with {}; give its whole shape, e.g. --shape {}={}", v.name, text,
                      anonymous ? "unnamed dimensions (?)" : "no declared sizes", v.name, whole);
        unbound.pop_back();
        STOF_FAIL(
            "input '{}' has shape [{}]; give a size to each symbolic dimension ({}), e.g.{}, or the whole shape, "
            "e.g. --shape {}={}",
            v.name, text, unbound.substr(1), example, v.name, whole);
    }
}

}  // namespace stof::passes
