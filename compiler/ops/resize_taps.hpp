// Resize geometry shared by the reference evaluation and the code generator.
#pragma once

#include "ir/graph.hpp"

#include <vector>

namespace stof::ir::ops {

struct Tap {
    int64_t index;  // source position along the axis
    double weight;
};

// Output sizes and effective per-axis scales of a Resize node whose scales or
// sizes input is known (in[2] / in[3] data).
struct ResizePlan {
    Shape out;
    std::vector<double> scale;
};

ResizePlan resize_plan(const Node& n, const std::vector<InferInput>& in);

// For each output position along one axis, the source positions and weights
// (nearest: 1 tap, linear: 2, cubic: up to 4), per the node's mode,
// coordinate transformation, nearest mode and cubic coefficient.
std::vector<std::vector<Tap>> axis_taps(const Node& n, int64_t in_len, int64_t out_len, double scale);

}  // namespace stof::ir::ops
