#include "passes/passes.hpp"

namespace stof::passes {

void fold_constants(ir::Graph& g, const PassOptions&) {
    std::vector<ir::Node> kept;
    for (ir::Node& n : g.nodes) {
        bool all_known = true;
        for (ir::ValueId o : n.outputs) all_known = all_known && g.value(o).data;
        if (!all_known) kept.push_back(std::move(n));
    }
    g.nodes = std::move(kept);
}

}  // namespace stof::passes
