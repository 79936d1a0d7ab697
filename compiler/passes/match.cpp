#include "passes/match.hpp"

#include "stof/error.hpp"

#include <cmath>

namespace stof::passes {

Matcher::Matcher(ir::Graph& graph)
    : g(graph),
      producer_(graph.producers()),
      consumers_(graph.values.size()),
      is_output_(graph.values.size(), 0),
      claimed_(graph.nodes.size(), 0),
      insert_at_(graph.nodes.size()) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        node_names_.insert(g.nodes[i].name);
        for (ir::ValueId v : g.nodes[i].inputs)
            if (v != ir::kNoValue) consumers_[static_cast<size_t>(v)].push_back(static_cast<int>(i));
    }
    for (ir::ValueId o : g.outputs) is_output_[static_cast<size_t>(o)] = 1;
}

const ir::Node* Matcher::producer(ir::ValueId v) const {
    if (v == ir::kNoValue || static_cast<size_t>(v) >= producer_.size()) return nullptr;
    const int p = producer_[static_cast<size_t>(v)];
    return p < 0 ? nullptr : &g.nodes[static_cast<size_t>(p)];
}

const ir::Node* Matcher::producer(ir::ValueId v, ir::Op op) const {
    const ir::Node* n = producer(v);
    return n && n->op == op ? n : nullptr;
}

const ir::Node* Matcher::sole_consumer(ir::ValueId v) const {
    if (is_output(v)) return nullptr;
    const std::vector<int>& c = consumers(v);
    return c.size() == 1 ? &g.nodes[static_cast<size_t>(c[0])] : nullptr;
}

const ir::Node* Matcher::sole_consumer(ir::ValueId v, ir::Op op) const {
    const ir::Node* n = sole_consumer(v);
    return n && n->op == op ? n : nullptr;
}

bool Matcher::used_only_by(ir::ValueId v, std::initializer_list<const ir::Node*> users) const {
    if (is_output(v)) return false;
    for (int c : consumers(v)) {
        bool listed = false;
        for (const ir::Node* u : users) listed = listed || (u && index(*u) == c);
        if (!listed) return false;
    }
    return true;
}

std::optional<double> Matcher::scalar(ir::ValueId v) const {
    if (v == ir::kNoValue) return std::nullopt;
    const ir::Value& val = g.value(v);
    if (!val.data || !is_float(val.dtype) || val.data->numel() == 0) return std::nullopt;
    const double x = val.data->get_f64(0);
    for (int64_t i = 1; i < val.data->numel(); ++i)
        if (val.data->get_f64(i) != x) return std::nullopt;
    return x;
}

bool Matcher::is_scalar(ir::ValueId v, double want, double rtol) const {
    const std::optional<double> x = scalar(v);
    return x && std::abs(*x - want) <= rtol * std::abs(want);
}

std::string Matcher::node_name(const ir::Node& anchor, const std::string& op) {
    const size_t slash = anchor.name.rfind('/');
    return unique_node_name(slash == std::string::npos ? anchor.name + "_" + op : anchor.name.substr(0, slash + 1) + op);
}

std::string Matcher::unique_node_name(const std::string& hint) {
    std::string name = hint;
    for (int k = 1; node_names_.count(name); ++k) name = hint + "_" + std::to_string(k);
    node_names_.insert(name);
    return name;
}

ir::ValueId Matcher::new_value(const std::string& hint, DType dt, const Shape& shape) {
    ir::Value v;
    v.name = g.unique_name(hint);
    v.dtype = dt;
    v.shape = shape;
    v.shape_known = true;
    return g.add_value(std::move(v));
}

bool Matcher::replace(const std::vector<const ir::Node*>& drop, const ir::Node& at, std::vector<ir::Node> add) {
    bool has_at = false;
    for (const ir::Node* n : drop) {
        if (claimed(*n)) return false;
        has_at = has_at || n == &at;
    }
    STOF_CHECK(has_at, "internal: {} is replaced but not dropped", at.label());
    for (const ir::Node* n : drop) claimed_[static_cast<size_t>(index(*n))] = 1;
    insert_at_[static_cast<size_t>(index(at))] = std::move(add);
    ++rewrites_;
    return true;
}

int Matcher::commit() {
    std::vector<ir::Node> nodes;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        for (ir::Node& n : insert_at_[i]) nodes.push_back(std::move(n));
        if (!claimed_[i]) nodes.push_back(std::move(g.nodes[i]));
    }
    g.nodes = std::move(nodes);
    const int n = rewrites_;
    producer_ = g.producers();
    consumers_.assign(g.values.size(), {});
    for (size_t i = 0; i < g.nodes.size(); ++i)
        for (ir::ValueId v : g.nodes[i].inputs)
            if (v != ir::kNoValue) consumers_[static_cast<size_t>(v)].push_back(static_cast<int>(i));
    is_output_.assign(g.values.size(), 0);
    for (ir::ValueId o : g.outputs) is_output_[static_cast<size_t>(o)] = 1;
    claimed_.assign(g.nodes.size(), 0);
    insert_at_.assign(g.nodes.size(), {});
    rewrites_ = 0;
    return n;
}

void walk_back(const Matcher& m, std::vector<ir::ValueId> from, const std::function<bool(ir::ValueId)>& visit) {
    std::vector<char> seen(m.g.values.size(), 0);
    while (!from.empty()) {
        const ir::ValueId x = from.back();
        from.pop_back();
        if (x == ir::kNoValue || seen[static_cast<size_t>(x)]) continue;
        seen[static_cast<size_t>(x)] = 1;
        if (!visit(x)) continue;
        if (const ir::Node* p = m.producer(x)) from.insert(from.end(), p->inputs.begin(), p->inputs.end());
    }
}

ir::ValueId other_input(const ir::Node& n, ir::ValueId v) {
    if (n.inputs.size() != 2) return ir::kNoValue;
    if (n.inputs[0] == v) return n.inputs[1];
    if (n.inputs[1] == v) return n.inputs[0];
    return ir::kNoValue;
}

std::optional<Tensor> row_vector(const Matcher& m, ir::ValueId c, int64_t n, DType dt) {
    const ir::Value& v = m.g.value(c);
    if (!v.data || !is_float(v.dtype)) return std::nullopt;
    for (size_t d = 0; d + 1 < v.shape.size(); ++d)
        if (v.shape[d] != 1) return std::nullopt;
    const int64_t len = v.shape.empty() ? 1 : v.shape.back();
    if (len != 1 && len != n) return std::nullopt;
    Tensor t(dt, {n});
    for (int64_t i = 0; i < n; ++i) t.set_f64(i, v.data->get_f64(len == 1 ? 0 : i));
    return t;
}

}  // namespace stof::passes
