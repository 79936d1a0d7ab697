// The fusion search (STOF's two stages) over a graph's decisions (fusion/choices.hpp)
// and its kernels' launch parameters, scored by an Evaluator: the live GPU
// (tune/), the offline cost model (fusion/cost_model.hpp) or, in tests, an oracle.
//
// Stage 1, boundaries: from the initial scheme, the sites of identical layers
// (one signature) are decided together; expand moves first, then seize moves
// (a seize that takes a residual Add from a norm prologue is a compete). A move
// is kept when the segments it changes take less time, by more than
// max(min_gain, the evaluator's noise), than the segments they replace;
// otherwise it is rolled back.
// Stage 2, parameters: every elementwise and row-norm kernel and GEMM (one per signature,
// weighted by how often it occurs) gets stage2_first samples of its config
// space; later rounds give stage2_batch samples to the kernels in proportion to
// their reward (recent gain per sample and best time, times occurrences), each a
// neighbour of the best config so far or an unmeasured one; the search stops at
// the budget, when every config is measured, or after 3 rounds without a gain.
// The final check times the searched plan as a whole and, when SearchOptions::cost_model_plan
// is set, the plan the offline cost model makes (--tune off's, made at this point so the
// segment times measured by then inform it; not timed again when it is the searched plan or
// the initial scheme). It keeps the fastest of the searched plan, the initial scheme and the
// cost-model plan: the initial scheme only when the searched plan is slower, the cost-model
// plan only when it is faster than both. Stage 1 takes a move only when it pays alone, so
// moves that pay only together (each within the noise) come from the cost-model plan.
// The budget bounds the whole search, its whole-plan timings included: a stage takes its
// next step (a stage-1 move, a stage-2 sample) only while there is time for a step as long
// as the longest so far and for the whole-plan timings left (the final check's one or two,
// and the one after stage 1 when asked for), each estimated as long as the initial scheme's took
// (Timing::cost_s when the evaluator knows it, else as long as its call took). Only the
// search's first step, whose length nothing foretells, can run past the budget.
#pragma once

#include "fusion/choices.hpp"
#include "fusion/fusion_plan.hpp"
#include "precision.hpp"

#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace stof::fusion {

struct Timing {
    double us = std::numeric_limits<double>::infinity();  // infinity: cannot run, or a wrong result
    double spread = 0;                                    // the measurement's noise (µs)
    double cost_s = 0;  // seconds it took to measure (also when it comes from a cache); 0: unknown or free
};

class Evaluator {
public:
    virtual ~Evaluator() = default;
    // Segment s of plan p (of graph g) run alone with s.config.
    virtual Timing segment(const ir::Graph& g, const FusionPlan& p, const Segment& s) = 0;
    // The whole plan (by default the sum of its segments).
    virtual Timing plan(const ir::Graph& g, const FusionPlan& p);
    // The segments of p the search will ask for next (an evaluator may prepare them in parallel).
    virtual void prefetch(const ir::Graph&, const FusionPlan&, const std::vector<Segment>&) {}
    // Where a search cut short by its time budget stopped (how many budget checks it made),
    // recorded for the initial scheme p and search options `what`, so that a later search
    // getting the same times stops at the same place and makes the same plan.
    virtual std::optional<int> budget_stop(const ir::Graph&, const FusionPlan&, const std::string&) { return {}; }
    virtual void record_budget_stop(const ir::Graph&, const FusionPlan&, const std::string&, int) {}
    // "measured", "cache" or "model": where the times come from.
    virtual const char* source() const = 0;
    // Where segment s's time came from, when it differs by segment (a cache).
    virtual std::string source_of(const ir::Graph&, const Segment&) const { return source(); }
};

// Where the search is, for progress displays.
struct SearchProgress {
    const char* stage = "";      // "stage 1" (boundaries), "stage 2" (parameters), "sweep", "final check"
    int index = 0, count = 0;    // step of the stage: move groups (stage 1), samples (stage 2, planned), kernels (sweep)
    int configs = 0, space = 0;  // sweep: configs of the kernel timed so far, of its space
    int evaluations = 0;         // segments timed so far
    double gain_us = 0;          // time saved so far against the initial scheme (per the evaluator)
    double elapsed_s = 0;        // since the search began
    double reserve_s = 0;        // of the budget, kept for the whole-plan timings still to come
};

struct SearchResult;

