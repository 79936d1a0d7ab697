// Every segment of the zoo's fused plans compiles alone into a plan of exactly one
// step (its inputs and outputs already in the plan's storage types: no conversions).
#include "codegen/lower.hpp"
#include "compile_options.hpp"
#include "fusion/search.hpp"
#include "test_util.hpp"
#include "tune/segment_graph.hpp"
#include "zoo_model.hpp"

using namespace stof;

TEST_CASE("segment graphs: each segment of a zoo plan alone is a one-step plan", "[cpu][tune]") {
    for (const char* name : {"bert-torchscript", "llama-dynamo", "t5-torchscript"}) {
        for (const Precision prec : {Precision::fp16, Precision::fp32}) {
            INFO(name << " " << precision_name(prec));
            const ir::Graph g = test::zoo_graph(name, prec);
            const fusion::FusionPlan p = fusion::fused_scheme(g);
            codegen::LowerOptions lo;
            lo.precision = prec;
            lo.cache_dir = test::kernel_cache_dir();
            int compiled = 0;
            for (const fusion::Segment& s : p.segments) {
                if (s.kind == fusion::SegmentKind::view || s.kind == fusion::SegmentKind::attention) continue;
                const tune::SegmentGraph sg = tune::segment_graph(g, p, s, prec);
                const plan::Plan plan = codegen::lower(sg.graph, sg.plan, lo);
                INFO(fusion::to_text(sg.graph, sg.plan));
                CHECK(plan.steps.size() == 1);
                CHECK(plan.outputs.size() == s.outputs.size());
                ++compiled;
            }
            CHECK(compiled >= 10);
        }
    }
}
