// The fusion search on a deterministic cost oracle in place of the GPU: each move
// kind taken and rolled back, the reward sampler's allocation, the final check, the
// sweep of the costliest kernels (--tune-sweep) and its report in the plan.
#include "compile.hpp"
#include "compile_options.hpp"
#include "fusion/cost_model.hpp"
#include "fusion/search.hpp"
#include "oracle.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "pipeline.hpp"
#include "plan/plan_writer.hpp"
#include "test_util.hpp"
#include "tool_run.hpp"
#include "zoo_model.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <thread>

using namespace stof;
using fusion::Segment;
using fusion::SegmentKind;
using test::Oracle;

namespace {

ir::Graph pipelined(const std::string& bytes) {
    ir::Graph g = import_onnx_bytes(bytes, "", "sample");
    run_pipeline(g, {});
    return g;
}

bool has_op(const ir::Graph& g, const Segment& s, ir::Op op) {
    for (int n : s.nodes)
        if (g.nodes[static_cast<size_t>(n)].op == op) return true;
    return false;
}

// x [64, 32] · W [32, 32] + residual r [64, 32], then LayerNorm.
std::string gemm_residual_norm(std::mt19937_64& rng, bool norm) {
    test::OnnxBuilder b;
    b.input("x", onnx::TensorProto::FLOAT, {64, 32});
    b.input("r", onnx::TensorProto::FLOAT, {64, 32});
    b.initializer("w", test::random_tensor(DType::f32, {32, 32}, rng));
    b.initializer("scale", test::random_tensor(DType::f32, {32}, rng));
    b.node("MatMul", {"x", "w"}, {"h"});
    b.node("Add", {"h", "r"}, {"s"});
    if (norm) {
        b.node("LayerNormalization", {"s", "scale"}, {"y"});
        b.output("y");
    } else {
        b.output("s");
    }
    return b.bytes();
}

const fusion::MoveRecord& only_move(const fusion::SearchResult& r) {
    REQUIRE(r.moves.size() == 1);
    return r.moves.front();
}

}  // namespace

TEST_CASE("search: a seize is taken when the GEMM with the residual is faster, else rolled back", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    const ir::Graph g = pipelined(gemm_residual_norm(rng, false));
    fusion::SearchOptions opt;
    opt.stage2 = false;
    for (const bool cheap : {true, false}) {
        INFO((cheap ? "cheap" : "dear") << " residual epilogue");
        // A GEMM costs 10; its residual epilogue 1 (cheap) or 8; a separate Add kernel 5.
        Oracle o([&](const ir::Graph&, const Segment& s) {
            if (s.kind == SegmentKind::gemm) return 10.0 + (s.nodes.size() > 1 ? (cheap ? 1.0 : 8.0) : 0.0);
            return 5.0;
        });
        const fusion::SearchResult r = fusion::search(g, o, opt);
        const fusion::MoveRecord& m = only_move(r);
        CHECK(m.kind == fusion::MoveKind::seize);
        CHECK(!m.compete);
        CHECK(m.taken == cheap);
        CHECK(m.old_us == 15.0);
        CHECK(m.new_us == (cheap ? 11.0 : 18.0));
        CHECK(r.plan.segments.size() == (cheap ? 1u : 2u));
        CHECK(r.final_us == (cheap ? 11.0 : 15.0));
    }
}

