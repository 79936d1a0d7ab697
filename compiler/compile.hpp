// The compiler's one entry point: an imported model through the passes, the
// fusion plan and lowering to a plan (stofc compile; tests).
#pragma once

#include "codegen/lower.hpp"
#include "fusion/search.hpp"
#include "ir/graph.hpp"
#include "pipeline.hpp"
#include "stof/plan.hpp"

namespace stof {

struct CompileOptions {
    PipelineOptions pipeline;  // pipeline.pass.plan_precision is set from lower.precision
    fusion::SearchOptions search;
    codegen::LowerOptions lower;
    fusion::Evaluator* evaluator = nullptr;  // what times the search's candidates (null: the offline cost model)
};

// Runs the pipeline on g (in place), searches the fusion plan with opt.evaluator
// (printed when --dump-after names "partition" or "all") and lowers it.
plan::Plan compile_model(ir::Graph& g, CompileOptions opt);

struct ShapeArgs;
// A plan for the --shape ranges of `shapes` (at least one MIN..MAX): one compile_model
// per shape bucket, each of a copy of g, after checking on the reference interpreter
// that zero-padding the inputs up to a bucket leaves the outputs' real part unchanged
// (else a stof::Error saying why the model cannot run a range). (compile_ranged.cpp)
plan::Plan compile_ranged(const ir::Graph& g, const ShapeArgs& shapes, CompileOptions opt);

}  // namespace stof
