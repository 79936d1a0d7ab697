// One segment of a fusion plan as a graph of its own, to compile and time alone:
// the values it reads become graph inputs (constants stay constants), the values
// it stores its outputs, both in the plan's storage types, as the segment sees
// them inside the whole plan.
#pragma once

#include "fusion/fusion_plan.hpp"
#include "precision.hpp"

namespace stof::tune {

struct SegmentGraph {
    ir::Graph graph;
    fusion::FusionPlan plan;  // the one segment, over graph's node and value ids
};

SegmentGraph segment_graph(const ir::Graph& g, const fusion::FusionPlan& p, const fusion::Segment& s, Precision precision);

}  // namespace stof::tune
