#include "fusion/search.hpp"

#include "stof/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>

namespace stof::fusion {

Timing Evaluator::plan(const ir::Graph& g, const FusionPlan& p) {
    Timing t{0, 0};
    for (const Segment& s : p.segments) {
        const Timing x = segment(g, p, s);
        t.us += x.us;
        t.spread += x.spread;
    }
    return t;
}

const char* kept_name(Kept k) {
    switch (k) {
        case Kept::searched: return "searched plan";
        case Kept::initial: return "initial scheme";
        case Kept::cost_model: return "cost-model plan";
    }
    return "";
}

std::string segment_key(const ir::Graph& g, const Segment& s, Precision precision) {
    return fmt::format("{}|{}#{}", precision_name(precision), segment_signature(g, s), s.config.str());
}

std::vector<Config> config_space(const ir::Graph& g, const Segment& s) {
    std::vector<Config> out;
    if (s.kind == SegmentKind::elementwise) {
        for (int vec : {0, 1})
            for (int block : {0, 128, 512})
                for (int grid : {0, 1024, 4096, 32768}) out.push_back({block, 0, grid, vec});
    } else if (s.kind == SegmentKind::gemm) {
        const plan::Epilogue fused = fused_gemm_epilogue(g, s);
        const int algos = plan::fused_epilogue(fused) ? plan::fused_configs(fused) : plan::kGemmAlgos;
        for (int algo = 0; algo < algos; ++algo) out.push_back({0, 0, 0, 0, algo});
    } else if (s.kind == SegmentKind::rownorm) {
        const Shape& x = g.value(g.nodes[static_cast<size_t>(s.nodes.front())].inputs[0]).shape;
        const int64_t len = x.empty() ? 1 : x.back();
        out.push_back({});
        for (int block : {32, 64, 128, 256, 512}) {
            if (static_cast<int64_t>(block) * 8 * 16 < len) continue;  // more than 16 vectors a thread
            for (int rows : block == 32 ? std::vector<int>{1, 2, 4, 8} : std::vector<int>{0})
                out.push_back({block, rows, 0, 0});
        }
    }
    return out;
}

bool fused_gemm_target(const std::string& arch, Precision precision) {
    return arch == "sm_90" && (precision == Precision::fp16 || precision == Precision::bf16);
}

namespace {

using Clock = std::chrono::steady_clock;

// Segments identified by what they compute and where (same graph): equal when the
// same nodes form the same kernel with the same outputs and config.
std::string identity(const Segment& s) {
    return fmt::format("{}|{}|{}|{}|{}", static_cast<int>(s.kind), fmt::join(s.nodes, ","), fmt::join(s.outputs, ","),
                       s.position, s.config.str());
}

bool same_plan(const FusionPlan& a, const FusionPlan& b) {
    if (a.segments.size() != b.segments.size()) return false;
    for (size_t i = 0; i < a.segments.size(); ++i)
        if (identity(a.segments[i]) != identity(b.segments[i])) return false;
    return true;
}

std::vector<Segment> copies(const std::vector<const Segment*>& ss) {
    std::vector<Segment> out;
    for (const Segment* s : ss) out.push_back(*s);
    return out;
}

class Search {
public:
    Search(const ir::Graph& g, Evaluator& ev, const SearchOptions& opt)
        : g_(g), ev_(ev), opt_(opt), rng_(opt.seed), start_(now()) {}

