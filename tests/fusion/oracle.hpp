// A deterministic cost oracle in place of the GPU for the fusion search's tests.
#pragma once

#include "catch.hpp"
#include "fusion/cost_model.hpp"
#include "fusion/fusion_plan.hpp"
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

// A GEMM costs 10, a GEMM on a fused kernel of kernels/gemm 11, any other kernel 5: folding
// an epilogue into its GEMM pays.
inline double cheap_fused(const ir::Graph& g, const fusion::Segment& s) {
    if (plan::fused_epilogue(fusion::fused_gemm_epilogue(g, s))) return 11.0;
    return s.kind == fusion::SegmentKind::gemm ? 10.0 : 5.0;
}

// The search over g, stage 1 alone, with the fused GEMMs on: it takes g's one fused GEMM
// (epilogue e) when the fused kernel measures faster than the GEMM and the epilogue's kernel
// (cheap_fused: 11 against 10 + 5), rolls it back when it measures slower (16), and the offline
// cost model never takes it unmeasured; a fused segment samples the kernel's configurations.
inline void check_fused_gemm_search(const ir::Graph& g, plan::Epilogue e) {
    fusion::SearchOptions opt;
    opt.sites.fused_gemm = true;
    opt.stage2 = false;
    const auto fused = [&](const fusion::FusionPlan& p) {
        int n = 0;
        for (const fusion::Segment& s : p.segments) {
            if (fusion::fused_gemm_epilogue(g, s) != e) continue;
            ++n;
            CHECK(fusion::config_space(g, s).size() == plan::fused_configs(e));
        }
        return n;
    };
    Oracle fast(cheap_fused);
    CHECK(fused(fusion::search(g, fast, opt).plan) == 1);
    Oracle slow([e](const ir::Graph& gr, const fusion::Segment& s) {
        return fusion::fused_gemm_epilogue(gr, s) == e ? 16.0 : cheap_fused(gr, s);
    });
    CHECK(fused(fusion::search(g, slow, opt).plan) == 0);
    fusion::CostModel model(Precision::fp16);
    CHECK(fused(fusion::search(g, model, opt).plan) == 0);
}

}  // namespace stof::test
