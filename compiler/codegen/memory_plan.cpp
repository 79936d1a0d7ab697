#include "codegen/memory_plan.hpp"

#include "stof/error.hpp"

#include <algorithm>
#include <limits>

namespace stof::codegen {

namespace {
uint64_t align(uint64_t x) { return (x + plan::kAlignment - 1) / plan::kAlignment * plan::kAlignment; }
}  // namespace

void plan_memory(plan::Plan& p, const std::vector<int32_t>& alias_of) {
    const size_t n = p.tensors.size();
    auto base_of = [&](int32_t t) {
        while (alias_of[static_cast<size_t>(t)] >= 0) t = alias_of[static_cast<size_t>(t)];
        return t;
    };
    constexpr int kNever = std::numeric_limits<int>::max();
    std::vector<int> first(n, kNever), last(n, -1);
    for (size_t i = 0; i < p.steps.size(); ++i)
        for (int32_t t : plan::step_tensors(p.steps[i])) {
            const auto b = static_cast<size_t>(base_of(t));
            first[b] = std::min(first[b], static_cast<int>(i));
            last[b] = std::max(last[b], static_cast<int>(i));
        }

    uint64_t top = 0;
    std::vector<size_t> order;
    for (size_t t = 0; t < n; ++t) {
        plan::TensorDesc& d = p.tensors[t];
        if (d.buffer != plan::BufferKind::arena || alias_of[t] >= 0) continue;
        if (d.role == plan::TensorRole::input || d.role == plan::TensorRole::output) {
            d.offset = top;
            top = align(top + std::max<uint64_t>(d.bytes(), 1));
        } else {
            order.push_back(t);
        }
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return p.tensors[a].bytes() > p.tensors[b].bytes(); });
    struct Placed {
        uint64_t begin, end;
        int first, last;
    };
    std::vector<Placed> placed;
    const uint64_t pinned = top;
    uint64_t high = pinned;
    for (size_t t : order) {
        plan::TensorDesc& d = p.tensors[t];
        const uint64_t size = align(std::max<uint64_t>(d.bytes(), 1));
        if (first[t] == kNever) {  // never touched by a step
            first[t] = last[t] = 0;
        }
        std::vector<std::pair<uint64_t, uint64_t>> busy;
        for (const Placed& q : placed)
            if (q.first <= last[t] && first[t] <= q.last) busy.push_back({q.begin, q.end});
        std::sort(busy.begin(), busy.end());
        uint64_t at = pinned;
        for (const auto& [b, e] : busy) {
            if (at + size <= b) break;
            at = std::max(at, e);
        }
        d.offset = at;
        placed.push_back({at, at + size, first[t], last[t]});
        high = std::max(high, at + size);
    }
    for (size_t t = 0; t < n; ++t)
        if (alias_of[t] >= 0) {
            const plan::TensorDesc& b = p.tensors[static_cast<size_t>(base_of(static_cast<int32_t>(t)))];
            p.tensors[t].buffer = b.buffer;
            p.tensors[t].offset = b.offset;
        }
    p.arena_bytes = std::max<uint64_t>(high, plan::kAlignment);
}

}  // namespace stof::codegen
