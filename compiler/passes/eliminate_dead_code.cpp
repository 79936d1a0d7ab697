#include "passes/passes.hpp"

namespace stof::passes {

void eliminate_dead_code(ir::Graph& g, const PassOptions&) {
    std::vector<char> live(g.values.size(), 0);
    for (ir::ValueId o : g.outputs) live[static_cast<size_t>(o)] = 1;
    std::vector<char> keep_node(g.nodes.size(), 0);
    for (size_t i = g.nodes.size(); i-- > 0;) {
        const ir::Node& n = g.nodes[i];
        for (ir::ValueId o : n.outputs) keep_node[i] = keep_node[i] || live[static_cast<size_t>(o)];
        if (!keep_node[i]) continue;
        for (ir::ValueId in : n.inputs)
            if (in != ir::kNoValue) live[static_cast<size_t>(in)] = 1;
    }
    std::vector<ir::Node> nodes;
    for (size_t i = 0; i < g.nodes.size(); ++i)
        if (keep_node[i]) nodes.push_back(std::move(g.nodes[i]));
    g.nodes = std::move(nodes);

    // Compact the value table: keep graph inputs, outputs and values nodes touch.
    std::vector<char> used(g.values.size(), 0);
    for (ir::ValueId i : g.inputs) used[static_cast<size_t>(i)] = 1;
    for (ir::ValueId o : g.outputs) used[static_cast<size_t>(o)] = 1;
    for (const ir::Node& n : g.nodes) {
        for (ir::ValueId v : n.inputs)
            if (v != ir::kNoValue) used[static_cast<size_t>(v)] = 1;
        for (ir::ValueId v : n.outputs) used[static_cast<size_t>(v)] = 1;
    }
    std::vector<ir::ValueId> remap(g.values.size(), ir::kNoValue);
    std::vector<ir::Value> values;
    for (size_t i = 0; i < g.values.size(); ++i) {
        if (!used[i]) continue;
        remap[i] = static_cast<ir::ValueId>(values.size());
        values.push_back(std::move(g.values[i]));
    }
    g.values = std::move(values);
    auto fix = [&](ir::ValueId& id) {
        if (id != ir::kNoValue) id = remap[static_cast<size_t>(id)];
    };
    for (ir::ValueId& i : g.inputs) fix(i);
    for (ir::ValueId& o : g.outputs) fix(o);
    for (ir::Node& n : g.nodes) {
        for (ir::ValueId& v : n.inputs) fix(v);
        for (ir::ValueId& v : n.outputs) fix(v);
    }
}

}  // namespace stof::passes
