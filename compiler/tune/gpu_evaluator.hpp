// The fusion search's evaluator on a live GPU: each segment (with its config) is cut
// out of the graph (tune/segment_graph.hpp), lowered to a plan of its own and timed
// by the measuring worker (tune/measure.hpp); before its time counts, its outputs
// are checked in the worker (tune/output_check.hpp) against the same segment lowered unfused
// (every op a step of its own, fusion/fusion_plan.hpp unfused_scheme) on the same
// inputs; a candidate that fails, crashes or hangs gets an infinite time. Times are
// kept in the tuning cache (tune/tune_cache.hpp) and taken from it when present.
// A whole plan is lowered and timed as one (the search's final check). Every plan the
// worker times has placeholder weights (codegen::LowerOptions::placeholder_weights): its
// large float constants are neither converted, written nor read, only filled on the GPU
// (tune/measure.hpp) by shape, so a candidate and its signature's reference see the same values.
#pragma once

#include "codegen/lower.hpp"
#include "fusion/search.hpp"
#include "tune/measure.hpp"
#include "tune/tune_cache.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace stof::tune {

struct GpuEvaluatorOptions {
    codegen::LowerOptions lower;  // precision, arch, kernel cache, attention kernel of the candidates
    MeasureOptions measure;
    std::string cache_dir;  // the tuning cache's directory ("" : none)
    uint64_t seed = 1;
};

struct EvaluatorStats {
    int measured = 0, from_cache = 0, rejected = 0, failed = 0;
    // Where the time went (s): lowering candidates and references (NVRTC), in the worker
    // (loading plans, timing, keeping or checking outputs; of which loading, and checking:
    // copying the outputs out and comparing them), whole plans.
    double lowering_s = 0, measuring_s = 0, loading_s = 0, checking_s = 0, whole_plans_s = 0;
};

class GpuEvaluator final : public fusion::Evaluator {
public:
    explicit GpuEvaluator(GpuEvaluatorOptions opt);
    ~GpuEvaluator() override;

    fusion::Timing segment(const ir::Graph& g, const fusion::FusionPlan& p, const fusion::Segment& s) override;
    fusion::Timing plan(const ir::Graph& g, const fusion::FusionPlan& p) override;
    void prefetch(const ir::Graph& g, const fusion::FusionPlan& p, const std::vector<fusion::Segment>& ss) override;
    std::optional<int> budget_stop(const ir::Graph& g, const fusion::FusionPlan& p, const std::string& what) override;
    void record_budget_stop(const ir::Graph& g, const fusion::FusionPlan& p, const std::string& what, int checks) override;
    const char* source() const override { return "measured"; }
    // "measured" or "cache": where segment s's time came from ("" when it has none).
    std::string source_of(const ir::Graph& g, const fusion::Segment& s) const override;

    const EvaluatorStats& stats() const { return stats_; }
    const CacheIdentity& identity() const { return identity_; }
    // Writes the measurements to the tuning cache.
    void save_cache();
    // The tuning cache: its records as loaded and every time measured since.
    const TuneCache& cache() const { return *cache_; }

private:
    std::string key_of(const ir::Graph& g, const fusion::Segment& s) const;        // its time's key (config included)
    std::string signature_of(const ir::Graph& g, const fusion::Segment& s) const;  // its reference's key
    std::string plan_key(const ir::Graph& g, const fusion::FusionPlan& p) const;   // a whole plan's key
    plan::Plan lowered(const ir::Graph& g, const fusion::FusionPlan& p, const fusion::Segment& s);
    Measurement measure(const plan::Plan& p, const OutputUse& outputs);
    // Has the worker keep the outputs of s's unfused form as its signature's reference (once
    // per signature and worker); false when that form does not run.
    bool reference(const ir::Graph& g, const fusion::FusionPlan& p, const fusion::Segment& s);

    GpuEvaluatorOptions opt_;
    Measurer measurer_;
    CacheIdentity identity_;
    std::unique_ptr<TuneCache> cache_;
    EvaluatorStats stats_;
    std::map<std::string, std::string> source_;  // key → "measured" | "cache"
    std::map<std::string, bool> references_;     // signature → kept by the worker (false: it failed)
    std::mutex prefetched_mutex_;
    std::map<std::string, plan::Plan> prefetched_;       // key → lowered candidate
    std::map<std::string, plan::Plan> prefetched_refs_;  // signature → lowered unfused segment
};

}  // namespace stof::tune