struct SearchOptions {
    bool stage1 = true, stage2 = true;
    SiteOptions sites;       // the moves the target allows beyond cuBLASLt's and the generated kernels'
                             // (the fused GEMM: fused_gemm_target)
    double min_gain = 0.02;  // a stage-1 move must save at least this fraction
    int stage2_first = 4;    // samples every kernel gets in round 0
    int stage2_batch = 16;   // samples a later round
    int stage2_max_rounds = 12;
    // Seconds the whole search may take, its whole-plan timings included; a stop recorded
    // by the evaluator replaces it.
    double budget_s = std::numeric_limits<double>::infinity();
    bool time_stage1 = true;  // time the whole plan after stage 1 too (a report; the final check needs only the others)
    // The search the offline cost model makes of g (what --tune off compiles), asked for at the
    // final check; its plan competes there with the searched plan and the initial scheme (empty:
    // no cost-model plan).
    std::function<SearchResult(const ir::Graph&)> cost_model_plan;
    int sweep = 0;  // after stage 2, time every config of this many of its costliest kernels (a report)
    unsigned seed = 1;
    std::function<void(const std::string&)> progress;  // one line per step of the search
    std::function<void(const SearchProgress&)> on_progress;
    // Seconds on a monotonic clock (default: std::chrono::steady_clock); the budget is
    // counted on it (tests pass a simulated one).
    std::function<double()> clock;
};

struct MoveRecord {
    std::string describe;  // the first site's description (and how many more)
    MoveKind kind = MoveKind::expand;
    bool compete = false;
    int sites = 0;
    double old_us = 0, new_us = 0;  // the segments the move changes, before and after
    bool taken = false;
    std::vector<std::string> made;  // signatures of the segments it formed
};

struct SegmentRecord {  // stage 2, per kernel signature
    std::string signature;
    int occurrences = 0, samples = 0;
    Config best;
    double default_us = 0, best_us = 0;
};

struct SweepRecord {  // one kernel signature of the sweep
    std::string signature;
    SegmentKind kind = SegmentKind::elementwise;
    std::string node;  // its first node's name, where it first occurs
    int occurrences = 0;
    int space = 0;           // configs in its space, every one timed
    int stage2_samples = 0;  // of them timed by stage 2 (the sweep reuses those times)
    Config stage2, best;     // stage 2's choice; the fastest config (stage 2's on a tie)
    double stage2_us = 0, best_us = 0;
};

// Which plan the final check kept.
enum class Kept { searched, initial, cost_model };
const char* kept_name(Kept k);  // "searched plan", "initial scheme", "cost-model plan"

struct SearchResult {
    FusionPlan plan;  // the plan kept
    Choices choices;  // its decisions
    std::vector<MoveRecord> moves;
    std::vector<SegmentRecord> kernels;
    std::vector<SweepRecord> sweep;  // SearchOptions::sweep's kernels, costliest first
    // Whole plans, per the evaluator: the initial scheme, after stage 1 (NaN: not timed), the
    // searched plan (after stage 2) and the cost-model plan (NaN: none) at the final check, and
    // the plan kept (the fastest of them).
    double initial_us = 0, stage1_us = 0, searched_us = 0, final_us = 0;
    double cost_model_us = std::numeric_limits<double>::quiet_NaN();
    Kept kept = Kept::searched;
    // The cost-model plan's search (SearchOptions::cost_model_plan): its moves and its segments'
    // times by segment_signature + "#" + config, what the plan records for its segments when it is kept.
    std::vector<MoveRecord> cost_model_moves;
    std::map<std::string, Timing> cost_model_times;
    int evaluations = 0;
    bool budget_spent = false;            // stopped at SearchOptions::budget_s before the search was done
    double whole_plan_s = 0;              // the estimated cost of one whole-plan timing (the budget's reserve per timing)
    std::map<std::string, Timing> times;  // segment_signature + "#" + config → its time, for every segment timed
};

// What identifies a segment's time on one GPU: the plan precision, its signature and config.
std::string segment_key(const ir::Graph& g, const Segment& s, Precision precision);

// The configs stage 2 samples for segment s (empty when it has none to tune).
std::vector<Config> config_space(const ir::Graph& g, const Segment& s);
// Whether plans for `arch` at `precision` run the fused GEMM kernels of kernels/gemm (bias +
// exact GELU, SwiGLU): compute capability 9.0, 16-bit plans.
bool fused_gemm_target(const std::string& arch, Precision precision);

SearchResult search(const ir::Graph& g, Evaluator& ev, const SearchOptions& opt);

}  // namespace stof::fusion
