// stofc compile with --shape ranges: one plan per shape bucket, after checking on the
// reference interpreter that zero-padding the inputs leaves the outputs' real part
// unchanged (so the runtime may pad a shape up to its bucket and cut the outputs back).
#include "codegen/input_range.hpp"
#include "compile.hpp"
#include "shape_ranges.hpp"
#include "stof/compare.hpp"
#include "stof/error.hpp"
#include "stof/progress.hpp"
#include "stof/shape_ranges.hpp"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

namespace stof {

namespace {

std::string sizes_str(const plan::ShapeRanges& r, const std::vector<int64_t>& values) {
    std::string s;
    for (size_t v = 0; v < values.size(); ++v) s += fmt::format("{}{}={}", v ? ", " : "", r.vars[v].name, values[v]);
    return s;
}

// Inputs for the check: floats standard normal; integer inputs in their range (a [0, 1]
// flag or padding mask: 1, every position real); bools true.
TensorMap check_inputs(const ir::Graph& g) {
    std::mt19937_64 rng(0);
    std::normal_distribution<double> normal;
    TensorMap feeds;
    for (ir::ValueId id : g.inputs) {
        const ir::Value& v = g.value(id);
        Tensor t(v.dtype, v.shape);
        const auto [lo, hi] = is_float(v.dtype) || v.dtype == DType::boolean ? std::pair<int64_t, int64_t>{0, 0}
                                                                             : codegen::integer_input_range(g, id);
        std::uniform_int_distribution<int64_t> ints(lo, std::max(lo, hi));
        for (int64_t i = 0; i < t.numel(); ++i) {
            if (is_float(v.dtype)) t.set_f64(i, normal(rng));
            else if (v.dtype == DType::boolean || (lo == 0 && hi == 1)) t.set_i64(i, 1);
            else t.set_i64(i, ints(rng));
        }
        feeds[v.name] = std::move(t);
    }
    return feeds;
}

// Evaluates the model at sizes A (each variable below its smallest bucket P) and at P
// with the inputs zero-padded; every output's dimensions must each be fixed or follow
// one variable, and its part at A's indices must match. Returns the outputs' dimensions
// (variable index or -1) by output name.
std::map<std::string, std::vector<int32_t>> check_padding(const ir::Graph& model, const RangeBinding& b,
                                                          const PipelineOptions& base) {
    const plan::ShapeRanges& r = b.ranges;
    std::vector<int64_t> P, A;
    for (size_t k = 0; k < r.vars.size(); ++k) {
        const std::vector<int64_t> sizes = plan::var_buckets(r, k);
        const int64_t p = sizes[0] == 1 && sizes.size() > 1 ? sizes[1] : sizes[0];
        P.push_back(p);
        A.push_back(std::max<int64_t>(1, p - std::max<int64_t>(1, p / 4)));
    }
    const std::string what = fmt::format("{} padded to {}", sizes_str(r, A), sizes_str(r, P));
    ProgressPhase phase("checking on the reference interpreter that padding keeps the outputs (" + what + ")");
    auto evaluate = [&](const std::vector<int64_t>& values, ir::Graph& g) {
        PipelineOptions opt;
        opt.pass.input_shapes = b.shapes_for(values);
        opt.pass.masks = base.pass.masks;
        g = model;
        run_pipeline(g, opt);
    };
    ir::Graph ga, gp;
    evaluate(A, ga);
    evaluate(P, gp);
    const TensorMap feeds = check_inputs(ga);
    TensorMap padded;
    for (ir::ValueId id : gp.inputs) {
        const ir::Value& v = gp.value(id);
        padded[v.name] = pad_tensor(feeds.at(v.name), v.shape);
    }
    const TensorMap out_a = interpret(ga, feeds), out_p = interpret(gp, padded);
    std::map<std::string, std::vector<int32_t>> dims;
    for (ir::ValueId id : ga.outputs) {
        const std::string& name = ga.value(id).name;
        const Tensor& a = out_a.at(name);
        const Tensor& p = out_p.at(name);
        STOF_CHECK(a.shape.size() == p.shape.size(), "output '{}' has rank {} at {} and {} at {}: it cannot run a shape range",
                   name, a.shape.size(), sizes_str(r, A), p.shape.size(), sizes_str(r, P));
        std::vector<int32_t> d(a.shape.size(), -1);
        for (size_t k = 0; k < d.size(); ++k) {
            if (a.shape[k] == p.shape[k]) continue;
            for (size_t v = 0; v < r.vars.size() && d[k] < 0; ++v)
                if (A[v] == a.shape[k] && P[v] == p.shape[k]) d[k] = static_cast<int32_t>(v);
            STOF_CHECK(d[k] >= 0,
                       "output '{}' has shape {} at {} and {} at {}: its dimension {} follows no single --shape range, so a "
                       "padded shape bucket cannot be cut back to it; compile fixed shapes (--shape DIM=N) instead",
                       name, shape_str(a.shape), sizes_str(r, A), shape_str(p.shape), sizes_str(r, P), k);
        }
        const Comparison c = compare(cut_tensor(p, a.shape), a, 1e-3, 1e-4);
        STOF_CHECK(c.ok,
                   "padding the inputs changes output '{}' ({}: {}), so the model cannot run a shape range: it mixes "
                   "positions that no padding input masks (a reduction or normalisation over a ranged dimension, attention "
                   "without a padding input such as attention_mask, or a --mask that depends on the length); compile "
                   "fixed shapes (--shape DIM=N) instead",
                   name, what, describe(c, a, 1e-3, 1e-4));
        dims[name] = d;
    }
    spdlog::info("shape ranges: padding {} leaves every output's real part unchanged (reference interpreter)", what);
    return dims;
}

}  // namespace

plan::Plan compile_ranged(const ir::Graph& g, const ShapeArgs& shapes, CompileOptions opt) {
    for (const std::string& m : opt.pipeline.pass.masks)
        STOF_CHECK(m.find("random") == std::string::npos && m.find("bigbird") == std::string::npos,
                   "--mask {}: random blocks are drawn per sequence length, so a shape bucket's mask would differ from the "
                   "actual length's; with --shape ranges use masks that do not depend on the length (causal, sliding, "
                   "global, longformer)",
                   m);
    const RangeBinding b = bind_ranges(g, shapes);
    const plan::ShapeRanges& r = b.ranges;
    spdlog::info("shape ranges: {}; {} buckets", plan::describe_ranges(r), r.bucket_values.size());
    const std::map<std::string, std::vector<int32_t>> output_dims = check_padding(g, b, opt.pipeline);

    plan::Plan out;
    for (size_t k = 0; k < r.bucket_values.size(); ++k) {
        const std::string sizes = sizes_str(r, r.bucket_values[k]);
        spdlog::info("bucket {}/{}: {}", k + 1, r.bucket_values.size(), sizes);
        ProgressPhase phase(fmt::format("bucket {}/{} ({})", k + 1, r.bucket_values.size(), sizes));
        ir::Graph gb = g;
        CompileOptions o = opt;
        o.pipeline.pass.input_shapes = b.shapes_for(r.bucket_values[k]);
        try {
            out.buckets.push_back(compile_model(gb, o));
        } catch (const Error& e) {
            STOF_FAIL("shape bucket {}: {}", sizes, e.what());
        }
    }
    // The plan's inputs and outputs (by name) with the dimensions their model values follow.
    const plan::Plan& first = out.buckets[0];
    out.ranges.vars = r.vars;
    out.ranges.bucket_values = r.bucket_values;
    for (int32_t t : first.inputs) {
        const std::string& name = first.tensors[static_cast<size_t>(t)].name;
        const auto it = std::find(b.input_names.begin(), b.input_names.end(), name);
        STOF_CHECK(it != b.input_names.end(), "plan input '{}' is no model input", name);
        out.ranges.input_dims.push_back(r.input_dims[static_cast<size_t>(it - b.input_names.begin())]);
    }
    for (int32_t t : first.outputs) {
        const std::string& name = first.tensors[static_cast<size_t>(t)].name;
        const auto it = output_dims.find(name);
        STOF_CHECK(it != output_dims.end(), "plan output '{}' is no model output", name);
        out.ranges.output_dims.push_back(it->second);
    }
    out.meta = first.meta;
    out.meta.notes += fmt::format("{}shape ranges: {}", out.meta.notes.empty() ? "" : "\n", plan::describe_ranges(r));
    plan::validate(out);
    return out;
}

}  // namespace stof
