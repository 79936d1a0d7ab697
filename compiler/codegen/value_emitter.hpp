// Expressions for IR values inside a generated kernel.
#pragma once

#include "codegen/kernel_source.hpp"
#include "codegen/lower_state.hpp"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace stof::codegen {

// Computes IR values at symbolic coordinates: producers of values marked
// inlined in the LowerState are expanded in place (elementwise and layout ops
// as index maps); stored values load from their plan tensors; scalar
// constants become literals; other constants load from the weights buffer.
// Common subexpressions at the same coordinates become locals (lines added to
// the KernelBuilder), except inside conditional branches, whose coordinates
// may be out of range when not taken.
class ValueEmitter {
public:
    ValueEmitter(LowerState& st, KernelBuilder& kb, std::string indent) : st_(st), kb_(kb), indent_(std::move(indent)) {}

    // Vector mode: the caller computes V consecutive elements in an unrolled loop
    // `for (int kVecStep = 0; kVecStep < V; ++kVecStep)` in which the coordinate
    // kLane is `base + kVecStep`. A float load whose index moves with kLane by one
    // (codegen/lane_slope.hpp) is then one vector load of V elements placed before
    // that loop (take_preloads()); integer subexpressions are not hoisted into
    // locals, so those loads depend only on coordinates defined before the loop.
    // `base` is a multiple of V. Inside a branch every lane of the vector takes alike
    // (a Concat along the lane's axis at multiples of V), such a load is a vector load
    // guarded by that branch's condition at the base.
    static constexpr const char* kLane = "lane_";
    static constexpr const char* kVecStep = "k_";
    void set_vector(int v, std::string base) {
        vec_ = v;
        lane_base_ = std::move(base);
    }
    // The vector loads' declarations, in order; empties the list.
    std::vector<std::string> take_preloads() { return std::move(preloads_); }

    // v at `coords` (one C++ index expression per dimension of v).
    Expr at(ir::ValueId v, const std::vector<std::string>& coords);
    // v computed by its producer at `coords` even when v is stored (the
    // value a kernel writes).
    Expr compute(ir::ValueId v, const std::vector<std::string>& coords);

    // A loaded element: tensor param `param` of shape `shape` at coords.
    static std::string linear_index(const Shape& shape, const std::vector<std::string>& coords);

private:
    Expr load(ir::ValueId v, const std::vector<std::string>& coords);
    Expr node_value(const ir::Node& n, size_t out, const std::vector<std::string>& coords);
    Expr input_at(const ir::Node& n, size_t k, const std::vector<std::string>& coords_of_out, const Shape& out_shape);
    Expr hoist(const Expr& e);                                // a local when unconditional, else the parenthesised expression
    std::string at_lane_base(const std::string& expr) const;  // expr with kLane replaced by the lane's base

    LowerState& st_;
    KernelBuilder& kb_;
    std::string indent_;
    std::map<std::string, Expr> memo_;
    int conditional_ = 0;
    int vec_ = 1;
    std::string lane_base_;
    // Conditions, at the lane's base, of the enclosing branches that every lane takes
    // alike (each also counted in conditional_).
    std::vector<std::string> guards_;
    std::vector<std::string> preloads_;
    std::map<std::string, std::string> vector_loads_;  // "guard|param[index]" → the array holding it
};

// Appends to kb the vector loads and an unrolled loop over V lanes (the lane
// coordinate ValueEmitter::kLane = `lane_base` + lane, of type `index_type`)
// that fills `float <name>[V]` with each expression `compute` returns for each
// (name, compute) of `outputs`; em must be in vector mode with that V and base.
void emit_vector_loop(KernelBuilder& kb, ValueEmitter& em, int v, const std::string& lane_base, const std::string& index_type,
                      const std::string& indent, const std::vector<std::pair<std::string, std::function<Expr()>>>& outputs);

// The C++ coordinate expressions of linear index `i` over `shape` (size-1 dims are "0").
std::vector<std::string> delinearize(const std::string& i, const Shape& shape);

// Coordinates of an input of shape `in` broadcast to `out` at out-coordinates `c`.
std::vector<std::string> broadcast_coords(const Shape& in, const Shape& out, const std::vector<std::string>& c);

Expr as_float(const Expr& e);
Expr as_int(const Expr& e);
Expr as_bool(const Expr& e);

}  // namespace stof::codegen