TEST_CASE("search: an expand (norm prologue) and a compete (the GEMM takes the residual from the norm)", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    const ir::Graph g = pipelined(gemm_residual_norm(rng, true));
    fusion::SearchOptions opt;
    opt.stage2 = false;
    for (const bool prologue_pays : {true, false})
        for (const bool gemm_wins : {true, false}) {
            INFO("prologue pays " << prologue_pays << ", GEMM wins the compete " << gemm_wins);
            Oracle o([&](const ir::Graph&, const Segment& s) {
                if (s.kind == SegmentKind::gemm) return 10.0 + (s.nodes.size() > 1 ? (gemm_wins ? 0.5 : 6.0) : 0.0);
                if (s.kind == SegmentKind::rownorm) return 4.0 + (s.nodes.size() > 1 ? (prologue_pays ? 1.0 : 9.0) : 0.0);
                return 5.0;  // the Add kernel
            });
            const fusion::SearchResult r = fusion::search(g, o, opt);
            // Expand moves come first: the prologue, then its storing variant (a no-op once
            // the Add is inlined), then the GEMM's seize.
            std::vector<std::string> kinds;
            for (const fusion::MoveRecord& m : r.moves)
                kinds.push_back(m.compete ? "compete" : m.kind == fusion::MoveKind::seize ? "seize" : "expand");
            REQUIRE(!r.moves.empty());
            CHECK(r.moves.front().kind == fusion::MoveKind::expand);
            CHECK(r.moves.front().taken == prologue_pays);
            const fusion::MoveRecord& last = r.moves.back();
            CHECK(last.kind == fusion::MoveKind::seize);
            CHECK(last.compete == prologue_pays);  // the Add is the norm's when the GEMM wants it
            const bool gemm_has_add = std::any_of(r.plan.segments.begin(), r.plan.segments.end(), [&](const Segment& s) {
                return s.kind == SegmentKind::gemm && has_op(g, s, ir::Op::Add);
            });
            // GEMM + residual costs 10.5 or 16; the alternatives 10 + (5 prologue or 5 + 4 kernel).
            CHECK(gemm_has_add == gemm_wins);
            CHECK(last.taken == gemm_wins);
        }
}

namespace {

// `exps` chains x_i → Exp → Softmax, and z → Neg: the Exp kernels are one kernel
// signature occurring `exps` times, the Softmax (row-norm) kernels another.
ir::Graph exp_softmax_neg(int exps) {
    test::OnnxBuilder b;
    for (int i = 0; i < exps; ++i) {
        const std::string k = std::to_string(i);
        b.input("x" + k, onnx::TensorProto::FLOAT, {256, 64});
        b.node("Exp", {"x" + k}, {"e" + k});
        b.node("Softmax", {"e" + k}, {"p" + k});
        b.output("p" + k);
    }
    b.input("z", onnx::TensorProto::FLOAT, {256, 64});
    b.node("Neg", {"z"}, {"n"});
    b.output("n");
    return pipelined(b.bytes());
}

}  // namespace

TEST_CASE("search: stage 2 finds the configs that gain and samples kernels by their weight", "[cpu][fusion]") {
    // Block 512 helps both elementwise kernels, a grid of 4096 helps Exp.
    Oracle o([&](const ir::Graph& gr, const Segment& s) {
        if (s.kind != SegmentKind::elementwise) return 3.0;
        const double t = s.config.block == 512 ? 8.0 : 10.0;
        return has_op(gr, s, ir::Op::Exp) && s.config.grid == 4096 ? t - 3.0 : t;
    });
    fusion::SearchOptions opt;
    opt.stage1 = false;
    opt.stage2_first = 2;
    opt.stage2_batch = 8;
    auto kernel = [](const fusion::SearchResult& r, const char* op) {
        for (const fusion::SegmentRecord& k : r.kernels)
            if (k.signature.rfind(std::string("elementwise ") + op, 0) == 0) return k;
        FAIL("no " << op << " kernel");
        throw;
    };
    const ir::Graph one = exp_softmax_neg(1);
    const fusion::SearchResult r = fusion::search(one, o, opt);
    const fusion::SegmentRecord exp = kernel(r, "Exp"), neg = kernel(r, "Neg");
    CHECK(exp.best_us == 5.0);
    CHECK((exp.best.block == 512 && exp.best.grid == 4096));
    CHECK(neg.best_us == 8.0);
    CHECK(exp.default_us == 10.0);
    const size_t space = fusion::config_space(one, r.plan.segments.front()).size();
    CHECK(static_cast<size_t>(exp.samples) <= space);
    for (const Segment& s : r.plan.segments)
        if (has_op(one, s, ir::Op::Exp)) CHECK(s.config == exp.best);
    // Four Exp kernels of one signature: tuned once, sampled at least as much as the Neg kernel.
    const fusion::SearchResult four = fusion::search(exp_softmax_neg(4), o, opt);
    CHECK(kernel(four, "Exp").occurrences == 4);
    CHECK(kernel(four, "Exp").samples >= kernel(four, "Neg").samples);
}

