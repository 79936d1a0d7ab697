#include "ir/graph.hpp"

#include "stof/error.hpp"

#include <map>
#include <unordered_set>

namespace stof::ir {

std::string Node::label() const { return fmt::format("{} node '{}'", op_name(op), name); }

ValueId Graph::add_value(Value v) {
    values.push_back(std::move(v));
    return static_cast<ValueId>(values.size() - 1);
}

std::string Graph::unique_name(const std::string& hint) {
    std::unordered_set<std::string> used;
    for (const Value& v : values) used.insert(v.name);
    if (!used.count(hint)) return hint;
    for (int k = 1;; ++k) {
        std::string candidate = fmt::format("{}_{}", hint, k);
        if (!used.count(candidate)) return candidate;
    }
}

ValueId Graph::add_constant(Tensor t, const std::string& hint) {
    Value v;
    v.name = unique_name(hint);
    v.dtype = t.dtype;
    v.shape = t.shape;
    v.shape_known = true;
    v.data = std::make_shared<const Tensor>(std::move(t));
    return add_value(std::move(v));
}

ValueId Graph::find_value(const std::string& n) const {
    for (size_t i = 0; i < values.size(); ++i)
        if (values[i].name == n) return static_cast<ValueId>(i);
    return kNoValue;
}

std::vector<int> Graph::producers() const {
    std::vector<int> p(values.size(), -1);
    for (size_t n = 0; n < nodes.size(); ++n)
        for (ValueId o : nodes[n].outputs)
            if (o != kNoValue) p.at(static_cast<size_t>(o)) = static_cast<int>(n);
    return p;
}

std::vector<int> Graph::use_counts() const {
    std::vector<int> uses(values.size(), 0);
    for (const Node& n : nodes)
        for (ValueId i : n.inputs)
            if (i != kNoValue) ++uses.at(static_cast<size_t>(i));
    for (ValueId o : outputs) ++uses.at(static_cast<size_t>(o));
    return uses;
}

void Graph::verify() const {
    const auto nvalues = static_cast<ValueId>(values.size());
    auto check_id = [&](ValueId id, const std::string& where) {
        STOF_CHECK(id >= 0 && id < nvalues, "IR invalid: {} refers to value id {} (graph has {})", where, id, nvalues);
    };
    std::unordered_set<std::string> value_names;
    for (const Value& v : values) {
        STOF_CHECK(!v.name.empty(), "IR invalid: a value has no name");
        STOF_CHECK(value_names.insert(v.name).second, "IR invalid: two values are named '{}'", v.name);
        if (v.data) {
            STOF_CHECK(v.data->dtype == v.dtype && v.data->shape == v.shape,
                       "IR invalid: constant '{}' is {} but its data is {}", v.name,
                       std::string(dtype_name(v.dtype)) + shape_str(v.shape), v.data->describe());
        }
    }
    std::vector<char> defined(values.size(), 0);
    for (ValueId i : inputs) {
        check_id(i, "a graph input");
        STOF_CHECK(!values[static_cast<size_t>(i)].data, "IR invalid: graph input '{}' is also a constant",
                   values[static_cast<size_t>(i)].name);
        defined[static_cast<size_t>(i)] = 1;
    }
    // Constants are defined from the start; a node output may also carry data
    // (its value is known at compile time) until fold-constants removes the node.
    const std::vector<int> producer = producers();
    for (size_t i = 0; i < values.size(); ++i)
        if (values[i].data && producer[i] < 0) defined[i] = 1;
    std::unordered_set<std::string> node_names;
    for (const Node& n : nodes) {
        const OpInfo& info = op_info(n.op);
        STOF_CHECK(!n.name.empty(), "IR invalid: a {} node has no name", info.name);
        STOF_CHECK(node_names.insert(n.name).second, "IR invalid: two nodes are named '{}'", n.name);
        const int nin = static_cast<int>(n.inputs.size()), nout = static_cast<int>(n.outputs.size());
        STOF_CHECK(nin >= info.min_inputs && (info.max_inputs < 0 || nin <= info.max_inputs),
                   "IR invalid: {} has {} inputs (allowed {}..{})", n.label(), nin, info.min_inputs, info.max_inputs);
        STOF_CHECK(nout >= info.min_outputs && (info.max_outputs < 0 || nout <= info.max_outputs),
                   "IR invalid: {} has {} outputs (allowed {}..{})", n.label(), nout, info.min_outputs, info.max_outputs);
        for (int k = 0; k < nin; ++k) {
            const ValueId id = n.inputs[static_cast<size_t>(k)];
            if (id == kNoValue) {
                STOF_CHECK(k >= info.min_inputs, "IR invalid: required input {} of {} is absent", k, n.label());
                continue;
            }
            check_id(id, n.label());
            STOF_CHECK(defined[static_cast<size_t>(id)], "IR invalid: {} reads '{}' before it is defined", n.label(),
                       values[static_cast<size_t>(id)].name);
        }
        for (ValueId id : n.outputs) {
            check_id(id, n.label());
            const Value& v = values[static_cast<size_t>(id)];
            STOF_CHECK(!defined[static_cast<size_t>(id)], "IR invalid: {} redefines '{}'", n.label(), v.name);
            defined[static_cast<size_t>(id)] = 1;
        }
    }
    for (ValueId o : outputs) {
        check_id(o, "a graph output");
        STOF_CHECK(defined[static_cast<size_t>(o)], "IR invalid: graph output '{}' is never defined",
                   values[static_cast<size_t>(o)].name);
    }
}

static std::string type_str(const Value& v) {
    if (!v.shape_known) return v.dtype == DType::undefined ? "?" : std::string(dtype_name(v.dtype)) + "[?]";
    return dtype_name(v.dtype) + shape_str(v.shape);
}

std::string to_text(const Graph& g) {
    std::string out = fmt::format("graph '{}' opset {}\n", g.name, g.opset);
    for (ValueId i : g.inputs) out += fmt::format("  input  %{}: {}\n", g.value(i).name, type_str(g.value(i)));
    const std::vector<int> uses = g.use_counts();
    for (size_t i = 0; i < g.values.size(); ++i) {
        const Value& v = g.values[i];
        if (v.data && uses[i] > 0) out += fmt::format("  const  %{}: {}\n", v.name, type_str(v));
    }
    for (const Node& n : g.nodes) {
        std::string lhs, rhs;
        for (size_t k = 0; k < n.outputs.size(); ++k)
            lhs += fmt::format("{}%{}: {}", k ? ", " : "", g.value(n.outputs[k]).name, type_str(g.value(n.outputs[k])));
        for (size_t k = 0; k < n.inputs.size(); ++k)
            rhs += fmt::format("{}{}", k ? ", " : "",
                               n.inputs[k] == kNoValue ? std::string("_") : "%" + g.value(n.inputs[k]).name);
        std::string attrs;
        for (const auto& [key, v] : n.attrs.all()) attrs += fmt::format("{}{}={}", attrs.empty() ? "" : ", ", key, attr_str(v));
        out += fmt::format("  {} = {}({}){}  # {}\n", lhs, op_name(n.op), rhs, attrs.empty() ? "" : " {" + attrs + "}", n.name);
    }
    for (ValueId o : g.outputs) out += fmt::format("  output %{}: {}\n", g.value(o).name, type_str(g.value(o)));
    return out;
}

std::string op_histogram(const Graph& g) {
    std::map<std::string_view, int> counts;
    for (const Node& n : g.nodes) ++counts[op_name(n.op)];
    std::string out;
    for (const auto& [name, c] : counts) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", c, name);
    return out;
}

int count_ops(const Graph& g, Op op) {
    int c = 0;
    for (const Node& n : g.nodes) c += n.op == op;
    return c;
}

}  // namespace stof::ir
