#include "passes/attention_operands.hpp"

#include "ops/attention_layout.hpp"

#include <algorithm>

namespace stof::passes {

std::optional<OperandSource> match_heads_view(const ir::StridedView& v, const std::array<int, 4>& order,
                                              const ir::Value& source, int64_t B, int64_t H, int64_t S, int64_t D,
                                              int64_t need_heads) {
    const auto& db = v.dims[static_cast<size_t>(order[0])];
    const auto& dh = v.dims[static_cast<size_t>(order[1])];
    const auto& ds = v.dims[static_cast<size_t>(order[2])];
    const auto& dd = v.dims[static_cast<size_t>(order[3])];
    // The stride of a dim that is one sub-dim of `size`; -1 for a size-1 dim (any stride).
    auto single = [](const std::vector<ir::StridedDim>& d, int64_t size) -> std::optional<int64_t> {
        if (size == 1) return d.empty() ? std::optional<int64_t>(-1) : std::nullopt;
        if (d.size() == 1 && d[0].size == size) return d[0].stride;
        return std::nullopt;
    };
    const auto sb = single(db, B), ss = single(ds, S), sd = single(dd, D);
    if (!sb || !ss || !sd || (D > 1 && *sd != 1)) return std::nullopt;
    int64_t hk = H;
    std::optional<int64_t> sh = single(dh, H);
    if (!sh && dh.size() == 2 && dh[1].stride == 0 && dh[0].size * dh[1].size == H) {
        hk = dh[0].size;
        sh = dh[0].stride;
    } else if (!sh && dh.size() == 1 && dh[0].stride == 0 && dh[0].size == H) {
        hk = 1;
        sh = -1;
    }
    if (!sh || (need_heads && hk != need_heads)) return std::nullopt;
    const int64_t n = numel(source.shape);
    if (B * S * D == 0 || n % (B * S * D) != 0) return std::nullopt;  // an empty operand is materialised
    const int64_t ht = n / (B * S * D);
    for (char layout : {'h', 's'}) {
        const ir::AttentionStrides c = ir::attention_strides({B, ht, S, D}, layout);
        auto fits = [](std::optional<int64_t> got, int64_t want) { return *got == -1 || *got == want; };
        if (!fits(sb, c.b) || !(hk == 1 || fits(sh, c.h)) || !fits(ss, c.s) || v.offset % c.h != 0) continue;
        const int64_t first = v.offset / c.h;
        if (first + hk <= ht) return OperandSource{ir::kNoValue, layout, hk, ht, first};
    }
    return std::nullopt;
}

std::optional<OperandSource> trace_operand(const Matcher& m, ir::ValueId x, const std::array<int, 4>& order, int64_t B,
                                           int64_t H, int64_t S, int64_t D, int64_t need_heads) {
    // chain[k + 1] is the data input of steps[k]'s node; steps[k] continues with its output `output`.
    struct Step {
        const ir::Node* n;
        size_t output;
    };
    std::vector<ir::ValueId> chain{x};
    std::vector<Step> steps;
    for (const ir::Node* p = m.producer(x); p && ir::is_layout_op(p->op) && chain.size() < 16; p = m.producer(chain.back())) {
        bool constant_args = true;
        for (size_t k = 1; k < p->inputs.size(); ++k)
            constant_args = constant_args && (p->inputs[k] == ir::kNoValue || m.g.value(p->inputs[k]).data);
        if (!constant_args || m.g.value(p->inputs[0]).data) break;
        const size_t output = static_cast<size_t>(std::find(p->outputs.begin(), p->outputs.end(), chain.back()) -
                                                  p->outputs.begin());
        steps.push_back({p, output});
        chain.push_back(p->inputs[0]);
    }
    for (size_t far = chain.size(); far-- > 0;) {
        std::optional<ir::StridedView> v = ir::contiguous_view(m.g.value(chain[far]).shape);
        for (size_t k = far; k-- > 0 && v;) v = ir::apply_layout(m.g, *steps[k].n, steps[k].output, *v);
        if (!v || v->dims.size() != 4) continue;
        if (auto r = match_heads_view(*v, order, m.g.value(chain[far]), B, H, S, D, need_heads)) {
            r->source = chain[far];
            return r;
        }
    }
    return std::nullopt;
}

}  // namespace stof::passes