TEST_CASE("search: the final check keeps the initial scheme when the whole plan is slower", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    const ir::Graph g = pipelined(gemm_residual_norm(rng, false));
    // Segments alone say the fused GEMM wins; the whole plan, measured together, says it loses.
    class Misleading final : public fusion::Evaluator {
    public:
        fusion::Timing segment(const ir::Graph&, const fusion::FusionPlan&, const Segment& s) override {
            return {s.kind == SegmentKind::gemm ? (s.nodes.size() > 1 ? 11.0 : 10.0) : 5.0, 0};
        }
        fusion::Timing plan(const ir::Graph&, const fusion::FusionPlan& p) override {
            return {p.segments.size() == 1 ? 30.0 : 15.0, 0};
        }
        const char* source() const override { return "oracle"; }
    } ev;
    const fusion::SearchResult r = fusion::search(g, ev, {});
    CHECK(only_move(r).taken);
    CHECK(r.kept == fusion::Kept::initial);
    CHECK(r.plan.segments.size() == 2);
    CHECK(r.final_us == r.initial_us);
    CHECK(r.searched_us == 30.0);
    CHECK(std::isnan(r.cost_model_us));
}

namespace {

// Segments alone say the GEMM with the residual does not pay (15 us, as the GEMM and the Add
// kernel apart); the whole plan, measured together, takes `one_kernel` us when it is one kernel.
class Together final : public fusion::Evaluator {
public:
    explicit Together(double one_kernel) : one_kernel_(one_kernel) {}
    fusion::Timing segment(const ir::Graph&, const fusion::FusionPlan&, const Segment& s) override {
        return {s.kind == SegmentKind::gemm ? (s.nodes.size() > 1 ? 15.0 : 10.0) : 5.0, 0};
    }
    fusion::Timing plan(const ir::Graph& g, const fusion::FusionPlan& p) override {
        ++plans;
        return p.segments.size() == 1 ? fusion::Timing{one_kernel_, 0} : fusion::Evaluator::plan(g, p);
    }
    const char* source() const override { return "measured"; }
    int plans = 0;

private:
    double one_kernel_;
};

// The cost model's search, on an oracle that finds the GEMM with the residual cheap (11 us)
// or, with `cheap` false, as dear as the Together oracle does.
std::function<fusion::SearchResult(const ir::Graph&)> cost_model_plan(bool cheap) {
    return [cheap](const ir::Graph& g) {
        Oracle model([cheap](const ir::Graph&, const Segment& s) {
            return s.kind == SegmentKind::gemm ? (s.nodes.size() > 1 ? (cheap ? 11.0 : 15.0) : 10.0) : 5.0;
        });
        fusion::SearchOptions opt;
        opt.stage2 = false;
        return fusion::search(g, model, opt);
    };
}

bool said(const std::vector<std::string>& lines, const std::string& what) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(what) != std::string::npos; });
}

}  // namespace

