// fuse-layernorm: the exported spelling of layer normalisation over the last
// axis becomes one LayerNormalization node (axis -1):
//   μ = ReduceMean(x, -1);  d = x − μ  (one Sub, or two equal ones)
//   y = d · 1/√(ReduceMean(d², -1) + eps)   (norm_pattern.hpp spellings)
//   out = y · scale + bias                  (each optional; ones / zeros if absent)
// x: [..., len] float. Every intermediate value is read only inside the
// pattern; scale and bias are constants of len elements (or one).
#include "passes/norm_pattern.hpp"
#include "passes/passes.hpp"

#include <spdlog/spdlog.h>

namespace stof::passes {

namespace {

using ir::Op;

bool match_at(Matcher& m, const ir::Node& mu) {
    if (!is_last_axis_mean(m, mu) || m.is_output(mu.outputs[0])) return false;
    const ir::ValueId x = mu.inputs[0], mean = mu.outputs[0];
    // μ is read only by Sub(x, μ) nodes (exporters may emit x − μ twice).
    std::vector<const ir::Node*> subs;
    for (int c : m.consumers(mean)) {
        const ir::Node& s = m.g.nodes[static_cast<size_t>(c)];
        if (s.op != Op::Sub || s.inputs[0] != x || s.inputs[1] != mean || subs.size() == 2) return false;
        subs.push_back(&s);
    }
    // The variance: ReduceMean of the square of one of them.
    std::optional<NormCore> core;
    for (const ir::Node* s : subs)
        for (int c : m.consumers(s->outputs[0])) {
            const ir::Node& sq = m.g.nodes[static_cast<size_t>(c)];
            const ir::Node* r = (sq.op == Op::Pow || sq.op == Op::Mul) ? m.sole_consumer(sq.outputs[0], Op::ReduceMean)
                                                                       : nullptr;
            std::optional<NormCore> found = r && !core ? match_norm_core(m, *r) : std::nullopt;
            if (found && found->s == s->outputs[0]) core = found;
        }
    if (!core) return false;
    bool n_is_d = false;
    for (const ir::Node* s : subs) {
        n_is_d = n_is_d || core->n == s->outputs[0];
        if (!m.used_only_by(s->outputs[0], {core->square, core->scale})) return false;
    }
    if (!n_is_d) return false;

    const ir::Value& xv = m.g.value(x);
    const DType dt = xv.dtype;
    const Shape shape = xv.shape;
    const int64_t len = shape.back();
    NormAffine affine = match_norm_affine(m, core->y, len, dt, true);
    if (m.g.value(affine.out).shape != shape || m.g.value(affine.out).dtype != dt) return false;

    std::vector<const ir::Node*> drop{&mu};
    drop.insert(drop.end(), subs.begin(), subs.end());
    drop.insert(drop.end(), core->nodes.begin(), core->nodes.end());
    drop.insert(drop.end(), affine.nodes.begin(), affine.nodes.end());
    const ir::Node& last = affine.nodes.empty() ? *core->scale : *affine.nodes.back();

    Tensor ones(dt, {len}), zeros(dt, {len});
    for (int64_t i = 0; i < len; ++i) ones.set_f64(i, 1.0);
    ir::Node ln;
    ln.op = Op::LayerNormalization;
    ln.name = m.node_name(mu, "LayerNormalization");
    ln.inputs = {x, m.g.add_constant(affine.scale ? *affine.scale : ones, ln.name + ".scale"),
                 m.g.add_constant(affine.bias ? *affine.bias : zeros, ln.name + ".bias")};
    ln.outputs = {affine.out};
    ln.attrs.set("axis", int64_t{-1});
    ln.attrs.set("epsilon", core->eps);
    std::vector<ir::Node> add;
    add.push_back(std::move(ln));
    return m.replace(drop, last, std::move(add));
}

}  // namespace

void fuse_layernorm(ir::Graph& g, const PassOptions&) {
    Matcher m(g);
    for (const ir::Node& n : g.nodes)
        if (n.op == Op::ReduceMean && !m.claimed(n)) match_at(m, n);
    const int fused = m.commit();
    if (fused) spdlog::debug("fuse-layernorm: {} LayerNormalization", fused);
}

}  // namespace stof::passes