    SearchResult run() {
        SearchResult r;
        r.plan = initial_scheme(g_);
        initial_ = r.plan;
        stop_key_ = fmt::format("budget {} with reserve{}|stages {}{}|min_gain {}|stage2 {},{},{}|seed {}", opt_.budget_s,
                                opt_.cost_model_plan ? " and cost-model plan" : "", opt_.stage1, opt_.stage2, opt_.min_gain,
                                opt_.stage2_first, opt_.stage2_batch, opt_.stage2_max_rounds, opt_.seed);
        if (std::isfinite(opt_.budget_s)) recorded_stop_ = ev_.budget_stop(g_, initial_, stop_key_);
        {
            const double t0 = now();
            const Timing initial = ev_.plan(g_, r.plan);
            r.initial_us = initial.us;
            whole_plan_s_ = initial.cost_s > 0 ? initial.cost_s : now() - t0;
            last_check_ = now();
        }
        // Whole-plan timings still to come: the final check's (the searched plan, the cost-model
        // plan), and the one after stage 1.
        whole_plans_left_ = 1 + (opt_.cost_model_plan ? 1 : 0) + (opt_.stage1 && opt_.time_stage1 ? 1 : 0);
        if (std::isfinite(opt_.budget_s))
            say(fmt::format("budget {:.1f} s: {:.1f} s kept for {} whole-plan timing{} to come", opt_.budget_s, reserve_s(),
                            whole_plans_left_, whole_plans_left_ > 1 ? "s" : ""));
        if (opt_.stage1) stage1(r);
        if (!opt_.stage1) r.stage1_us = r.initial_us;
        else if (opt_.time_stage1 && !out_of_time(false)) r.stage1_us = ev_.plan(g_, r.plan).us;
        else r.stage1_us = std::numeric_limits<double>::quiet_NaN();
        if (opt_.stage1 && opt_.time_stage1) --whole_plans_left_;
        if (opt_.stage2 && !out_of_time()) stage2(r);
        if (opt_.sweep > 0) sweep(r);
        final_check(r);
        r.evaluations = evaluations_;
        r.budget_spent = budget_spent_;
        r.whole_plan_s = whole_plan_s_;
        r.times = times_;
        return r;
    }

private:
    // Times the searched plan and the cost-model plan as wholes and keeps the fastest of them
    // and the initial scheme (search.hpp).
    void final_check(SearchResult& r) {
        const int count = opt_.cost_model_plan ? 2 : 1;
        report("final check", 0, count, r.initial_us - (std::isnan(r.stage1_us) ? r.initial_us : r.stage1_us));
        r.searched_us = r.final_us = ev_.plan(g_, r.plan).us;
        report("final check", 1, count, r.initial_us - std::min(r.initial_us, r.searched_us));
        if (r.searched_us > r.initial_us) {  // never slower than where it started
            say(fmt::format("final check: the searched plan ({:.1f} us) is slower than the initial scheme ({:.1f} us)",
                            r.searched_us, r.initial_us));
            r.kept = Kept::initial;
            r.final_us = r.initial_us;
        }
        if (opt_.cost_model_plan) {
            SearchResult m = opt_.cost_model_plan(g_);
            // Timed unless it is a plan timed already.
            const bool searched = same_plan(m.plan, r.plan), initial = !searched && same_plan(m.plan, initial_);
            r.cost_model_us = searched ? r.searched_us : initial ? r.initial_us : ev_.plan(g_, m.plan).us;
            report("final check", 2, count, r.initial_us - std::min(r.final_us, r.cost_model_us));
            const std::string what = fmt::format("the cost-model plan ({:.1f} us{})", r.cost_model_us,
                                                 searched  ? ", the searched plan"
                                                 : initial ? ", the initial scheme"
                                                           : "");
            const char* other = kept_name(r.kept);
            say(fmt::format("final check: {} is {} the {} ({:.1f} us)", what,
                            r.cost_model_us < r.final_us ? "faster than" : "not faster than", other, r.final_us));
            if (r.cost_model_us < r.final_us) {
                r.kept = Kept::cost_model;
                r.final_us = r.cost_model_us;
                r.plan = std::move(m.plan);
                r.choices = std::move(m.choices);
            }
            r.cost_model_moves = std::move(m.moves);
            r.cost_model_times = std::move(m.times);
        }
        if (r.kept == Kept::initial) {
            r.plan = initial_;
            r.choices = {};
        }
        say(fmt::format("final check: keeping the {} ({:.1f} us)", kept_name(r.kept), r.final_us));
    }