TEST_CASE("search: the final check keeps the cost-model plan only when it is faster as a whole", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    const ir::Graph g = pipelined(gemm_residual_norm(rng, false));
    const bool faster = GENERATE(true, false);
    INFO("the cost-model plan (one kernel) is " << (faster ? "faster" : "slower") << " as a whole");
    Together ev(faster ? 9.0 : 20.0);
    std::vector<std::string> lines;
    fusion::SearchOptions opt;
    opt.stage2 = false;
    opt.time_stage1 = false;  // as --tune fast
    opt.cost_model_plan = cost_model_plan(true);
    opt.progress = [&](const std::string& l) { lines.push_back(l); };
    const fusion::SearchResult r = fusion::search(g, ev, opt);
    INFO(fmt::format("{}", fmt::join(lines, "\n")));
    CHECK_FALSE(only_move(r).taken);  // the search alone keeps two kernels
    REQUIRE(r.cost_model_moves.size() == 1);
    CHECK(r.cost_model_moves.front().taken);
    CHECK(ev.plans == 3);  // the initial scheme, the searched plan, the cost-model plan
    CHECK(r.initial_us == 15.0);
    CHECK(r.searched_us == 15.0);
    CHECK(r.cost_model_us == (faster ? 9.0 : 20.0));
    if (faster) {
        CHECK(r.kept == fusion::Kept::cost_model);
        CHECK(r.plan.segments.size() == 1);
        CHECK(r.final_us == 9.0);
        CHECK(r.choices == cost_model_plan(true)(g).choices);
        CHECK(r.choices != fusion::Choices{});
        CHECK(said(lines, "final check: the cost-model plan (9.0 us) is faster than the searched plan (15.0 us)"));
        CHECK(said(lines, "final check: keeping the cost-model plan (9.0 us)"));
    } else {
        CHECK(r.kept == fusion::Kept::searched);
        CHECK(r.plan.segments.size() == 2);
        CHECK(r.final_us == 15.0);
        CHECK(r.choices == fusion::Choices{});
        CHECK(said(lines, "final check: the cost-model plan (20.0 us) is not faster than the searched plan (15.0 us)"));
        CHECK(said(lines, "final check: keeping the searched plan (15.0 us)"));
    }
}

TEST_CASE("search: a cost-model plan that is the searched plan is not timed again", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    const ir::Graph g = pipelined(gemm_residual_norm(rng, false));
    Together ev(9.0);
    std::vector<std::string> lines;
    fusion::SearchOptions opt;
    opt.stage2 = false;
    opt.time_stage1 = false;                       // as --tune fast
    opt.cost_model_plan = cost_model_plan(false);  // it too keeps two kernels
    opt.progress = [&](const std::string& l) { lines.push_back(l); };
    const fusion::SearchResult r = fusion::search(g, ev, opt);
    CHECK(ev.plans == 2);
    CHECK(r.kept == fusion::Kept::searched);
    CHECK(r.cost_model_us == r.searched_us);
    CHECK(said(lines, "the cost-model plan (15.0 us, the searched plan) is not faster"));
}

TEST_CASE("compile: a kept cost-model plan's segments are recorded as the cost model's", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    const std::string bytes = gemm_residual_norm(rng, false);
    const bool faster = GENERATE(true, false);
    INFO("the cost-model plan is " << (faster ? "faster" : "slower") << " as a whole");
    ir::Graph g = import_onnx_bytes(bytes, "", "sample");
    Together ev(faster ? 9.0 : 20.0);
    CompileOptions opt = test::compile_options(Precision::fp32);
    opt.search.stage2 = false;
    opt.search.time_stage1 = false;
    opt.search.cost_model_plan = cost_model_plan(true);
    opt.evaluator = &ev;
    const plan::Plan p = compile_model(g, opt);
    std::vector<const plan::SegmentInfo*> steps;
    for (const plan::SegmentInfo& s : p.segments)
        if (s.kind != "view") steps.push_back(&s);
    if (faster) {
        REQUIRE(steps.size() == 1);
        CHECK(steps[0]->source == "model");
        CHECK(steps[0]->time_us == 11.0f);  // the cost model's time, not the searched plan's
        CHECK(steps[0]->moves.find("seize") != std::string::npos);
    } else {
        REQUIRE(steps.size() == 2);
        for (const plan::SegmentInfo* s : steps) {
            CHECK(s->source == "measured");
            CHECK(s->moves.empty());
        }
    }
}

