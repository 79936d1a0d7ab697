// The IR graph: nodes over values, static shapes, compile-time constants.
//
// Values are addressed by ValueId (index into Graph::values). A value is a
// graph input, a constant (data != nullptr and no producer), or the output of
// exactly one node; a node output whose contents are known at compile time
// also carries data until fold-constants replaces the node by a constant.
// Graph::nodes is kept in topological order by every pass.
#pragma once

#include "ir/attrs.hpp"
#include "ir/op.hpp"
#include "stof/tensor.hpp"

#include <memory>
#include <string>
#include <vector>

namespace stof::ir {

using ValueId = int32_t;
constexpr ValueId kNoValue = -1;  // an absent optional input

struct Value {
    std::string name;
    DType dtype = DType::undefined;
    Shape shape;                         // -1 marks a dimension not yet bound
    std::vector<std::string> dim_names;  // symbolic dims of graph inputs ("batch"), "" when fixed
    std::shared_ptr<const Tensor> data;  // contents when known at compile time
    bool shape_known = false;
};

struct Node {
    Op op;
    std::string name;             // from the model, or generated; unique in a graph
    std::vector<ValueId> inputs;  // kNoValue for absent optional inputs
    std::vector<ValueId> outputs;
    Attrs attrs;

    // "MatMul node 'name'", for error messages.
    std::string label() const;
};

struct Graph {
    std::string name;
    int64_t opset = 0;
    std::vector<Value> values;
    std::vector<Node> nodes;  // topological order
    std::vector<ValueId> inputs;
    std::vector<ValueId> outputs;

    ValueId add_value(Value v);
    // A constant value holding t, named uniquely from `hint`.
    ValueId add_constant(Tensor t, const std::string& hint);
    // A fresh value name that no value uses yet, built from `hint`.
    std::string unique_name(const std::string& hint);

    Value& value(ValueId id) { return values.at(static_cast<size_t>(id)); }
    const Value& value(ValueId id) const { return values.at(static_cast<size_t>(id)); }
    ValueId find_value(const std::string& name) const;  // kNoValue if none

    // For each value, the index of the node producing it, or -1.
    std::vector<int> producers() const;
    // For each value, how many node inputs and graph outputs read it.
    std::vector<int> use_counts() const;

    // Structural invariants: ids in range, one producer per value, inputs
    // defined before use, arities within the op table, unique node and value
    // names, and (when shapes were inferred) every node output typed.
    // Throws stof::Error describing the first violation.
    void verify() const;
};

// Stable text form: one line per input, constant, node and output.
std::string to_text(const Graph& g);
// "3 MatMul, 2 Add, ..." sorted by op name.
std::string op_histogram(const Graph& g);
int count_ops(const Graph& g, Op op);

}  // namespace stof::ir
