// A deterministic cost oracle in place of the GPU for the fusion search's tests.
#pragma once

#include "fusion/search.hpp"

#include <functional>
#include <map>
#include <string>

namespace stof::test {

// Times from a function of the segment: what the GPU would measure. A whole plan takes
// the sum of its segments' times.
class Oracle final : public fusion::Evaluator {
public:
    explicit Oracle(std::function<double(const ir::Graph&, const fusion::Segment&)> f) : f_(std::move(f)) {}
    fusion::Timing segment(const ir::Graph& g, const fusion::FusionPlan&, const fusion::Segment& s) override {
        ++timed[fusion::segment_signature(g, s) + "#" + s.config.str()];
        return {time(g, s), 0};
    }
    fusion::Timing plan(const ir::Graph& g, const fusion::FusionPlan& p) override {
        fusion::Timing t{0, 0};
        for (const fusion::Segment& s : p.segments) t.us += time(g, s);
        return t;
    }
    const char* source() const override { return "measured"; }  // as the GPU's: a plan records it
    std::map<std::string, int> timed;                           // signature#config → how often segment() timed it

private:
    double time(const ir::Graph& g, const fusion::Segment& s) const {
        return s.kind == fusion::SegmentKind::view ? 0.0 : f_(g, s);
    }
    std::function<double(const ir::Graph&, const fusion::Segment&)> f_;
};

}  // namespace stof::test
