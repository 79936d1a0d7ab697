#include "codegen/input_range.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace stof::codegen {

std::pair<int64_t, int64_t> integer_input_range(const ir::Graph& g, ir::ValueId v) {
    int64_t hi = std::numeric_limits<int64_t>::max();
    std::vector<ir::ValueId> work{v};
    std::vector<char> seen(g.values.size(), 0);
    while (!work.empty()) {
        const ir::ValueId x = work.back();
        work.pop_back();
        if (seen[static_cast<size_t>(x)]) continue;
        seen[static_cast<size_t>(x)] = 1;
        for (const ir::Node& n : g.nodes) {
            for (size_t k = 0; k < n.inputs.size(); ++k) {
                if (n.inputs[k] != x) continue;
                switch (n.op) {
                    case ir::Op::Gather: {
                        if (k != 1) break;
                        const Shape& ds = g.value(n.inputs[0]).shape;
                        int64_t axis = n.attrs.i("axis", 0);
                        if (axis < 0) axis += static_cast<int64_t>(ds.size());
                        if (axis >= 0 && axis < static_cast<int64_t>(ds.size()))
                            hi = std::min(hi, ds[static_cast<size_t>(axis)] - 1);
                        break;
                    }
                    case ir::Op::Cast:
                        if (is_float(g.value(n.outputs[0]).dtype) || g.value(n.outputs[0]).dtype == DType::boolean) break;
                        [[fallthrough]];
                    case ir::Op::Reshape:
                    case ir::Op::Unsqueeze:
                    case ir::Op::Squeeze:
                    case ir::Op::Flatten:
                    case ir::Op::Identity:
                    case ir::Op::Expand:
                        if (k == 0) work.push_back(n.outputs[0]);
                        break;
                    default: break;
                }
            }
        }
    }
    return {0, hi == std::numeric_limits<int64_t>::max() ? 1 : std::max<int64_t>(hi, 0)};
}

}  // namespace stof::codegen
