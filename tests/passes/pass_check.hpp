// Helpers for the rewrite-pass tests: a graph in the state the canonicalization
// passes see it, and a pass run checked for validity and equivalence.
#pragma once

#include "ir/graph.hpp"
#include "passes/passes.hpp"

#include <random>
#include <string>

namespace stof::test {

// A rank-0 f32 tensor holding v.
Tensor scalar_f32(float v);

// The first node of op `op` in g, or nullptr.
const ir::Node* find_op(const ir::Graph& g, ir::Op op);

// A serialized ONNX model imported and taken through bind-inputs,
// infer-shapes and fold-constants (every input must have fixed dimensions).
ir::Graph prepared(const std::string& onnx_bytes);

// Runs `pass` on a copy of g, verify()s the result and checks that the
// reference interpreter gives every output of g within rtol/atol on fresh
// random inputs. Returns the rewritten graph.
ir::Graph run_checked(const ir::Graph& g, void (*pass)(ir::Graph&, const PassOptions&), std::mt19937_64& rng,
                      double rtol = 1e-4, double atol = 1e-5);

}  // namespace stof::test
