#include "tune/gpu_evaluator.hpp"

#include "codegen/nvrtc.hpp"
#include "fusion/cost_model.hpp"
#include "stof/version.hpp"
#include "parallel.hpp"
#include "tune/segment_graph.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <set>

namespace stof::tune {

namespace {

// Adds the seconds from construction to destruction to `into`.
class Stopwatch {
public:
    explicit Stopwatch(double& into) : into_(into) {}
    ~Stopwatch() { into_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }
    Stopwatch(const Stopwatch&) = delete;
    Stopwatch& operator=(const Stopwatch&) = delete;

private:
    double& into_;
    std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace

GpuEvaluator::GpuEvaluator(GpuEvaluatorOptions opt) : opt_(std::move(opt)), measurer_(opt_.measure) {
    opt_.lower.quiet = true;
    opt_.lower.jobs = 1;
    opt_.lower.placeholder_weights = true;  // times do not depend on weight values
    const Measurer::Device& d = measurer_.device();
    identity_ = {d.name,
                 d.sm_count,
                 d.cc_major,
                 d.cc_minor,
                 d.driver_version,
                 codegen::nvrtc_version(),
                 d.cublaslt_version,
                 kVersion,
                 fmt::format("{:016x}", codegen::templates_hash()),
                 kernels_digest()};
    cache_ = std::make_unique<TuneCache>(opt_.cache_dir, identity_);
}

GpuEvaluator::~GpuEvaluator() = default;

void GpuEvaluator::save_cache() { cache_->save(); }

std::string GpuEvaluator::key_of(const ir::Graph& g, const fusion::Segment& s) const {
    return fusion::segment_key(g, s, opt_.lower.precision);
}

std::string GpuEvaluator::signature_of(const ir::Graph& g, const fusion::Segment& s) const {
    return fmt::format("{}|{}", precision_name(opt_.lower.precision), fusion::segment_signature(g, s));
}

std::string GpuEvaluator::source_of(const ir::Graph& g, const fusion::Segment& s) const {
    auto it = source_.find(key_of(g, s));
    return it == source_.end() ? "" : it->second;
}

plan::Plan GpuEvaluator::lowered(const ir::Graph& g, const fusion::FusionPlan& p, const fusion::Segment& s) {
    {
        std::lock_guard<std::mutex> lock(prefetched_mutex_);
        auto it = prefetched_.find(key_of(g, s));
        if (it != prefetched_.end()) {
            plan::Plan out = std::move(it->second);
            prefetched_.erase(it);
            return out;
        }
    }
    const Stopwatch t(stats_.lowering_s);
    const SegmentGraph sg = segment_graph(g, p, s, opt_.lower.precision);
    return codegen::lower(sg.graph, sg.plan, opt_.lower);
}

void GpuEvaluator::prefetch(const ir::Graph& g, const fusion::FusionPlan& p, const std::vector<fusion::Segment>& ss) {
    // Candidates and the references of new signatures, lowered in parallel: (segment, reference?).
    std::vector<std::pair<const fusion::Segment*, bool>> todo;
    std::set<std::string> keys, sigs;
    for (const fusion::Segment& s : ss) {
        const std::string key = key_of(g, s), sig = signature_of(g, s);
        if (s.kind == fusion::SegmentKind::view || source_.count(key) || cache_->find(key)) continue;
        if (!prefetched_.count(key) && keys.insert(key).second) todo.push_back({&s, false});
        if (!references_.count(sig) && !prefetched_refs_.count(sig) && sigs.insert(sig).second) todo.push_back({&s, true});
    }
    const Stopwatch t(stats_.lowering_s);
    parallel_for(todo.size(), [&](size_t i) {
        const auto [s, ref] = todo[i];
        try {
            const SegmentGraph sg = segment_graph(g, p, *s, opt_.lower.precision);
            plan::Plan lowered_plan = codegen::lower(sg.graph, ref ? fusion::unfused_scheme(sg.graph) : sg.plan, opt_.lower);
            std::lock_guard<std::mutex> lock(prefetched_mutex_);
            (ref ? prefetched_refs_ : prefetched_).emplace(ref ? signature_of(g, *s) : key_of(g, *s), std::move(lowered_plan));
        } catch (const std::exception&) {
            // segment() and reference() lower it again and report the error
        }
    });
}

bool GpuEvaluator::reference(const ir::Graph& g, const fusion::FusionPlan& p, const fusion::Segment& s) {
    const std::string sig = signature_of(g, s);
    auto it = references_.find(sig);
    if (it == references_.end()) {
        bool kept = false;
        try {
            plan::Plan unfused;
            if (auto pre = prefetched_refs_.find(sig); pre != prefetched_refs_.end()) {
                unfused = std::move(pre->second);
                prefetched_refs_.erase(pre);
            } else {
                const Stopwatch t(stats_.lowering_s);
                const SegmentGraph sg = segment_graph(g, p, s, opt_.lower.precision);
                unfused = codegen::lower(sg.graph, fusion::unfused_scheme(sg.graph), opt_.lower);
            }
            const Measurement m = measure(unfused, {OutputUse::keep, sig});
            kept = m.ok;
            if (!m.ok)
                spdlog::warn("tuning: the unfused form of {} did not run ({}); its fused forms are not used",
                             fusion::segment_kind_name(s.kind), m.error);
        } catch (const std::exception& e) {
            spdlog::warn("tuning: the unfused form of {} could not be built ({}); its fused forms are not used",
                         fusion::segment_kind_name(s.kind), e.what());
        }
        it = references_.emplace(sig, kept).first;
    }
    return it->second;
}

Measurement GpuEvaluator::measure(const plan::Plan& p, const OutputUse& outputs) {
    const Stopwatch t(stats_.measuring_s);
    Measurement m = measurer_.measure(p, opt_.seed, outputs);
    stats_.loading_s += m.load_ms / 1e3;
    stats_.checking_s += m.check_ms / 1e3;
    return m;
}

fusion::Timing GpuEvaluator::segment(const ir::Graph& g, const fusion::FusionPlan& p, const fusion::Segment& s) {
    constexpr fusion::Timing kUnusable{};
    if (s.kind == fusion::SegmentKind::view) return {0, 0};
    const std::string key = key_of(g, s);
    if (const std::optional<CacheRecord> r = cache_->find(key)) {
        ++stats_.from_cache;
        source_[key] = "cache";
        return {r->us, r->spread};
    }
    Measurement m;
    try {
        const plan::Plan cand = lowered(g, p, s);
        const OutputUse check{OutputUse::check, signature_of(g, s)};
        if (!reference(g, p, s)) {
            ++stats_.failed;
            return kUnusable;
        }
        m = measure(cand, check);
        if (m.ok && !m.checked) {
            // The worker was restarted (a candidate crashed or hung it) and lost the reference.
            references_.erase(check.key);
            if (!reference(g, p, s)) {
                ++stats_.failed;
                return kUnusable;
            }
            m = measure(cand, check);
        }
        if (!m.ok || !m.checked) {
            ++stats_.failed;
            spdlog::debug("tuning: {} with {} failed: {}", fusion::segment_kind_name(s.kind), s.config.str(),
                          m.ok ? "the worker lost its reference again" : m.error);
            return kUnusable;
        }
        if (!m.mismatch.empty()) {
            ++stats_.rejected;
            spdlog::debug("tuning: {} with {} rejected: {}", fusion::segment_kind_name(s.kind), s.config.str(), m.mismatch);
            return kUnusable;
        }
    } catch (const std::exception& e) {
        ++stats_.failed;
        spdlog::debug("tuning: {} with {} could not be built: {}", fusion::segment_kind_name(s.kind), s.config.str(), e.what());
        return kUnusable;
    }
    ++stats_.measured;
    source_[key] = "measured";
    const int64_t bytes = fusion::CostModel(opt_.lower.precision).bytes(g, s);
    cache_->put(key, {m.median_us, m.spread_us, bytes, fusion::segment_kind_name(s.kind)});
    return {m.median_us, m.spread_us};
}

std::string GpuEvaluator::plan_key(const ir::Graph& g, const fusion::FusionPlan& p) const {
    uint64_t h = codegen::fnv1a(g.name);
    for (const fusion::Segment& s : p.segments) h = codegen::fnv1a(key_of(g, s), codegen::fnv1a(std::to_string(s.position), h));
    return fmt::format("plan|{}|{:016x}", precision_name(opt_.lower.precision), h);
}

std::optional<int> GpuEvaluator::budget_stop(const ir::Graph& g, const fusion::FusionPlan& p, const std::string& what) {
    const std::optional<CacheRecord> r = cache_->find("stop|" + plan_key(g, p) + "|" + what);
    if (!r || r->kind != "budget_stop" || !(r->us >= 1)) return {};
    return static_cast<int>(r->us);
}

void GpuEvaluator::record_budget_stop(const ir::Graph& g, const fusion::FusionPlan& p, const std::string& what, int checks) {
    cache_->put("stop|" + plan_key(g, p) + "|" + what, {static_cast<double>(checks), 0, 0, "budget_stop"});
}

fusion::Timing GpuEvaluator::plan(const ir::Graph& g, const fusion::FusionPlan& p) {
    const std::string key = plan_key(g, p);
    if (const std::optional<CacheRecord> r = cache_->find(key)) {
        const std::optional<CacheRecord> cost = cache_->find("cost|" + key);
        return {r->us, r->spread, cost && cost->kind == "plan_cost" && cost->us > 0 ? cost->us : 0};
    }
    Measurement m;
    double seconds = 0;
    {
        const Stopwatch t(seconds);
        try {
            codegen::LowerOptions whole = opt_.lower;
            whole.jobs = 0;
            m = measurer_.measure(codegen::lower(g, p, whole), opt_.seed);
        } catch (const std::exception& e) {
            m.error = e.what();
        }
    }
    stats_.whole_plans_s += seconds;
    if (!m.ok) {
        spdlog::warn("tuning: the whole plan did not run ({})", m.error);
        return {fusion::Timing{}.us, 0, seconds};
    }
    ++stats_.measured;
    cache_->put(key, {m.median_us, m.spread_us, 0, "plan"});
    cache_->put("cost|" + key, {seconds, 0, 0, "plan_cost"});
    return {m.median_us, m.spread_us, seconds};
}

}  // namespace stof::tune
