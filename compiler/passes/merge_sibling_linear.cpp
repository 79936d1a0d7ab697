// merge-sibling-linear: linear layers that read the same input become one GEMM
// over their concatenated weights (Q, K and V projections; LLaMA's gate and up):
//   y_i = Add(MatMul(x, W_i), b_i)  for i = 1..n, n >= 2, in fuse-linear's form
//   →  s = Add(MatMul(x, concat(W_1..W_n)), concat(b_1..b_n));  y_1..y_n = Split(s, [N_1..N_n], axis -1)
// W_i constant [K, N_i], read only by its MatMul; a layer without a bias gets zeros
// when another one has one. The Split outputs are the old values, so every reader
// (attention reads Q/K/V in place from s, the SwiGLU kernel reads both halves)
// is unchanged.
#include "passes/match.hpp"
#include "passes/passes.hpp"

#include <spdlog/spdlog.h>

#include <cstring>
#include <map>

namespace stof::passes {

namespace {

using ir::Op;

struct Linear {
    const ir::Node* matmul = nullptr;
    const ir::Node* add = nullptr;   // the bias Add, or nullptr
    std::optional<Tensor> bias;      // [N] in the weight's dtype
    ir::ValueId out = ir::kNoValue;  // the layer's result: the Add's output or the MatMul's
};

std::optional<Linear> linear_at(const Matcher& m, const ir::Node& mm) {
    const ir::Value& w = m.g.value(mm.inputs[1]);
    const ir::Value& x = m.g.value(mm.inputs[0]);
    if (!w.data || w.shape.size() != 2 || !is_float(w.dtype) || w.dtype != x.dtype || x.shape.size() < 2) return std::nullopt;
    if (m.is_output(mm.inputs[1]) || m.consumers(mm.inputs[1]).size() != 1) return std::nullopt;
    Linear l;
    l.matmul = &mm;
    l.out = mm.outputs[0];
    if (const ir::Node* add = m.sole_consumer(mm.outputs[0], Op::Add)) {
        const ir::ValueId b = other_input(*add, mm.outputs[0]);
        if (m.g.value(add->outputs[0]).shape == m.g.value(mm.outputs[0]).shape && b != mm.outputs[0]) {
            l.bias = row_vector(m, b, w.shape[1], w.dtype);
            if (l.bias) {
                l.add = add;
                l.out = add->outputs[0];
            }
        }
    }
    return l;
}

// The columns of the weights side by side: [K, sum N_i].
Tensor concat_columns(const std::vector<const Tensor*>& parts) {
    const int64_t k = parts[0]->shape[0];
    int64_t n = 0;
    for (const Tensor* p : parts) n += p->shape[1];
    Tensor out(parts[0]->dtype, {k, n});
    const size_t es = dtype_size(out.dtype);
    for (int64_t r = 0; r < k; ++r) {
        size_t col = 0;
        for (const Tensor* p : parts) {
            const auto w = static_cast<size_t>(p->shape[1]);
            std::memcpy(out.bytes.data() + (static_cast<size_t>(r * n) + col) * es,
                        p->bytes.data() + static_cast<size_t>(r) * w * es, w * es);
            col += w;
        }
    }
    return out;
}

bool merge(Matcher& m, const std::vector<Linear>& group) {
    const ir::Node& first = *group[0].matmul;
    const ir::ValueId x = first.inputs[0];
    const DType dt = m.g.value(first.inputs[1]).dtype;
    std::vector<const Tensor*> weights;
    std::vector<const ir::Node*> drop;
    bool any_bias = false;
    int64_t total = 0;
    Tensor sizes(DType::i64, {static_cast<int64_t>(group.size())});
    for (size_t i = 0; i < group.size(); ++i) {
        const Linear& l = group[i];
        weights.push_back(m.g.value(l.matmul->inputs[1]).data.get());
        drop.push_back(l.matmul);
        if (l.add) drop.push_back(l.add);
        any_bias = any_bias || l.bias.has_value();
        const int64_t n = m.g.value(l.matmul->inputs[1]).shape[1];
        sizes.set_i64(static_cast<int64_t>(i), n);
        total += n;
    }
    Shape merged = m.g.value(first.outputs[0]).shape;
    merged.back() = total;

    std::vector<ir::Node> add;
    ir::Node mm;
    mm.op = Op::MatMul;
    mm.name = m.node_name(first, "MatMul_merged");
    mm.inputs = {x, m.g.add_constant(concat_columns(weights), mm.name + ".weight")};
    mm.outputs = {m.new_value(mm.name + "_output", dt, merged)};
    add.push_back(mm);
    ir::ValueId s = mm.outputs[0];
    if (any_bias) {
        Tensor bias(dt, {total});
        int64_t at = 0;
        for (const Linear& l : group) {
            const int64_t n = m.g.value(l.matmul->inputs[1]).shape[1];
            for (int64_t j = 0; j < n; ++j) bias.set_f64(at + j, l.bias ? l.bias->get_f64(j) : 0.0);
            at += n;
        }
        ir::Node b;
        b.op = Op::Add;
        b.name = m.node_name(first, "Add_merged");
        b.inputs = {s, m.g.add_constant(bias, b.name + ".bias")};
        b.outputs = {m.new_value(b.name + "_output", dt, merged)};
        s = b.outputs[0];
        add.push_back(b);
    }
    ir::Node split;
    split.op = Op::Split;
    split.name = m.node_name(first, "Split_merged");
    split.inputs = {s, m.g.add_constant(sizes, split.name + ".split")};
    split.attrs.set("axis", static_cast<int64_t>(-1));
    for (const Linear& l : group) split.outputs.push_back(l.out);
    add.push_back(split);
    return m.replace(drop, first, std::move(add));
}

}  // namespace

void merge_sibling_linear(ir::Graph& g, const PassOptions&) {
    Matcher m(g);
    // Linear layers by input, in node order.
    std::map<ir::ValueId, std::vector<Linear>> by_input;
    for (const ir::Node& n : g.nodes) {
        if (n.op != Op::MatMul) continue;
        if (std::optional<Linear> l = linear_at(m, n)) by_input[n.inputs[0]].push_back(*l);
    }
    for (const auto& [x, group] : by_input) {
        if (group.size() < 2) continue;
        if (merge(m, group))
            spdlog::debug("merge-sibling-linear: {} linear layers reading '{}' are one GEMM", group.size(), g.value(x).name);
    }
    m.commit();
}

}  // namespace stof::passes