TEST_CASE("search: with the offline cost model every zoo model reaches the fused scheme's steps", "[cpu][fusion]") {
    for (const char* name : {"bert-dynamo", "gpt2-dynamo", "llama-dynamo", "t5-dynamo", "vit-dynamo"}) {
        INFO(name);
        const ir::Graph g = test::zoo_graph(name, Precision::fp16);
        fusion::CostModel model(Precision::fp16);
        const fusion::SearchResult r = fusion::search(g, model, {});
        auto steps = [](const fusion::FusionPlan& p) {
            return std::count_if(p.segments.begin(), p.segments.end(),
                                 [](const Segment& s) { return s.kind != SegmentKind::view; });
        };
        CHECK(steps(r.plan) == steps(fusion::fused_scheme(g)));
        CHECK(r.final_us < r.initial_us);
        CHECK(r.kept == fusion::Kept::searched);
    }
}

TEST_CASE("search: a spent budget stops the search and says so in the result", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    const ir::Graph g = pipelined(gemm_residual_norm(rng, true));
    fusion::CostModel model(Precision::fp16);
    fusion::SearchOptions opt;
    CHECK_FALSE(fusion::search(g, model, opt).budget_spent);
    opt.budget_s = 0;
    const fusion::SearchResult r = fusion::search(g, model, opt);
    CHECK(r.budget_spent);
    CHECK(r.moves.empty());
}

TEST_CASE("search: a search cut short by its budget stops at the same place when its stop is recorded", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    const ir::Graph g = pipelined(gemm_residual_norm(rng, true));
    // The oracle's times from a fixed function; it keeps the stops the search records, and
    // takes `delay` to answer (the first search runs out of time, the later ones would not).
    class Recording final : public fusion::Evaluator {
    public:
        fusion::Timing segment(const ir::Graph&, const fusion::FusionPlan&, const Segment& s) override {
            std::this_thread::sleep_for(delay);
            if (s.kind == SegmentKind::view) return {0, 0};
            return {10.0 + static_cast<double>(s.nodes.size()) + 0.5 * s.config.algo + 0.01 * s.config.block, 0};
        }
        std::optional<int> budget_stop(const ir::Graph&, const fusion::FusionPlan&, const std::string& what) override {
            auto it = stops.find(what);
            return it == stops.end() ? std::nullopt : std::optional<int>(it->second);
        }
        void record_budget_stop(const ir::Graph&, const fusion::FusionPlan&, const std::string& what, int checks) override {
            stops[what] = checks;
        }
        const char* source() const override { return "oracle"; }
        std::chrono::milliseconds delay{0};
        std::map<std::string, int> stops;
    } ev;
    fusion::SearchOptions opt;
    opt.budget_s = 0.01;
    ev.delay = std::chrono::milliseconds(3);
    const fusion::SearchResult cut = fusion::search(g, ev, opt);
    REQUIRE(cut.budget_spent);
    REQUIRE(ev.stops.size() == 1);

    ev.delay = std::chrono::milliseconds(0);
    const fusion::SearchResult again = fusion::search(g, ev, opt);
    CHECK(again.budget_spent);
    CHECK(again.evaluations == cut.evaluations);
    CHECK(again.choices == cut.choices);
    REQUIRE(again.plan.segments.size() == cut.plan.segments.size());
    for (size_t i = 0; i < cut.plan.segments.size(); ++i) CHECK(again.plan.segments[i].config == cut.plan.segments[i].config);

    ev.stops.clear();  // without the record (and with time enough) the same search runs to its end
    opt.budget_s = 60;
    const fusion::SearchResult whole = fusion::search(g, ev, opt);
    CHECK_FALSE(whole.budget_spent);
    CHECK(whole.evaluations > cut.evaluations);
}

