// Pattern matching for the rewrite passes: producers and consumers of values,
// single-use checks, scalar constants, and batched node replacement.
//
// A pass scans the graph with a Matcher, schedules each match with replace()
// (a node claimed by one match cannot join another), then commit() applies all
// of them at once. Node indices and pointers stay valid until commit().
#pragma once

#include "ir/graph.hpp"

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace stof::passes {

class Matcher {
public:
    explicit Matcher(ir::Graph& g);

    ir::Graph& g;

    // Index of n in g.nodes (n must be one of them).
    int index(const ir::Node& n) const { return static_cast<int>(&n - g.nodes.data()); }
    // The node producing v, or nullptr (graph input, constant, absent value);
    // with `op`, nullptr also when the producer is another op.
    const ir::Node* producer(ir::ValueId v) const;
    const ir::Node* producer(ir::ValueId v, ir::Op op) const;
    // Every node reading v, once per read.
    const std::vector<int>& consumers(ir::ValueId v) const { return consumers_[static_cast<size_t>(v)]; }
    bool is_output(ir::ValueId v) const { return is_output_[static_cast<size_t>(v)] != 0; }
    // The one node reading v, when v is read once and is no graph output; with
    // `op`, only if that node is an `op` node.
    const ir::Node* sole_consumer(ir::ValueId v) const;
    const ir::Node* sole_consumer(ir::ValueId v, ir::Op op) const;
    // v is no graph output and every read of it is by one of `users`.
    bool used_only_by(ir::ValueId v, std::initializer_list<const ir::Node*> users) const;

    // A float constant whose elements are all equal: that value.
    std::optional<double> scalar(ir::ValueId v) const;
    // scalar(v) equals `want` within relative tolerance `rtol`.
    bool is_scalar(ir::ValueId v, double want, double rtol = 1e-4) const;

    // A node name no node uses yet: the anchor's scope ("/a/b/") + `op`, or
    // the anchor's name + "_" + `op` when it has no scope.
    std::string node_name(const ir::Node& anchor, const std::string& op);
    // `hint`, or hint_1, hint_2 ... when a node uses it.
    std::string unique_node_name(const std::string& hint);
    // A new value of the given type, named uniquely from `hint`.
    ir::ValueId new_value(const std::string& hint, DType dt, const Shape& shape);

    bool claimed(const ir::Node& n) const { return claimed_[static_cast<size_t>(index(n))] != 0; }
    // Schedules a rewrite: the nodes `drop` go, `add` (in order) takes the place
    // of `at`, which must be in `drop` and after every producer of the new
    // nodes' inputs. False (nothing scheduled) when a node in `drop` is claimed.
    bool replace(const std::vector<const ir::Node*>& drop, const ir::Node& at, std::vector<ir::Node> add);
    // Applies every scheduled rewrite; returns how many there were.
    int commit();

private:
    std::vector<int> producer_;
    std::vector<std::vector<int>> consumers_;
    std::vector<char> is_output_;
    std::vector<char> claimed_;
    std::unordered_set<std::string> node_names_;
    std::vector<std::vector<ir::Node>> insert_at_;  // per node index
    int rewrites_ = 0;
};

// Visits each of `from` and every value they are computed from, depth-first,
// each once; where visit(x) returns false, the walk goes no further back from x.
void walk_back(const Matcher& m, std::vector<ir::ValueId> from, const std::function<bool(ir::ValueId)>& visit);

// The input of binary node n that is not v (the first one if both are v);
// kNoValue when v is not an input of n.
ir::ValueId other_input(const ir::Node& n, ir::ValueId v);

// Constant c as an [n] tensor of dtype dt, when it broadcasts along the last
// axis only (shape [1,...,1,n] or all ones); nullopt otherwise.
std::optional<Tensor> row_vector(const Matcher& m, ir::ValueId c, int64_t n, DType dt);

}  // namespace stof::passes
