// ONNX model → IR graph.
//
// Accepts default-domain opsets 13–21. Initializers (inline or in external
// data files next to the model) and Constant nodes become IR constants; every
// other node maps through the table in onnx_ops.cpp. Failures name the op,
// domain, opset and node, or the file and what is wrong with it.
#pragma once

#include "ir/graph.hpp"

#include <string>

namespace stof {

constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 21;

ir::Graph import_onnx_file(const std::string& path);

// `bytes` is a serialized ModelProto; external data files are resolved
// relative to `base_dir` (empty: external data is rejected). `what` names the
// model in messages.
ir::Graph import_onnx_bytes(const std::string& bytes, const std::string& base_dir, const std::string& what);

}  // namespace stof