    void say(const std::string& s) const {
        if (opt_.progress) opt_.progress(s);
    }
    void report(const char* stage, int index, int count, double gain_us, int configs = 0, int space = 0) const {
        if (!opt_.on_progress) return;
        opt_.on_progress({stage, index, count, configs, space, evaluations_, gain_us, now() - start_,
                          std::strcmp(stage, "final check") == 0 ? 0.0 : reserve_s()});
    }
    double now() const {
        return opt_.clock ? opt_.clock() : std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
    }
    // The part of the budget the whole-plan timings still to come need.
    double reserve_s() const { return whole_plan_s_ * whole_plans_left_; }
    // Whether the budget is spent (no time left for the whole-plan timings to come and, when
    // a step of the stage comes next, for a step as long as its longest so far): at the
    // recorded stop when there is one, else by the clock (and then the stop is recorded).
    bool out_of_time(bool step = true) {
        if (budget_spent_) return true;
        ++checks_;
        const double t = now();
        longest_step_ = std::max(longest_step_, t - last_check_);
        last_check_ = t;
        budget_spent_ = recorded_stop_ ? checks_ >= *recorded_stop_
                                       : t - start_ + (step ? longest_step_ : 0) > opt_.budget_s - reserve_s();
        if (budget_spent_ && !recorded_stop_) ev_.record_budget_stop(g_, initial_, stop_key_, checks_);
        return budget_spent_;
    }

    // The time of segment s with its config, once per signature and config.
    Timing time_of(const FusionPlan& p, const Segment& s) {
        const std::string key = segment_signature(g_, s) + "#" + s.config.str();
        auto it = times_.find(key);
        if (it != times_.end()) return it->second;
        ++evaluations_;
        return times_[key] = ev_.segment(g_, p, s);
    }

    // The time of segment s at the best of its configurations; `best` set to that one.
    Timing best_time(const FusionPlan& p, const Segment& s, Config& best) {
        Timing t{std::numeric_limits<double>::infinity(), 0};
        best = s.config;
        for (const Config& c : config_space(g_, s)) {
            Segment x = s;
            x.config = c;
            const Timing y = time_of(p, x);
            if (y.us < t.us) {
                t = y;
                best = c;
            }
        }
        return t;
    }

    // The segments' times summed, each GEMM's at its best configuration where `best_gemms`.
    Timing total(const FusionPlan& p, const std::vector<const Segment*>& segs, bool best_gemms = false) {
        Timing t{0, 0};
        for (const Segment* s : segs) {
            Config c;
            const Timing x = best_gemms && s->kind == SegmentKind::gemm ? best_time(p, *s, c) : time_of(p, *s);
            t.us += x.us;
            t.spread += x.spread;
        }
        return t;
    }

