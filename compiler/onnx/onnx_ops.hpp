// The importer's table: ONNX op type (default domain) and opset range → IR op,
// plus an optional fix-up that rewrites an older spelling into the IR's form.
#pragma once

#include "ir/graph.hpp"

#include <string_view>

namespace stof {

struct ImportContext {
    ir::Graph& graph;
    int64_t opset;
};

// Adjusts a node built generically (same inputs, outputs and attributes as
// the ONNX node) into the IR form.
using ImportFixup = void (*)(ImportContext&, ir::Node&);

struct OnnxOp {
    std::string_view type;
    int64_t min_opset, max_opset;
    ir::Op op;
    ImportFixup fixup;            // nullptr: imported as is
    std::string_view attrs = "";  // the ONNX attributes it takes, space-separated
};

// Whether `name` is one of op's attributes.
bool accepts_attribute(const OnnxOp& op, std::string_view name);

// The entry for (type, opset), or nullptr.
const OnnxOp* find_onnx_op(std::string_view type, int64_t opset);
// Comma-separated op types the importer knows, for error messages.
std::string known_onnx_ops();

}  // namespace stof