TEST_CASE("search: the budget covers the whole-plan timings; the stages stop in time for the final check", "[cpu][fusion]") {
    std::mt19937_64 rng = test::make_rng();
    const ir::Graph g = pipelined(gemm_residual_norm(rng, true));
    // The oracle on a simulated clock: a segment timing takes 1 s, a whole-plan timing 10 s.
    class Clocked final : public fusion::Evaluator {
    public:
        fusion::Timing segment(const ir::Graph&, const fusion::FusionPlan&, const Segment& s) override {
            if (!in_plan_) clock += 1;
            if (s.kind == SegmentKind::view) return {0, 0};
            return {10.0 + static_cast<double>(s.nodes.size()) + 0.5 * s.config.algo + 0.01 * s.config.block, 0};
        }
        fusion::Timing plan(const ir::Graph& g, const fusion::FusionPlan& p) override {
            in_plan_ = true;
            const fusion::Timing t = fusion::Evaluator::plan(g, p);
            in_plan_ = false;
            clock += 10;
            ++plans;
            return t;
        }
        const char* source() const override { return "oracle"; }
        double clock = 0;
        int plans = 0;

    private:
        bool in_plan_ = false;
    } ev;
    // --tune fast (the final check after stage 2) and full (also a whole-plan timing after
    // stage 1), each with and without a cost-model plan to time at the final check.
    const bool time_stage1 = GENERATE(false, true);
    const bool cost_model = GENERATE(false, true);
    INFO("time_stage1 " << time_stage1 << ", cost-model plan " << cost_model);
    const int timings = 2 + time_stage1 + cost_model;
    fusion::SearchOptions opt;
    opt.time_stage1 = time_stage1;
    if (cost_model)  // a plan that is neither the initial scheme nor the searched one (a config of neither)
        opt.cost_model_plan = [](const ir::Graph& gr) {
            fusion::SearchResult m;
            m.plan = fusion::initial_scheme(gr);
            m.plan.segments.front().config.block = 1024;
            return m;
        };
    opt.clock = [&] { return ev.clock; };
    std::vector<fusion::SearchProgress> reports;
    opt.on_progress = [&](const fusion::SearchProgress& p) { reports.push_back(p); };

    const fusion::SearchResult whole = fusion::search(g, ev, opt);
    const double needed = ev.clock;
    REQUIRE_FALSE(whole.budget_spent);
    REQUIRE(ev.plans == timings);
    REQUIRE(whole.evaluations > 8);
    CHECK(needed == 10 * timings + whole.evaluations);
    CHECK(whole.whole_plan_s == 10);

    // A budget that covers everything and a step as long as the longest (a move's segments): the same search.
    opt.budget_s = needed + 10;
    ev.clock = 0;
    ev.plans = 0;
    const fusion::SearchResult enough = fusion::search(g, ev, opt);
    CHECK_FALSE(enough.budget_spent);
    CHECK(enough.evaluations == whole.evaluations);
    CHECK(ev.clock == needed);

    // Budgets that cut the stages short (after their first step): the final check still runs,
    // and within the budget.
    for (const double budget : {needed, needed - 5, 10.0 * timings + 10}) {
        INFO("budget " << budget);
        opt.budget_s = budget;
        ev.clock = 0;
        ev.plans = 0;
        reports.clear();
        const fusion::SearchResult cut = fusion::search(g, ev, opt);
        CHECK(cut.budget_spent);
        // The initial scheme and the final check's, the one after stage 1 when time allows.
        CHECK(ev.plans >= 2 + cost_model);
        CHECK(ev.plans <= timings);
        CHECK(std::isfinite(cut.final_us));
        CHECK(ev.clock <= budget);
        CHECK(cut.evaluations < whole.evaluations);
        REQUIRE_FALSE(reports.empty());
        CHECK(reports.back().reserve_s == 0);  // the final check's own report
        for (const fusion::SearchProgress& p : reports) {
            if (std::string(p.stage) == "stage 1") CHECK(p.reserve_s == 10 * (timings - 1));
            if (std::string(p.stage) == "stage 2") CHECK(p.reserve_s == 10 * (1 + cost_model));
        }
    }
}

namespace {

// Each elementwise kernel has one fastest config (block 128, grid 32768, vector
// accesses): Exp 5 us there (x4: 20 us of the plan), Neg 8 us; every other config is
// slower by 1 us and more. Softmax takes 3 us whatever its config (x4: 12 us).
double sweep_oracle(const ir::Graph& g, const Segment& s) {
    if (s.kind != SegmentKind::elementwise) return 3.0;
    const fusion::Config& c = s.config;
    const bool fastest = c.block == 128 && c.grid == 32768 && c.vec == 1;
    const double penalty = fastest ? 0 : 1 + 0.01 * c.block / 128 + 0.001 * c.grid / 1024 + 0.1 * c.vec;
    return (has_op(g, s, ir::Op::Exp) ? 5.0 : 8.0) + penalty;
}

const fusion::SegmentRecord& kernel_of(const fusion::SearchResult& r, const std::string& signature) {
    for (const fusion::SegmentRecord& k : r.kernels)
        if (k.signature == signature) return k;
    FAIL("no stage-2 kernel " << signature);
    throw;
}

}  // namespace

