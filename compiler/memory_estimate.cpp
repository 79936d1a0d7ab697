#include "memory_estimate.hpp"

#include "stof/error.hpp"
#include "stof/memory_limit.hpp"

#include <algorithm>

namespace stof {

namespace {
uint64_t value_bytes(const ir::Value& v) {
    return static_cast<uint64_t>(checked_numel(v.shape, "value '" + v.name + "'")) * dtype_size(v.dtype);
}
}  // namespace

MemoryEstimate estimate_memory(const ir::Graph& g) {
    MemoryEstimate e;
    std::vector<int> remaining = g.use_counts();
    for (const ir::Value& v : g.values)
        if (v.data && v.shape_known) e.weights += value_bytes(v);
    uint64_t live = 0;
    for (ir::ValueId id : g.inputs) live += value_bytes(g.value(id));
    e.values = live;
    for (const ir::Node& n : g.nodes) {
        for (ir::ValueId o : n.outputs)
            if (o != ir::kNoValue && !g.value(o).data) live += value_bytes(g.value(o));
        e.values = std::max(e.values, live);
        for (ir::ValueId in : n.inputs) {
            if (in == ir::kNoValue) continue;
            if (--remaining[static_cast<size_t>(in)] == 0 && !g.value(in).data) live -= value_bytes(g.value(in));
        }
    }
    return e;
}

void check_memory_estimate(const ir::Graph& g, bool values) {
    const MemoryEstimate e = estimate_memory(g);
    if (!values) {
        check_memory(e.weights, "the model's weights", format_bytes(e.weights));
        return;
    }
    check_memory(e.weights + e.values, "the model at these input shapes",
                 fmt::format("weights {}, intermediate values {}", format_bytes(e.weights), format_bytes(e.values)));
}

}  // namespace stof
