// The arena planner: tensors alive at the same step never share bytes, inputs
// and outputs keep ranges of their own, dead tensors' bytes are reused, aliases
// share their base's storage and extend its lifetime.
#include "codegen/memory_plan.hpp"
#include "test_util.hpp"

#include <algorithm>
#include <limits>

using namespace stof;

namespace {

int32_t add(plan::Plan& p, int64_t floats, plan::TensorRole role = plan::TensorRole::intermediate) {
    plan::TensorDesc t;
    t.name = "t" + std::to_string(p.tensors.size());
    t.dtype = DType::f32;
    t.shape = {floats};
    t.role = role;
    p.tensors.push_back(t);
    return static_cast<int32_t>(p.tensors.size() - 1);
}

// A step reading src and writing dst.
void copy(plan::Plan& p, int32_t src, int32_t dst) {
    plan::Step s;
    s.kind = plan::StepKind::copy;
    s.copy.src = src;
    s.copy.dst = dst;
    s.copy.bytes = std::min(p.tensors[static_cast<size_t>(src)].bytes(), p.tensors[static_cast<size_t>(dst)].bytes());
    p.steps.push_back(s);
}

// Checks the layout against its contract, with lifetimes computed here from the steps.
void check_layout(const plan::Plan& p, const std::vector<int32_t>& alias_of) {
    const size_t n = p.tensors.size();
    auto base = [&](size_t t) {
        while (alias_of[t] >= 0) t = static_cast<size_t>(alias_of[t]);
        return t;
    };
    std::vector<int> first(n, std::numeric_limits<int>::max()), last(n, -1);
    for (size_t i = 0; i < p.steps.size(); ++i)
        for (int32_t t : plan::step_tensors(p.steps[i])) {
            first[base(static_cast<size_t>(t))] = std::min(first[base(static_cast<size_t>(t))], static_cast<int>(i));
            last[base(static_cast<size_t>(t))] = std::max(last[base(static_cast<size_t>(t))], static_cast<int>(i));
        }
    auto pinned = [&](size_t t) { return p.tensors[t].role != plan::TensorRole::intermediate; };
    for (size_t a = 0; a < n; ++a) {
        const plan::TensorDesc& ta = p.tensors[a];
        INFO("tensor " << ta.name);
        CHECK(ta.offset % plan::kAlignment == 0);
        CHECK(ta.offset + ta.bytes() <= p.arena_bytes);
        if (alias_of[a] >= 0) {
            CHECK(ta.offset == p.tensors[base(a)].offset);
            continue;
        }
        for (size_t b = a + 1; b < n; ++b) {
            if (alias_of[b] >= 0) continue;
            const plan::TensorDesc& tb = p.tensors[b];
            const bool live_together = pinned(a) || pinned(b) || (first[a] <= last[b] && first[b] <= last[a]);
            const bool disjoint = ta.offset + ta.bytes() <= tb.offset || tb.offset + tb.bytes() <= ta.offset;
            INFO("and " << tb.name);
            if (live_together) CHECK(disjoint);
        }
    }
}

uint64_t aligned(uint64_t bytes) { return (bytes + plan::kAlignment - 1) / plan::kAlignment * plan::kAlignment; }

}  // namespace

TEST_CASE("memory plan: a chain reuses the bytes of tensors no later step reads", "[cpu][codegen]") {
    plan::Plan p;
    const int32_t x = add(p, 1000, plan::TensorRole::input), a = add(p, 4096), b = add(p, 4096), c = add(p, 4096),
                  y = add(p, 10, plan::TensorRole::output);
    copy(p, x, a);  // step 0
    copy(p, a, b);  // step 1
    copy(p, b, c);  // step 2: a is dead
    copy(p, c, y);  // step 3
    const std::vector<int32_t> no_alias(p.tensors.size(), -1);
    codegen::plan_memory(p, no_alias);
    check_layout(p, no_alias);
    CHECK(p.tensors[static_cast<size_t>(c)].offset == p.tensors[static_cast<size_t>(a)].offset);
    CHECK(p.arena_bytes == aligned(4000) + aligned(40) + 2 * aligned(4 * 4096));
}

TEST_CASE("memory plan: an alias shares its base's bytes and keeps the base alive", "[cpu][codegen]") {
    plan::Plan p;
    const int32_t x = add(p, 64, plan::TensorRole::input), a = add(p, 4096), b = add(p, 4096), c = add(p, 4096),
                  view = add(p, 4096), y = add(p, 64, plan::TensorRole::output);
    copy(p, x, a);
    copy(p, a, b);
    copy(p, b, c);
    copy(p, view, y);  // reads a through its alias: a stays alive until here
    std::vector<int32_t> alias_of(p.tensors.size(), -1);
    alias_of[static_cast<size_t>(view)] = a;
    codegen::plan_memory(p, alias_of);
    check_layout(p, alias_of);
    CHECK(p.tensors[static_cast<size_t>(view)].offset == p.tensors[static_cast<size_t>(a)].offset);
    CHECK(p.tensors[static_cast<size_t>(c)].offset != p.tensors[static_cast<size_t>(a)].offset);
}

TEST_CASE("memory plan: random step lists never overlap live tensors", "[cpu][codegen]") {
    auto rng = test::make_rng();
    for (int trial = 0; trial < 200; ++trial) {
        plan::Plan p;
        const int inputs = 1 + static_cast<int>(rng() % 3), middles = 2 + static_cast<int>(rng() % 20);
        std::vector<int32_t> live;
        for (int i = 0; i < inputs; ++i)
            live.push_back(add(p, 1 + static_cast<int64_t>(rng() % 5000), plan::TensorRole::input));
        for (int i = 0; i < middles; ++i) {
            const int32_t t = add(p, 1 + static_cast<int64_t>(rng() % 5000));
            copy(p, live[rng() % live.size()], t);
            live.push_back(t);
        }
        const int32_t y = add(p, 1 + static_cast<int64_t>(rng() % 100), plan::TensorRole::output);
        copy(p, live[rng() % live.size()], y);
        std::vector<int32_t> alias_of(p.tensors.size(), -1);
        if (rng() % 2) {  // a later intermediate viewing an earlier one (same shape)
            const size_t i = static_cast<size_t>(inputs) + rng() % static_cast<size_t>(middles - 1);
            const size_t j = i + 1 + rng() % (static_cast<size_t>(inputs + middles) - i - 1);
            p.tensors[static_cast<size_t>(live[j])].shape = p.tensors[static_cast<size_t>(live[i])].shape;
            alias_of[static_cast<size_t>(live[j])] = live[i];
        }
        codegen::plan_memory(p, alias_of);
        INFO("trial " << trial);
        check_layout(p, alias_of);
    }
}
