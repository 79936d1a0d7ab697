#include "passes/norm_pattern.hpp"

namespace stof::passes {

using ir::Op;

bool is_last_axis_mean(const Matcher& m, const ir::Node& r) {
    if (r.op != Op::ReduceMean || r.inputs.size() < 2 || r.attrs.i("keepdims", 1) != 1) return false;
    const ir::Value& x = m.g.value(r.inputs[0]);
    const ir::Value& axes = m.g.value(r.inputs[1]);
    if (!is_float(x.dtype) || x.shape.empty() || !axes.data || axes.data->numel() != 1) return false;
    const int64_t a = axes.data->get_i64(0);
    return a == -1 || a == static_cast<int64_t>(x.shape.size()) - 1;
}

std::optional<NormCore> match_norm_core(const Matcher& m, const ir::Node& r) {
    if (!is_last_axis_mean(m, r)) return std::nullopt;
    NormCore c;
    const ir::Node* sq = m.producer(r.inputs[0]);
    if (!sq || m.sole_consumer(r.inputs[0]) != &r) return std::nullopt;
    if (sq->op == Op::Pow && m.is_scalar(sq->inputs[1], 2.0)) c.s = sq->inputs[0];
    else if (sq->op == Op::Mul && sq->inputs[0] == sq->inputs[1]) c.s = sq->inputs[0];
    else return std::nullopt;
    if (m.g.value(c.s).shape != m.g.value(r.inputs[0]).shape) return std::nullopt;
    c.square = sq;
    c.nodes = {sq, &r};

    const ir::ValueId var = r.outputs[0];
    const ir::Node* add = m.sole_consumer(var, Op::Add);
    const std::optional<double> eps = add ? m.scalar(other_input(*add, var)) : std::nullopt;
    if (!eps || *eps < 0 || m.g.value(add->outputs[0]).shape != m.g.value(var).shape) return std::nullopt;
    c.eps = *eps;
    c.nodes.push_back(add);

    const ir::ValueId v = add->outputs[0];
    const ir::Node* k = m.sole_consumer(v);
    if (!k) return std::nullopt;
    ir::ValueId inv = ir::kNoValue;
    if (k->op == Op::Pow && k->inputs[0] == v && m.is_scalar(k->inputs[1], -0.5)) {
        inv = k->outputs[0];
        c.nodes.push_back(k);
    } else if (k->op == Op::Sqrt) {
        c.nodes.push_back(k);
        const ir::ValueId sd = k->outputs[0];
        const ir::Node* d = m.sole_consumer(sd);
        if (!d) return std::nullopt;
        if (d->op == Op::Reciprocal || (d->op == Op::Div && d->inputs[1] == sd && m.is_scalar(d->inputs[0], 1.0))) {
            inv = d->outputs[0];
            c.nodes.push_back(d);
        } else if (d->op == Op::Div && d->inputs[1] == sd && d->inputs[0] != sd) {
            c.n = d->inputs[0];
            c.y = d->outputs[0];
            c.scale = d;
        } else {
            return std::nullopt;
        }
    } else {
        return std::nullopt;
    }
    if (inv != ir::kNoValue) {
        const ir::Node* mul = m.sole_consumer(inv, Op::Mul);
        if (!mul || mul->inputs[0] == mul->inputs[1]) return std::nullopt;
        c.n = other_input(*mul, inv);
        c.y = mul->outputs[0];
        c.scale = mul;
    }
    c.nodes.push_back(c.scale);
    if (m.g.value(c.y).shape != m.g.value(c.n).shape) return std::nullopt;
    return c;
}

NormAffine match_norm_affine(const Matcher& m, ir::ValueId y, int64_t len, DType dt, bool with_bias) {
    NormAffine a;
    a.out = y;
    const Shape& shape = m.g.value(y).shape;
    auto step = [&](Op op, std::optional<Tensor>& param) {
        const ir::Node* n = m.sole_consumer(a.out, op);
        if (!n || m.g.value(n->outputs[0]).shape != shape) return;
        param = row_vector(m, other_input(*n, a.out), len, dt);
        if (!param) return;
        a.nodes.push_back(n);
        a.out = n->outputs[0];
    };
    step(Op::Mul, a.scale);
    if (with_bias) step(Op::Add, a.bias);
    return a;
}

}  // namespace stof::passes