    void stage1(SearchResult& r) {
        const std::vector<Site> sites = find_sites(g_, opt_.sites);
        // Sites grouped by signature, in order of first occurrence; expand moves first.
        std::vector<std::string> order;
        std::map<std::string, std::vector<const Site*>> groups;
        for (int pass = 0; pass < 2; ++pass)
            for (const Site& s : sites) {
                if ((pass == 0) != (s.kind == MoveKind::expand)) continue;
                auto& grp = groups[s.signature];
                if (grp.empty()) order.push_back(s.signature);
                grp.push_back(&s);
            }
        say(fmt::format("stage 1: {} sites in {} groups", sites.size(), order.size()));
        size_t done = 0;
        for (const std::string& sig : order) {
            ++done;
            if (out_of_time()) {
                say(fmt::format("stage 1: budget spent after {} of {} groups", done - 1, order.size()));
                break;
            }
            const std::vector<const Site*>& grp = groups[sig];
            const Choices cand = with(r.choices, grp);
            if (cand == r.choices) continue;
            FusionPlan next = build_scheme(g_, cand);
            std::set<std::string> before, after;
            for (const Segment& s : r.plan.segments) before.insert(identity(s));
            for (const Segment& s : next.segments) after.insert(identity(s));
            std::vector<const Segment*> gone, made;
            for (const Segment& s : r.plan.segments)
                if (!after.count(identity(s))) gone.push_back(&s);
            for (const Segment& s : next.segments)
                if (!before.count(identity(s))) made.push_back(&s);
            if (gone.empty() && made.empty()) continue;  // nothing left for this move to change
            MoveRecord m;
            m.kind = grp.front()->kind;
            m.sites = static_cast<int>(grp.size());
            m.describe = grp.front()->describe + (grp.size() > 1 ? fmt::format(" (and {} more like it)", grp.size() - 1) : "");
            // A seize of a residual Add that a norm prologue now computes: a compete.
            if (m.kind == MoveKind::seize)
                for (const Segment* s : gone)
                    if (s->kind == SegmentKind::rownorm && s->nodes.size() > 1)
                        for (const Segment* t : made)
                            if (t->kind == SegmentKind::gemm)
                                for (int n : t->nodes)
                                    m.compete = m.compete || std::count(s->nodes.begin() + 1, s->nodes.end(), n) > 0;
            ev_.prefetch(g_, next, copies(made));
            // A move that makes a fused GEMM (kernels/gemm) is judged at the best configuration
            // of each GEMM it makes or replaces: the fused kernel's tile shapes differ in kind,
            // and the cuBLASLt GEMM it replaces is as fast as its best algorithm.
            const bool fused = std::any_of(made.begin(), made.end(),
                                           [&](const Segment* s) { return plan::fused_epilogue(fused_gemm_epilogue(g_, *s)); });
            if (fused)
                for (Segment& s : next.segments)
                    if (s.kind == SegmentKind::gemm && !before.count(identity(s))) {
                        Config c;
                        best_time(next, s, c);
                        s.config = c;
                    }
            const Timing old_t = total(r.plan, gone, fused), new_t = total(next, made);
            for (const Segment* t : made) m.made.push_back(segment_signature(g_, *t));
            m.old_us = old_t.us;
            m.new_us = new_t.us;
            const double margin = std::max(opt_.min_gain * old_t.us, old_t.spread + new_t.spread);
            m.taken = new_t.us < old_t.us - margin;
            say(fmt::format("stage 1 {}/{}: {} {}: {:.2f} -> {:.2f} us, {}", done, order.size(),
                            m.compete                   ? "compete"
                            : m.kind == MoveKind::seize ? "seize"
                                                        : "expand",
                            m.describe, m.old_us, m.new_us, m.taken ? "taken" : "rolled back"));
            if (m.taken) {
                r.choices = cand;
                r.plan = std::move(next);
                gain1_ += m.old_us - m.new_us;
            }
            r.moves.push_back(std::move(m));
            report("stage 1", static_cast<int>(done), static_cast<int>(order.size()), gain1_);
        }
    }

