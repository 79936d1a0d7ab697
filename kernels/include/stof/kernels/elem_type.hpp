// The 16-bit element types of the prebuilt kernels.
#pragma once

#include <cstdint>

namespace stof::kernels {

enum class ElemType : int32_t { f16 = 0, bf16 = 1 };

}  // namespace stof::kernels