TEST_CASE("sweep: every config of the costliest kernels timed once, the true fastest found, the plan unchanged",
          "[cpu][fusion]") {
    const ir::Graph g = exp_softmax_neg(4);
    const bool thorough = GENERATE(false, true);  // stage 2 times only the defaults, or samples as --tune fast does
    INFO("stage 2 samples beyond the defaults: " << thorough);
    fusion::SearchOptions opt;
    opt.stage1 = false;
    opt.stage2_first = thorough ? 4 : 1;
    opt.stage2_batch = 8;
    opt.stage2_max_rounds = thorough ? 2 : 0;
    Oracle plain(sweep_oracle);
    const fusion::SearchResult base = fusion::search(g, plain, opt);
    opt.sweep = 2;
    Oracle o(sweep_oracle);
    const fusion::SearchResult r = fusion::search(g, o, opt);

    // Costliest by occurrences x stage 2's time: Exp (4 x 5..7.2 us), then Softmax (4 x 3);
    // Neg (8..10.2 us) is dearer one by one but occurs once.
    REQUIRE(r.sweep.size() == 2);
    CHECK(r.sweep[0].kind == SegmentKind::elementwise);
    CHECK(r.sweep[0].signature.rfind("elementwise Exp", 0) == 0);
    CHECK(r.sweep[0].occurrences == 4);
    CHECK(r.sweep[1].kind == SegmentKind::rownorm);
    CHECK(r.sweep[1].occurrences == 4);

    for (const fusion::SweepRecord& w : r.sweep) {
        INFO(w.signature);
        const Segment* at = nullptr;
        for (const Segment& s : r.plan.segments)
            if (fusion::segment_signature(g, s) == w.signature) at = &s;
        REQUIRE(at != nullptr);
        const std::vector<fusion::Config> space = fusion::config_space(g, *at);
        CHECK(w.space == static_cast<int>(space.size()));
        // Every config of the space timed exactly once in the whole search (stage 2's reused).
        double fastest = std::numeric_limits<double>::infinity();
        for (const fusion::Config& c : space) {
            Segment s = *at;
            s.config = c;
            CHECK(o.timed[w.signature + "#" + c.str()] == 1);
            fastest = std::min(fastest, sweep_oracle(g, s));
        }
        int timed = 0;
        for (const auto& [key, n] : o.timed) timed += key.rfind(w.signature + "#", 0) == 0 ? n : 0;
        CHECK(timed == w.space);
        CHECK(w.best_us == fastest);
        // Stage 2's choice and time as stage 2 reported them.
        const fusion::SegmentRecord& k = kernel_of(r, w.signature);
        CHECK(w.stage2 == k.best);
        CHECK(w.stage2_us == k.best_us);
        CHECK(w.stage2_samples == k.samples);
        CHECK(w.stage2_samples <= w.space);
    }
    const fusion::SweepRecord& exp = r.sweep[0];
    CHECK(exp.best == fusion::Config{128, 0, 32768, 1});
    CHECK(exp.best_us == 5.0);
    if (!thorough) {  // stage 2 kept the default: 5 + 1 slower than the sweep's best
        CHECK(exp.stage2 == fusion::Config{});
        CHECK(exp.stage2_us == 6.0);
        CHECK(exp.stage2_us / exp.best_us == Catch::Approx(1.2));
    }
    // Softmax is as fast in every config: the sweep keeps stage 2's choice.
    CHECK(r.sweep[1].best == r.sweep[1].stage2);
    CHECK(r.sweep[1].best_us == 3.0);

    // The sweep is a report: the same plan and whole-plan times as without it.
    REQUIRE(r.plan.segments.size() == base.plan.segments.size());
    for (size_t i = 0; i < r.plan.segments.size(); ++i) CHECK(r.plan.segments[i].config == base.plan.segments[i].config);
    CHECK(r.final_us == base.final_us);
    CHECK(r.evaluations > base.evaluations);
    CHECK(base.sweep.empty());
}

