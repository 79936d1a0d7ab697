// ONNX TensorProto and element types → stof tensors.
#pragma once

#include "onnx.pb.h"
#include "stof/tensor.hpp"

#include <string>

namespace stof {

// The stof dtype for an ONNX TensorProto.DataType, or a stof::Error naming
// `what` when stofc does not support it.
DType dtype_from_onnx(int32_t onnx_type, const std::string& what);

// Tensor contents from raw_data, the typed repeated fields, or an external
// data file under base_dir (paths must stay inside base_dir).
Tensor tensor_from_onnx(const onnx::TensorProto& t, const std::string& base_dir);

}  // namespace stof
