// fuse-rmsnorm: the exported spelling of RMS normalisation (LLaMA, T5) over the
// last axis becomes one RMSNorm node (axis -1):
//   y = x · 1/√(ReduceMean(x², -1) + eps)   (norm_pattern.hpp spellings; the
//                                            square may read Cast(x) instead of x)
//   out = [Cast](y) · scale                 (Cast to a float type, scale optional)
// Exporters wrap the statistics in fp32: when x = Cast(x0) widens exactly
// (or is the identity) and x0 has the output's type, the node reads x0 (RMSNorm
// computes its statistics in fp32 whatever the input type); the Cast goes when
// nothing else reads it. x: [..., len] float. Every intermediate value is read
// only inside the pattern; scale is a constant of len elements (or one);
// absent, ones.
#include "passes/norm_pattern.hpp"
#include "passes/passes.hpp"

#include <spdlog/spdlog.h>

namespace stof::passes {

namespace {

using ir::Op;

// Casting a `from` tensor to `to` keeps every value exactly.
bool exact_cast(DType from, DType to) {
    return is_float(from) && (to == from || to == DType::f64 || (to == DType::f32 && from != DType::f64));
}

bool match_at(Matcher& m, const ir::Node& r) {
    const std::optional<NormCore> core = match_norm_core(m, r);
    if (!core) return false;
    std::vector<const ir::Node*> drop = core->nodes;
    // The square reads x, or Cast(x) (T5: x.to(float32).pow(2)).
    const ir::ValueId x = core->n;
    const ir::Node* x_reader = core->square;
    if (core->s != x) {
        const ir::Node* c = m.producer(core->s, Op::Cast);
        if (!c || c->inputs[0] != x || !exact_cast(m.g.value(x).dtype, m.g.value(core->s).dtype) ||
            !m.used_only_by(core->s, {core->square}))
            return false;
        drop.push_back(c);
        x_reader = c;
    }
    const DType xt = m.g.value(x).dtype;
    const int64_t len = m.g.value(x).shape.back();

    // Output side: an optional Cast to a float type, then an optional scale.
    ir::ValueId y = core->y;
    const ir::Node* out_cast = m.sole_consumer(y, Op::Cast);
    if (out_cast && is_float(m.g.value(out_cast->outputs[0]).dtype)) y = out_cast->outputs[0];
    else out_cast = nullptr;
    NormAffine affine = match_norm_affine(m, y, len, m.g.value(y).dtype, false);

    // Input side: x, or x0 when x = Cast(x0) loses nothing and x0 has the output's type.
    ir::ValueId input = x;
    const ir::Node* in_cast = m.producer(x, Op::Cast);
    const DType out_t = m.g.value(affine.out).dtype;
    if (in_cast && m.g.value(in_cast->inputs[0]).dtype == out_t && exact_cast(out_t, xt)) {
        input = in_cast->inputs[0];
        if (m.used_only_by(x, {x_reader, core->scale})) drop.push_back(in_cast);
    }
    if (m.g.value(input).dtype != out_t) {  // the output Cast changes the type: keep it and what follows
        out_cast = nullptr;
        affine = NormAffine{core->y, std::nullopt, std::nullopt, {}};
        if (xt != m.g.value(core->y).dtype) return false;
    }
    if (out_cast) drop.push_back(out_cast);
    drop.insert(drop.end(), affine.nodes.begin(), affine.nodes.end());
    const ir::Node& last = !affine.nodes.empty() ? *affine.nodes.back() : out_cast ? *out_cast : *core->scale;
    const DType dt = m.g.value(input).dtype;

    Tensor ones(dt, {len});
    for (int64_t i = 0; i < len; ++i) ones.set_f64(i, 1.0);
    ir::Node rms;
    rms.op = Op::RMSNorm;
    rms.name = m.node_name(r, "RMSNorm");
    rms.inputs = {input, m.g.add_constant(affine.scale ? *affine.scale : ones, rms.name + ".scale")};
    rms.outputs = {affine.out};
    rms.attrs.set("axis", int64_t{-1});
    rms.attrs.set("epsilon", core->eps);
    std::vector<ir::Node> add;
    add.push_back(std::move(rms));
    return m.replace(drop, last, std::move(add));
}

}  // namespace

void fuse_rmsnorm(ir::Graph& g, const PassOptions&) {
    Matcher m(g);
    for (const ir::Node& n : g.nodes)
        if (n.op == Op::ReduceMean && !m.claimed(n)) match_at(m, n);
    const int fused = m.commit();
    if (fused) spdlog::debug("fuse-rmsnorm: {} RMSNorm", fused);
}

}  // namespace stof::passes