TEST_CASE("sweep: the plan records it, stofc inspect shows it, --tune-sweep needs --tune full", "[cpu][fusion]") {
    ir::Graph g = exp_softmax_neg(2);
    Oracle o(sweep_oracle);
    CompileOptions opt = test::compile_options(Precision::fp32);
    opt.search.stage1 = false;
    opt.search.stage2_first = 1;
    opt.search.stage2_max_rounds = 0;
    opt.search.sweep = 1;
    opt.evaluator = &o;
    const plan::Plan p = compile_model(g, opt);
    int swept = 0;
    for (const plan::SegmentInfo& s : p.segments) {
        if (s.sweep_space == 0) {
            CHECK(s.sweep_us == -1);
            CHECK(s.sweep_config.empty());
            continue;
        }
        ++swept;
        CHECK(s.kind == "elementwise");
        CHECK(s.sweep_space == 24);
        CHECK(s.sweep_us == 5.0f);
        CHECK(s.sweep_config == "block=128,grid=32768,vec=1");
        CHECK(s.stage2_us == 6.0f);
        CHECK(s.stage2_config == "default");
        CHECK(s.config == s.stage2_config);  // the plan keeps stage 2's choice
    }
    CHECK(swept == 2);  // both Exp segments: one kernel signature

    const std::string dir = test::fresh_dir("fusion/sweep");
    plan::write_plan(p, dir + "/sweep.plan");
    const test::ToolResult js = test::run_stofc({"inspect", "--json", dir + "/sweep.plan"});
    INFO(js.err);
    REQUIRE(js.rc == 0);
    const nlohmann::json j = nlohmann::json::parse(js.out);
    int shown = 0;
    for (const nlohmann::json& s : j["segments"]) {
        if (!s.contains("sweep")) continue;
        ++shown;
        CHECK(s["sweep"]["space"] == 24);
        CHECK(s["sweep"]["best_us"] == 5.0);
        CHECK(s["sweep"]["config"] == "block=128,grid=32768,vec=1");
        CHECK(s["sweep"]["stage2_us"] == 6.0);
        CHECK(s["sweep"]["stage2_over_sweep"].get<double>() == Catch::Approx(1.2));
    }
    CHECK(shown == 2);
    const test::ToolResult text = test::run_stofc({"inspect", dir + "/sweep.plan"});
    REQUIRE(text.rc == 0);
    CHECK(text.out.find("sweep of 24 configs: best 5.00 us (block=128,grid=32768,vec=1); stage 2 6.00 us (default): "
                        "1.200x") != std::string::npos);

    // Without --tune full: one line, whatever the GPU.
    const std::string model = test::source_dir() + "/models/bert-torchscript/model.onnx";
    for (const std::vector<std::string>& tune :
         std::vector<std::vector<std::string>>{{}, {"--tune", "fast"}, {"--tune", "off"}}) {
        std::vector<std::string> args = {"compile", model, "-o", dir + "/x.plan", "--tune-sweep", "3"};
        args.insert(args.end(), tune.begin(), tune.end());
        const test::ToolResult bad = test::run_stofc(args);
        INFO(bad.err);
        CHECK(bad.rc == 1);
        CHECK(bad.err.rfind("stofc: error: --tune-sweep needs --tune full", 0) == 0);
        CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
    }
    const test::ToolResult negative = test::run_stofc(
        {"compile", model, "-o", dir + "/x.plan", "--tune", "full", "--tune-sweep", "-1"});
    CHECK(negative.rc == 1);
    CHECK(negative.err.find("--tune-sweep -1") != std::string::npos);
    CHECK(!std::filesystem::exists(dir + "/x.plan"));
}