    void stage2(SearchResult& r) {
        // Kernels by signature: where they are and their spaces.
        struct Kernel {
            std::string signature;
            std::vector<size_t> at;  // segment indices
            std::vector<Config> space;
            std::vector<char> measured;
            std::vector<double> history;  // best time after each sample
            Config best;
            double best_us = 0, default_us = 0;
            int samples = 0;
        };
        std::vector<Kernel> ks;
        std::map<std::string, size_t> index;
        for (size_t i = 0; i < r.plan.segments.size(); ++i) {
            const Segment& s = r.plan.segments[i];
            std::vector<Config> space = config_space(g_, s);
            if (space.size() < 2) continue;
            const std::string sig = segment_signature(g_, s);
            auto [it, fresh] = index.try_emplace(sig, ks.size());
            if (fresh) ks.push_back({sig, {}, std::move(space), {}, {}, {}, 0, 0, 0});
            ks[it->second].at.push_back(i);
        }
        say(fmt::format("stage 2: {} kernels to tune", ks.size()));
        auto candidate = [&](const Kernel& k, size_t c) {
            Segment s = r.plan.segments[k.at.front()];
            s.config = k.space[c];
            return s;
        };
        int planned = 0, sampled = 0;
        auto gain2 = [&] {
            double g = gain1_;
            for (const Kernel& k : ks)
                if (std::isfinite(k.default_us) && std::isfinite(k.best_us))
                    g += static_cast<double>(k.at.size()) * (k.default_us - k.best_us);
            return g;
        };
        auto sample = [&](Kernel& k, size_t c) {
            ++k.samples;
            report("stage 2", ++sampled, std::max(planned, sampled), gain2());
            const double us = time_of(r.plan, candidate(k, c)).us;
            if (us < k.best_us) {
                k.best_us = us;
                k.best = k.space[c];
            }
            k.history.push_back(k.best_us);
        };
        // Up to n configs of k not picked before, near its best so far (marked measured).
        auto pick = [&](Kernel& k, int n) {
            std::vector<size_t> out;
            for (int i = 0; i < n; ++i) {
                const size_t c = unmeasured(k.measured, k.space, k.best);
                if (c == k.space.size()) break;
                k.measured[c] = 1;
                out.push_back(c);
            }
            return out;
        };
        // The configs of a round, picked up front so the evaluator can prepare them together.
        auto run_round = [&](const std::vector<std::vector<size_t>>& picks) {
            for (const std::vector<size_t>& p : picks) planned += static_cast<int>(p.size());
            std::vector<Segment> batch;
            for (size_t i = 0; i < ks.size(); ++i)
                for (size_t c : picks[i]) batch.push_back(candidate(ks[i], c));
            ev_.prefetch(g_, r.plan, batch);
            for (size_t i = 0; i < ks.size(); ++i)
                for (size_t c : picks[i])
                    if (!out_of_time()) sample(ks[i], c);
        };
        std::vector<std::vector<size_t>> picks(ks.size());
        for (size_t i = 0; i < ks.size(); ++i) {
            Kernel& k = ks[i];
            k.measured.assign(k.space.size(), 0);
            k.measured[0] = 1;  // the default config first
            picks[i] = {0};
            const std::vector<size_t> more = pick(k, opt_.stage2_first - 1);
            picks[i].insert(picks[i].end(), more.begin(), more.end());
            k.best_us = std::numeric_limits<double>::infinity();
        }
        {
            planned = static_cast<int>(ks.size());
            std::vector<Segment> defaults;
            for (size_t i = 0; i < ks.size(); ++i) defaults.push_back(candidate(ks[i], 0));
            ev_.prefetch(g_, r.plan, defaults);
            for (Kernel& k : ks) {
                if (!out_of_time()) sample(k, 0);
                k.default_us = k.best_us;
            }
            for (std::vector<size_t>& p : picks) p.erase(p.begin());
            run_round(picks);
        }
        int stalled = 0;
        for (int round = 1; round <= opt_.stage2_max_rounds && stalled < 3 && !out_of_time(); ++round) {
            // Reward: recent gain per sample and optimistic gain, times occurrences (TVM's gradient rule).
            std::vector<double> reward(ks.size(), 0);
            double sum = 0;
            for (size_t i = 0; i < ks.size(); ++i) {
                Kernel& k = ks[i];
                if (std::count(k.measured.begin(), k.measured.end(), 0) == 0) continue;
                const size_t n = k.history.size(), w = std::min<size_t>(3, n - 1);
                const double g1 = w ? (k.history[n - 1 - w] - k.best_us) / static_cast<double>(w) : 0;
                const double g2 = k.best_us / static_cast<double>(k.samples);
                reward[i] = static_cast<double>(k.at.size()) * (0.2 * g1 + 0.8 * g2);
                sum += reward[i];
            }
            if (sum <= 0) break;
            std::vector<double> before(ks.size());
            for (size_t i = 0; i < ks.size(); ++i) {
                before[i] = ks[i].best_us;
                picks[i] = pick(ks[i], static_cast<int>(std::ceil(opt_.stage2_batch * reward[i] / sum)));
            }
            run_round(picks);
            double gain = 0;
            for (size_t i = 0; i < ks.size(); ++i) gain += static_cast<double>(ks[i].at.size()) * (before[i] - ks[i].best_us);
            say(fmt::format("stage 2 round {}: {:.2f} us gained", round, gain));
            stalled = gain > 0 ? 0 : stalled + 1;
        }
        for (Kernel& k : ks) {
            for (size_t i : k.at) r.plan.segments[i].config = k.best;
            r.kernels.push_back({k.signature, static_cast<int>(k.at.size()), k.samples, k.best, k.default_us, k.best_us});
        }
    }

