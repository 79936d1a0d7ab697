// fuse-gelu: the exported spellings of GELU become one Gelu node.
//   erf   0.5 · x · (1 + Erf(x / √2))               → Gelu(x), approximate "none"
//         (x / 1.41421 or x · 0.70711)
//   tanh  0.5 · x · (1 + Tanh(√(2/π) · (x + 0.044715 · x³)))  → approximate "tanh"
//         (x³ as Pow(x, 3), x·x·x or (x·x)·x)
// The product of 0.5, x and (1 + ...) may be associated either way, every Mul
// and Add takes its operands in either order, and constants match within a
// relative 1e-4. Every intermediate value is read only inside the pattern.
#include "passes/match.hpp"
#include "passes/passes.hpp"

#include <spdlog/spdlog.h>

#include <cmath>

namespace stof::passes {

namespace {

using ir::Op;

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;

// v = Mul(operand, c) or Mul(c, operand) with c ≈ want, v read only by `user`: the operand.
ir::ValueId scaled_by(const Matcher& m, ir::ValueId v, const ir::Node* user, double want, std::vector<const ir::Node*>& nodes) {
    const ir::Node* n = m.producer(v, Op::Mul);
    if (!n || !m.used_only_by(v, {user})) return ir::kNoValue;
    for (int side = 0; side < 2; ++side)
        if (m.is_scalar(n->inputs[static_cast<size_t>(1 - side)], want)) {
            nodes.push_back(n);
            return n->inputs[static_cast<size_t>(side)];
        }
    return ir::kNoValue;
}

// Erf's argument x/√2 or x·(1/√2): x.
ir::ValueId erf_input(const Matcher& m, const ir::Node& erf, std::vector<const ir::Node*>& nodes) {
    const ir::ValueId t = erf.inputs[0];
    const ir::Node* d = m.producer(t, Op::Div);
    if (d && m.used_only_by(t, {&erf}) && m.is_scalar(d->inputs[1], kSqrt2)) {
        nodes.push_back(d);
        return d->inputs[0];
    }
    return scaled_by(m, t, &erf, 1.0 / kSqrt2, nodes);
}

// Tanh's argument √(2/π)·(x + 0.044715·x³): x.
ir::ValueId tanh_input(const Matcher& m, const ir::Node& tanh, std::vector<const ir::Node*>& nodes) {
    const ir::ValueId s = scaled_by(m, tanh.inputs[0], &tanh, kSqrt2OverPi, nodes);
    const ir::Node* add = m.producer(s, Op::Add);
    if (!add || !m.used_only_by(s, {nodes.back()})) return ir::kNoValue;
    nodes.push_back(add);
    for (int side = 0; side < 2; ++side) {
        const ir::ValueId x = add->inputs[static_cast<size_t>(side)];
        std::vector<const ir::Node*> cubic;
        const ir::ValueId cube = scaled_by(m, add->inputs[static_cast<size_t>(1 - side)], add, kCubic, cubic);
        const ir::Node* c = m.producer(cube);
        if (!c || !m.used_only_by(cube, {cubic.empty() ? nullptr : cubic.back()})) continue;
        if (c->op == Op::Pow && c->inputs[0] == x && m.is_scalar(c->inputs[1], 3.0)) {
            cubic.push_back(c);
        } else if (c->op == Op::Mul && (c->inputs[0] == x || c->inputs[1] == x)) {
            // x·(x·x) or (x·x)·x
            const ir::ValueId xx = other_input(*c, x);
            const ir::Node* sq = m.producer(xx, Op::Mul);
            if (!sq || sq->inputs[0] != x || sq->inputs[1] != x || !m.used_only_by(xx, {c})) continue;
            cubic.push_back(c);
            cubic.push_back(sq);
        } else {
            continue;
        }
        nodes.insert(nodes.end(), cubic.begin(), cubic.end());
        return x;
    }
    return ir::kNoValue;
}

bool match_at(Matcher& m, const ir::Node& f) {
    std::vector<const ir::Node*> nodes{&f};
    const bool erf = f.op == Op::Erf;
    const ir::ValueId x = erf ? erf_input(m, f, nodes) : tanh_input(m, f, nodes);
    if (x == ir::kNoValue || !is_float(m.g.value(x).dtype)) return false;
    // a = 1 + f(...)
    const ir::Node* one = m.sole_consumer(f.outputs[0], Op::Add);
    if (!one || !m.is_scalar(other_input(*one, f.outputs[0]), 1.0)) return false;
    nodes.push_back(one);
    const ir::ValueId a = one->outputs[0];
    // out = 0.5 · x · a, associated either way.
    const ir::Node* c = m.sole_consumer(a, Op::Mul);
    if (!c || c->inputs[0] == c->inputs[1]) return false;
    nodes.push_back(c);
    const ir::ValueId o = other_input(*c, a);
    const ir::Node* last = c;
    if (m.is_scalar(o, 0.5) || o == x) {  // (a·0.5)·x or (a·x)·0.5
        const ir::Node* outer = m.sole_consumer(c->outputs[0], Op::Mul);
        if (!outer) return false;
        const ir::ValueId rest = other_input(*outer, c->outputs[0]);
        if (!(o == x ? m.is_scalar(rest, 0.5) : rest == x)) return false;
        nodes.push_back(outer);
        last = outer;
    } else if (scaled_by(m, o, c, 0.5, nodes) != x) {  // (x·0.5)·a
        return false;
    }
    const ir::Value& out = m.g.value(last->outputs[0]);
    if (out.shape != m.g.value(x).shape || out.dtype != m.g.value(x).dtype) return false;

    ir::Node gelu;
    gelu.op = Op::Gelu;
    gelu.name = m.node_name(f, "Gelu");
    gelu.inputs = {x};
    gelu.outputs = {last->outputs[0]};
    gelu.attrs.set("approximate", std::string(erf ? "none" : "tanh"));
    std::vector<ir::Node> add;
    add.push_back(std::move(gelu));
    return m.replace(nodes, *last, std::move(add));
}

}  // namespace

void fuse_gelu(ir::Graph& g, const PassOptions&) {
    Matcher m(g);
    for (const ir::Node& n : g.nodes)
        if ((n.op == Op::Erf || n.op == Op::Tanh) && !m.claimed(n)) match_at(m, n);
    const int fused = m.commit();
    if (fused) spdlog::debug("fuse-gelu: {} Gelu", fused);
}

}  // namespace stof::passes