    // Every config of the opt_.sweep kernels of stage 2 with the largest occurrences × best
    // time, timed through time_of (stage 2's times reused); the plan keeps stage 2's configs.
    void sweep(SearchResult& r) {
        std::vector<const SegmentRecord*> order;
        for (const SegmentRecord& k : r.kernels)
            if (std::isfinite(k.best_us)) order.push_back(&k);
        std::stable_sort(order.begin(), order.end(), [](const SegmentRecord* a, const SegmentRecord* b) {
            return a->occurrences * a->best_us > b->occurrences * b->best_us;
        });
        if (order.size() > static_cast<size_t>(opt_.sweep)) order.resize(static_cast<size_t>(opt_.sweep));
        say(fmt::format("sweep: every config of the {} costliest of {} tuned kernels", order.size(), r.kernels.size()));
        double gain = gain1_;
        for (const SegmentRecord& k : r.kernels)
            if (std::isfinite(k.default_us) && std::isfinite(k.best_us)) gain += k.occurrences * (k.default_us - k.best_us);
        const int n = static_cast<int>(order.size());
        for (int i = 0; i < n; ++i) {
            const SegmentRecord& k = *order[static_cast<size_t>(i)];
            const auto at = std::find_if(r.plan.segments.begin(), r.plan.segments.end(),
                                         [&](const Segment& s) { return segment_signature(g_, s) == k.signature; });
            if (at == r.plan.segments.end()) continue;  // stage 2's kernels are the plan's
            const std::vector<Config> space = config_space(g_, *at);
            std::vector<Segment> todo;
            for (const Config& c : space) {
                Segment s = *at;
                s.config = c;
                todo.push_back(s);
            }
            ev_.prefetch(g_, r.plan, todo);
            SweepRecord w;
            w.signature = k.signature;
            w.kind = at->kind;
            w.node = g_.nodes[static_cast<size_t>(at->nodes.front())].name;
            w.occurrences = k.occurrences;
            w.space = static_cast<int>(space.size());
            w.stage2_samples = k.samples;
            w.stage2 = w.best = k.best;
            w.stage2_us = w.best_us = k.best_us;
            const int before = evaluations_;
            for (size_t c = 0; c < todo.size(); ++c) {
                report("sweep", i + 1, n, gain, static_cast<int>(c), w.space);
                const double us = time_of(r.plan, todo[c]).us;
                if (us < w.best_us) {
                    w.best_us = us;
                    w.best = todo[c].config;
                }
            }
            report("sweep", i + 1, n, gain, w.space, w.space);
            say(fmt::format("sweep {}/{}: {} at '{}' (x{}): {} configs ({} new), best {:.2f} us ({}), stage 2 {:.2f} us ({})",
                            i + 1, n, segment_kind_name(w.kind), w.node, w.occurrences, w.space, evaluations_ - before,
                            w.best_us, w.best.str(), w.stage2_us, w.stage2.str()));
            r.sweep.push_back(std::move(w));
        }
    }

    // An unmeasured config: most often a neighbour of the best (one field changed), else any; space.size() when none.
    size_t unmeasured(const std::vector<char>& measured, const std::vector<Config>& space, const Config& best) {
        std::vector<size_t> near, any;
        for (size_t c = 0; c < space.size(); ++c) {
            if (measured[c]) continue;
            any.push_back(c);
            const Config& x = space[c];
            const int diff = (x.block != best.block) + (x.rows != best.rows) + (x.grid != best.grid) + (x.vec != best.vec) +
                             (x.algo != best.algo);
            if (diff == 1) near.push_back(c);
        }
        if (any.empty()) return space.size();
        const std::vector<size_t>& from = !near.empty() && std::uniform_real_distribution<>(0, 1)(rng_) < 0.75 ? near : any;
        return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng_)];
    }

    const ir::Graph& g_;
    Evaluator& ev_;
    const SearchOptions& opt_;
    std::mt19937 rng_;
    std::map<std::string, Timing> times_;
    int evaluations_ = 0;
    double gain1_ = 0;
    bool budget_spent_ = false;  // the search stopped early at opt_.budget_s
    int checks_ = 0;             // budget checks so far
    std::optional<int> recorded_stop_;
    FusionPlan initial_;
    std::string stop_key_;
    const double start_;        // now() when the search began
    double whole_plan_s_ = 0;   // the estimated cost of one whole-plan timing
    int whole_plans_left_ = 1;  // whole-plan timings still to come
    double last_check_ = 0;     // now() at the last budget check
    double longest_step_ = 0;   // the longest time between two budget checks
};

}  // namespace

SearchResult search(const ir::Graph& g, Evaluator& ev, const SearchOptions& opt) { return Search(g, ev, opt).run(); }

}  // namespace stof::fusion
